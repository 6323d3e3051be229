"""Benchmark a look's cost while one pane's program floods its command lines (issue 40, finding 5).

    uv run python bench/looks.py [--seconds 20] [--base PATH]

A private tmux server holds a reporting pane (an OSC 7501 report every 0.5 s whose
`msg` carries the instant it was written) and nine idle shells; an in-process
collector watches it through a throw-away sshd (tests/support/sshd.py). For
`--seconds` it runs quiet, then as long again with a flooding pane beside them: a
program that gives itself 1.1 MB of arguments and starts 30 children with 60 KB each.
Per phase: the reporting pane's report-to-collector delay p50/p99, the bytes of the
looks' process replies (median, max), and the collector's CPU seconds.

`--base PATH` runs it twice more, interleaved, with the `paneboard_agent` of another
tree first on the import path (e.g. a `git archive` of main's agent/src): baseline and
new side by side in one run.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

REPORTER = r"""
import base64, os, time
while True:
    msg = base64.b64encode(repr(time.time()).encode()).decode()
    os.write(1, f"\x1b]7501;state=working:app=builder:msg={msg}\x1b\\".encode())
    time.sleep(0.5)
"""

FLOOD = """
import os, subprocess, sys
if len(sys.argv) == 1:
    os.execv(sys.executable, [sys.executable, "-c", SELF, *["x" * 110_000] * 10])
kids = [subprocess.Popen(["sh", "-c", "read x", "sh", "y" * 60_000]) for _ in range(30)]
sys.stdin.read()
"""


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")


def run_once(seconds: float) -> dict[str, Any]:
    """One run in this process: quiet, then flooding; figures per phase."""
    import tempfile

    from paneboard_agent.collector import Collector, TmuxTarget
    from paneboard_agent.transport.ssh import SSHTarget, SSHTransport
    from support.sshd import Sshd
    from support.tmux import TmuxServer

    replies: list[tuple[float, int]] = []
    delays: list[tuple[float, float]] = []
    real_run = SSHTransport.run

    async def run(self: SSHTransport, argv: Any, *args: Any, **kwargs: Any) -> Any:
        res = await real_run(self, argv, *args, **kwargs)
        if len(argv) == 3 and " pb-procfs-" in argv[2]:
            replies.append((time.monotonic(), len(res.stdout)))
        return res

    SSHTransport.run = run  # type: ignore[method-assign]  # only counts what comes back

    class Sink:
        async def pane_changed(self, update: Any) -> None:
            if update.msg:
                with contextlib.suppress(ValueError):
                    delays.append((time.monotonic(), time.time() - float(update.msg)))

        async def pane_gone(self, key: Any, t: float) -> None:
            return None

        async def host_status(self, host: str, reachable: bool, t: float, error: str | None) -> None:
            return None

        async def host_health(self, host: str, health: object) -> None:
            return None  # the link's health is not what this test reads

    tmp = Path(tempfile.mkdtemp(prefix="pb-bench-looks-"))
    sshd = Sshd(tmp / "sshd").start()
    tmux = TmuxServer().start()
    try:
        for i in range(9):
            tmux.new_window("main", f"idle{i}", "sh")
        tmux.new_window("main", "reporter", shlex.join([sys.executable, "-c", REPORTER]))
        target = SSHTarget("127.0.0.1", sshd.port, sshd.user, (str(sshd.client_key),), str(sshd.known_hosts))

        async def scenario() -> dict[str, Any]:
            collector = Collector([TmuxTarget(SSHTransport(target), socket=tmux.name)], Sink())
            task = asyncio.create_task(collector.run())
            try:
                await asyncio.sleep(3)  # connected, panes listed
                marks = [time.monotonic()]
                c0 = time.process_time()
                await asyncio.sleep(seconds)
                marks.append(time.monotonic())
                c1 = time.process_time()
                flood = shlex.join([sys.executable, "-c", f"SELF = {FLOOD!r}\n{FLOOD}"])
                tmux.new_window("main", "flood", flood)
                await asyncio.sleep(3)  # its children started
                marks.append(time.monotonic())
                c2 = time.process_time()
                await asyncio.sleep(seconds)
                marks.append(time.monotonic())
                c3 = time.process_time()
            finally:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            out = {}
            for name, (a, b), cpu in (("quiet", marks[0:2], c1 - c0), ("flood", marks[2:4], c3 - c2)):
                d = [x for t, x in delays if a <= t < b]
                r = [n for t, n in replies if a <= t < b]
                out[name] = {
                    "reports": len(d),
                    "p50_ms": round(1000 * _pct(d, 0.5), 1),
                    "p99_ms": round(1000 * _pct(d, 0.99), 1),
                    "looks": len(r),
                    "reply_bytes_median": int(statistics.median(r)) if r else 0,
                    "reply_bytes_max": max(r) if r else 0,
                    "cpu_s": round(cpu, 2),
                }
            return out

        return asyncio.run(scenario())
    finally:
        tmux.kill()
        sshd.stop()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--base", help="another tree's agent/src, run interleaved as the baseline")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--once", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.once:
        print(json.dumps(run_once(args.seconds)))
        return 0
    trees = [("new", None)] + ([("base", args.base)] if args.base else [])
    print(json.dumps({"load1": os.getloadavg()[0], "tag": "start"}))
    for r in range(args.rounds):
        for name, tree in trees if r % 2 == 0 else trees[::-1]:
            env = dict(os.environ)
            if tree:
                env["PYTHONPATH"] = tree + os.pathsep + env.get("PYTHONPATH", "")
            argv = [sys.executable, __file__, "--once", "--seconds", str(args.seconds)]
            limit = args.seconds * 4 + 120
            res = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=limit)
            line = res.stdout.strip().splitlines()[-1] if res.stdout.strip() else res.stderr[-500:]
            print(json.dumps({"tree": name, "round": r, "load1": os.getloadavg()[0]}), line, flush=True)
    print(json.dumps({"load1": os.getloadavg()[0], "tag": "end"}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
