"""Benchmark the pane classifier against the work around it.

    uv run python bench/classifier.py [--events 5000] [--readings 2000]

* reports: one OSC 7501 report per `%output` chunk, as the collector feeds them. The
  *baseline* is the decoder alone on the same chunks; the classifier row is decoder +
  `PaneClassifier.feed` + `classification`. Run with 1, 16 and 256 (the cap) distinct
  record ids, since arbitration looks at every record.
* collector path, 256 ids: what the collector does per `%output` chunk — feed,
  `classification`, `evidence()` (a fresh copy of every record, O(n) by contract) and
  `next_deadline`. Baseline: the decoder alone.
* server re-run, 256 records: `classify_evidence` (checked, as the server runs it) on
  the JSON evidence of a pane at the cap. Baseline: `json.loads` of that evidence
  (what the server must do with it anyway).
* screen: one `set_screen` + `classification` per capture, bundled manifests, on a
  64-row Claude Code screen. The *baseline* is one precompiled `re.search` over the
  same text (the cheapest rule there could be).

Times are process CPU time (`time.process_time`), so other jobs on a shared machine
inflate them less. To compare with another version of the code, run this same file
with `PYTHONPATH=<that version>/protocol/src`. Prints one table; every measurement is
bounded by --events / --readings.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

from paneboard_protocol.classifier import PaneClassifier, classify_evidence
from paneboard_protocol.decoder import Decoder
from paneboard_protocol.rules import load_rules

sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine import machine_line, short

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
    t = time.process_time()
    for chunk in data:
        d.feed(chunk)
    base = time.process_time() - t

    d = Decoder(rejections=True)
    c = PaneClassifier(RULES)
    c.set_process(0.0, "claude", 1)
    t = time.process_time()
    for i, chunk in enumerate(data):
        now = i * 0.01
        c.feed(now, d.feed(chunk))
        c.classification(now)
    full = time.process_time() - t
    return n / base, n / full


def bench_collector(n: int, ids: int) -> tuple[float, float]:
    data = chunks(n, ids)
    d = Decoder()
    t = time.process_time()
    for chunk in data:
        d.feed(chunk)
    base = time.process_time() - t

    d = Decoder(rejections=True)
    c = PaneClassifier(RULES)
    c.set_process(0.0, "claude", 1)
    t = time.process_time()
    for i, chunk in enumerate(data):
        now = i * 0.01
        c.feed(now, d.feed(chunk))
        c.classification(now)
        c.evidence()
        c.next_deadline(now)
    full = time.process_time() - t
    return n / base, n / full


def bench_server(n: int, ids: int) -> tuple[float, float]:
    d = Decoder(rejections=True)
    c = PaneClassifier(RULES)
    c.set_process(0.0, "claude", 1)
    for i, chunk in enumerate(chunks(2 * ids, ids)):
        c.feed(i * 0.01, d.feed(chunk))
    wire = json.dumps(c.evidence())
    t = time.process_time()
    for _ in range(n):
        json.loads(wire)
    base = time.process_time() - t
    evidence = json.loads(wire)
    t = time.process_time()
    for i in range(n):
        classify_evidence(evidence, 100.0 + i)
    full = time.process_time() - t
    return base / n * 1e6, full / n * 1e6


def bench_screen(n: int) -> tuple[float, float]:
    lines = FIXTURE.read_text(encoding="utf-8").splitlines()
    screen = "\n".join((["filler output line " + str(i) for i in range(64)] + lines)[-64:])
    other = screen.replace("esc to interrupt", "")
    pattern = re.compile(r"esc to interrupt")
    t = time.process_time()
    for i in range(n):
        pattern.search(screen if i % 2 else other)
    base = time.process_time() - t

    c = PaneClassifier(RULES)
    c.set_process(0.0, "claude", 1)
    t = time.process_time()
    for i in range(n):
        now = i * 1.0
        c.set_screen(now, screen if i % 2 else other)
        c.classification(now)
    full = time.process_time() - t
    return base / n * 1e6, full / n * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=int(short(5000, 1000)))
    ap.add_argument("--readings", type=int, default=int(short(2000, 400)))
    args = ap.parse_args()
    print(machine_line("start"))
    print(f"{'workload':<34}{'baseline':>22}{'classifier':>22}{'ratio':>8}")
    for ids in (1, 16, 256):
        base, full = bench_reports(args.events, ids)
        print(
            f"{'reports, ' + str(ids) + ' record id(s)':<34}"
            f"{base:>15,.0f} ev/s{'':>1}{full:>15,.0f} ev/s{'':>1}{base / full:>7.1f}x"
        )
    base, full = bench_collector(args.events, 256)
    print(
        f"{'collector path, 256 record ids':<34}"
        f"{base:>15,.0f} ev/s{'':>1}{full:>15,.0f} ev/s{'':>1}{base / full:>7.1f}x"
    )
    base_us, full_us = bench_server(max(1, args.events // 10), 256)
    label = "server re-run, 256 records"
    print(f"{label:<34}{base_us:>15.1f} µs/op{full_us:>15.1f} µs/op{full_us / base_us:>7.1f}x")
    base_us, full_us = bench_screen(args.readings)
    label = "screen reading, 64 rows"
    print(f"{label:<34}{base_us:>15.1f} µs/op{full_us:>15.1f} µs/op{full_us / base_us:>7.1f}x")
    print("baseline: decoder alone (reports, collector) / json.loads (server) / one re.search (screen)")
    print(machine_line("end"))


if __name__ == "__main__":
    main()
