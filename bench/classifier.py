"""Benchmark the pane classifier against the work around it.

    uv run python bench/classifier.py [--events 5000] [--readings 2000]

* reports: one OSC 7501 report per `%output` chunk, as the collector feeds them. The
  *baseline* is the decoder alone on the same chunks; the classifier row is decoder +
  `PaneClassifier.feed` + `classification`. Run with 1, 16 and 256 (the cap) distinct
  record ids, since arbitration looks at every record.
* screen: one `set_screen` + `classification` per capture, bundled manifests, on a
  64-row Claude Code screen. The *baseline* is one precompiled `re.search` over the
  same text (the cheapest rule there could be).

Prints one table; every measurement is bounded by --events / --readings.
"""

from __future__ import annotations

import argparse
import re
import time
from pathlib import Path

from paneboard_protocol.classifier import PaneClassifier
from paneboard_protocol.decoder import Decoder
from paneboard_protocol.rules import load_rules

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "protocol" / "fixtures" / "screens" / "claude-own__interrupt_line_working.txt"
RULES = load_rules(ROOT / "bench" / "no-user-rules")


def chunks(n: int, ids: int) -> list[bytes]:
    states = ("working", "blocked", "idle", "done")
    out = []
    for i in range(n):
        rid = "" if ids == 1 else f":id=task_{i % ids}"
        out.append(f"\x1b]7501;state={states[i % 4]}:app=claude-code{rid}\x07".encode())
    return out


def bench_reports(n: int, ids: int) -> tuple[float, float]:
    data = chunks(n, ids)
    d = Decoder()
    t = time.perf_counter()
    for chunk in data:
        d.feed(chunk)
    base = time.perf_counter() - t

    d = Decoder(rejections=True)
    c = PaneClassifier(RULES)
    c.set_process(0.0, "claude", 1)
    t = time.perf_counter()
    for i, chunk in enumerate(data):
        now = i * 0.01
        c.feed(now, d.feed(chunk))
        c.classification(now)
    full = time.perf_counter() - t
    return n / base, n / full


def bench_screen(n: int) -> tuple[float, float]:
    lines = FIXTURE.read_text(encoding="utf-8").splitlines()
    screen = "\n".join((["filler output line " + str(i) for i in range(64)] + lines)[-64:])
    other = screen.replace("esc to interrupt", "")
    pattern = re.compile(r"esc to interrupt")
    t = time.perf_counter()
    for i in range(n):
        pattern.search(screen if i % 2 else other)
    base = time.perf_counter() - t

    c = PaneClassifier(RULES)
    c.set_process(0.0, "claude", 1)
    t = time.perf_counter()
    for i in range(n):
        now = i * 1.0
        c.set_screen(now, screen if i % 2 else other)
        c.classification(now)
    full = time.perf_counter() - t
    return base / n * 1e6, full / n * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=5000)
    ap.add_argument("--readings", type=int, default=2000)
    args = ap.parse_args()
    print(f"{'workload':<34}{'baseline':>22}{'classifier':>22}{'ratio':>8}")
    for ids in (1, 16, 256):
        base, full = bench_reports(args.events, ids)
        print(
            f"{'reports, ' + str(ids) + ' record id(s)':<34}"
            f"{base:>15,.0f} ev/s{'':>1}{full:>15,.0f} ev/s{'':>1}{base / full:>7.1f}x"
        )
    base_us, full_us = bench_screen(args.readings)
    label = "screen reading, 64 rows"
    print(f"{label:<34}{base_us:>15.1f} µs/op{full_us:>15.1f} µs/op{full_us / base_us:>7.1f}x")
    print("baseline: decoder alone (reports) / one precompiled re.search (screen)")


if __name__ == "__main__":
    main()
