"""Answering from the board: tap -> keys typed, and the screen's update delay.

    uv run python bench/answers.py [--rounds 40] [--marks 40] [--json]

The whole real path on this machine: a program in a private tmux (bench/answer_pane.py,
a Claude-Code-like prompt named `claude`) <- `paneboard agent --local --allow-input` ->
`paneboard serve` (SQLite) <- an operator's HTTP client doing what the page does.

* tap -> keys: from just before `POST /api/panes/ID/answer` to the program reading the
  key (its own `time.time()`, the same clock). Each round the program redraws (a new
  fingerprint), and the client first waits for that screen, as a page would. Baseline:
  `tmux send-keys` run directly by this script -> the program reading the key (tmux and
  process start-up alone, nothing of paneboard). Also the POST's own round trip
  (tap -> outcome shown).
* screen update: the program prints a marker line (told to by a `tmux send-keys m`);
  from its write to a long-polling `GET /api/panes/ID/screen?after=FP` returning a
  screen with it. Includes the collector's settle (0.15 s quiet, by design).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from machine import unwind_on_signals  # noqa: E402
from support.stack import PASSWORD, Paneboard  # noqa: E402
from support.tmux import TmuxServer  # noqa: E402
from support.wait import wait_for  # noqa: E402
from support.webclient import WebClient  # noqa: E402


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, max(0, round(q / 100 * (len(s) - 1))))] if s else float("nan")


def log_lines(path: Path, kind: str) -> list[tuple[int, float]]:
    if not path.exists():
        return []
    out = []
    for ln in path.read_text().splitlines():
        parts = ln.split()
        if len(parts) == 3 and parts[0] == kind:
            out.append((int(parts[1]), float(parts[2])))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--marks", type=int, default=40)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    unwind_on_signals()
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="pb-bench-answers-") as tmp:
        tmpdir = Path(tmp)
        pb = Paneboard(tmpdir)
        pb.start(collector=False)
        try:
            pb.tmux = TmuxServer().start("work")
            pb.pane = pb.tmux.panes()[0]
            pb.start_collector("--allow-input")
            pb.cli("user", "add", "olga", "--operator", stdin=PASSWORD + "\n")
            log = tmpdir / "keys.log"
            path = shlex.quote(os.pathsep.join(p for p in sys.path if p))
            py = shlex.quote(sys.executable)
            prog = shlex.quote(str(ROOT / "bench" / "answer_pane.py"))
            inner = f"PYTHONPATH={path} exec -a claude {py} {prog} {shlex.quote(str(log))}"
            pane = pb.tmux.new_window("work", "bench", f"bash -c {shlex.quote(inner)}")
            row = wait_for(
                lambda: next((p for p in pb.panes() if p["pane"] == pane and p["state"] == "blocked"), None),
                timeout=60,
                what="the bench pane blocked",
            )
            pid = row["id"]
            c = WebClient(pb.url).login("olga", PASSWORD)

            def screen_with(pred, after: str | None = None) -> dict:
                def get() -> dict | None:
                    q = f"?wait=5&after={after}" if after else "?wait=2"
                    s = c.get(f"/api/panes/{pid}/screen{q}")
                    return s if pred(s) else None

                return wait_for(get, timeout=30, what="a screen")

            # baseline: tmux send-keys straight from here
            base: list[float] = []
            for _ in range(args.rounds):
                n = len(log_lines(log, "key"))
                t0 = time.time()
                subprocess.run([*pb.tmux.base(), "send-keys", "-t", pane, "1"], check=True)
                wait_for(lambda n=n: len(log_lines(log, "key")) > n, timeout=10, what="the key")
                base.append((log_lines(log, "key")[-1][1] - t0) * 1000)
            # through paneboard
            tap: list[float] = []
            rtt: list[float] = []
            outcomes: dict[str, int] = {}
            for _ in range(args.rounds):
                rnd = len(log_lines(log, "key"))
                shot = screen_with(
                    lambda s, r=rnd: s["answers"] and any(f"round {r})" in ln for ln in s["lines"])
                )
                t0 = time.time()
                status, body = c.request(
                    "POST", f"/api/panes/{pid}/answer", {"fingerprint": shot["fingerprint"], "answer": "yes"}
                )
                rtt.append((time.time() - t0) * 1000)
                outcomes[body.get("outcome", str(status))] = (
                    outcomes.get(body.get("outcome", str(status)), 0) + 1
                )
                if body.get("outcome") != "typed":
                    continue
                wait_for(lambda r=rnd: len(log_lines(log, "key")) > r, timeout=10, what="the key typed")
                tap.append((log_lines(log, "key")[-1][1] - t0) * 1000)
            # screen update while a page is open
            upd: list[float] = []
            shot = c.get(f"/api/panes/{pid}/screen?wait=1")
            for i in range(1, args.marks + 1):
                subprocess.run([*pb.tmux.base(), "send-keys", "-t", pane, "m"], check=True)
                fp = shot["fingerprint"]
                while True:
                    shot = c.get(f"/api/panes/{pid}/screen?wait=10&after={fp}")
                    got = time.time()
                    fp = shot["fingerprint"]
                    if any(f"MARK {i}" in ln for ln in shot["lines"]):
                        break
                marks = dict(log_lines(log, "mark"))
                upd.append((got - marks[i]) * 1000)
                time.sleep(0.3)  # a person reading, not a flood
        finally:
            pb.close()
    took = time.monotonic() - started
    summary = {
        "send_keys_baseline": base,
        "tap_to_keys": tap,
        "tap_to_outcome": rtt,
        "screen_update": upd,
        "outcomes": outcomes,
    }
    print(f"bench/answers.py: {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}, {took:.0f} s")
    print(f"{'stage':52} {'n':>4} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8}")
    for label, v in (
        ("baseline: tmux send-keys -> key read", base),
        ("tap (POST answer) -> key read by the program", tap),
        ("tap -> outcome returned (POST round trip)", rtt),
        ("screen update: write -> long-poll GET returns it", upd),
    ):
        print(
            f"{label:52} {len(v):>4} {pct(v, 50):>8.1f} {pct(v, 99):>8.1f} "
            f"{max(v, default=float('nan')):>8.1f}"
        )
    print(f"outcomes: {outcomes}")
    if args.json:
        print(json.dumps({k: v for k, v in summary.items()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
