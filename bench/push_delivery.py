"""Web Push you can trust: a pane's state change -> the push delivered to the push service.

    uv run python bench/push_delivery.py [--rounds 30] [--json]

The whole real path on this machine: a program in a private tmux (bench/push_pane.py,
named `claude`) <- `paneboard agent --local --allow-input` -> `paneboard serve`
(SQLite) -> the loopback push service of the tests (tests/support/pushendpoint.py: it
checks the VAPID signature and decrypts each message, as a browser's push service and
the browser would). Two accounts each have one device and no tab open: an operator
(whose push for a blocked prompt carries its answers: the server fetches the pane's
screen first) and a plain viewer (no answers). Each round the program is told to work,
then to block; the delay runs from its write of the `blocked` report (its own
`time.time()`) to the push service's receipt of each device's message (same clock).

Rounds are spaced by more than `group_window`, so each block is the first of its
window (a block that follows within the window is folded in when it closes, by
design: that is not what this measures). One warm-up round before them is not
counted (the server's first push imports and connects its HTTP client).

Run once with `group_window = 0.01` (it must be above 0: the path itself) and once with
the default 2 s (what a deployment gets: the first change of a burst goes out at once,
the window only decides what is folded into it afterwards).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

from machine import machine_line, short, unwind_on_signals  # noqa: E402
from support.pushendpoint import PushService  # noqa: E402
from support.stack import PASSWORD, Paneboard  # noqa: E402
from support.tmux import TmuxServer  # noqa: E402
from support.wait import wait_for  # noqa: E402
from support.webclient import WebClient  # noqa: E402


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, max(0, round(q / 100 * (len(s) - 1))))] if s else float("nan")


def blocks(path: Path, kind: str = "blocked") -> dict[int, float]:
    if not path.exists():
        return {}
    out = {}
    for ln in path.read_text().splitlines():
        parts = ln.split()
        if len(parts) == 3 and parts[0] == kind:
            out[int(parts[1])] = float(parts[2])
    return out


def run(tmpdir: Path, rounds: int, group_window: float) -> dict[str, Any]:
    """`rounds` blocks of one pane; per device, the delay of each round's push (ms)."""
    pb = Paneboard(tmpdir, notify={"push_allow_local": True, "group_window": group_window})
    pb.start(collector=False)
    svc = PushService().start()
    try:
        pb.tmux = TmuxServer().start("work")
        pb.pane = pb.tmux.panes()[0]
        pb.start_collector("--allow-input")
        subs: dict[str, str] = {}
        for name, role in (("olga", ("--operator",)), ("nora", ())):
            pb.cli("user", "add", name, *role, stdin=PASSWORD + "\n")
            sub = svc.subscription()
            status, body = WebClient(pb.url).login(name, PASSWORD).request("POST", "/api/push/subscribe", sub)
            assert status == 204, body
            subs[sub["endpoint"].rsplit("/", 1)[1]] = name
        log = tmpdir / "blocks.log"
        path = shlex.quote(os.pathsep.join(p for p in sys.path if p))
        py = shlex.quote(sys.executable)
        prog = shlex.quote(str(ROOT / "bench" / "push_pane.py"))
        inner = f"PYTHONPATH={path} exec -a claude {py} {prog} {shlex.quote(str(log))}"
        pane = pb.tmux.new_window("work", "bench", f"bash -c {shlex.quote(inner)}")

        def state() -> str | None:
            return next((p["state"] for p in pb.panes() if p["pane"] == pane and p["agent"]), "?")

        wait_for(lambda: state() != "?", timeout=30, what="the bench pane named claude")
        wait_for(lambda: blocks(log, "ready"), timeout=30, what="the bench program reading keys")
        delays: dict[str, list[float]] = {"olga": [], "nora": []}
        offers: list[str] = []
        for n in range(1, rounds + 2):  # round 1: the warm-up
            pb.tmux.cmd("send-keys", "-t", pane, "w")
            try:
                wait_for(lambda: state() == "working", timeout=30, what=f"the pane working (round {n})")
            except AssertionError as e:
                row = next((p for p in pb.panes() if p["pane"] == pane), None)
                screen = pb.tmux.cmd("capture-pane", "-p", "-t", pane)
                raise AssertionError(f"{e}\nrow: {row}\nscreen:\n{screen}\n{pb.log('collector1')}") from e
            had = len(svc.received)
            pb.tmux.cmd("send-keys", "-t", pane, "b")
            got = svc.wait_for(had + 2, timeout=30)[had : had + 2]
            t0 = wait_for(lambda n=n: blocks(log).get(n), timeout=10, what="the block's time")
            for g in got if n > 1 else ():
                who = subs[g.path]
                delays[who].append((g.at - t0) * 1000)
                if who == "olga" and "offer" in g.payload:
                    offers.append(g.payload["offer"]["fingerprint"])
                if who == "nora":
                    assert "offer" not in g.payload, "a plain viewer's device was offered answers"
            time.sleep(max(0.2, group_window + 0.2))  # the next block opens a window of its own
        return {"delays": delays, "offered": len(offers), "distinct_offers": len(set(offers))}
    finally:
        svc.stop()
        pb.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=int(short(30, 8)))
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    unwind_on_signals()
    print(machine_line("start"))
    results: dict[float, dict[str, Any]] = {}
    for gw in (0.01, 2.0):  # the least the config takes (it must be > 0), and the default
        with tempfile.TemporaryDirectory(prefix="pb-bench-push-") as tmp:
            results[gw] = run(Path(tmp), args.rounds, gw)
    print(f"{'state change -> push received':56} {'n':>4} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8}")
    for gw, r in results.items():
        for who, label in (("olga", "operator's device (answers offered)"), ("nora", "viewer's device")):
            v = r["delays"][who]
            print(
                f"{f'group_window {gw:g} s, {label}':56} {len(v):>4} {pct(v, 50):>8.1f} "
                f"{pct(v, 99):>8.1f} {max(v, default=float('nan')):>8.1f}"
            )
        print(
            f"  operator pushes with answers: {r['offered']} of {args.rounds},"
            f" distinct fingerprints {r['distinct_offers']}"
        )
    print(machine_line("end"))
    if args.json:
        print(json.dumps({str(k): v for k, v in results.items()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
