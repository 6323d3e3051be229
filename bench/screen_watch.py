"""What a page's screen requests cost the collector: CPU while a client alternates
`?scrollback=` on one pane's screen as fast as the server answers.

    uv run python bench/screen_watch.py [--duration 16] [--rounds 2]

The whole real path on this machine: a pane in a private tmux (with a few thousand lines
of history) <- `paneboard agent --local` -> `paneboard serve` (SQLite) <- a logged-in
HTTP client. Per phase: the collector's CPU (its own and its children's), the tmux
server's, and how many screen requests were answered; first a phase where the client
asks with one scroll-back throughout (the same watch all along), then one alternating
0 and 200 lines. Phases alternate, so load from other processes hits both alike.

To measure another checkout (a baseline), put its sources first on PYTHONPATH: the
server and the collector are started with this environment.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from machine import machine_line, unwind_on_signals  # noqa: E402
from support.stack import PASSWORD, USER, Paneboard  # noqa: E402
from support.wait import wait_for  # noqa: E402
from support.webclient import WebClient  # noqa: E402


def cpu(pid: int) -> float:
    """utime + stime of a process and of its children it waited for."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--duration", type=float, default=16.0, help="seconds per phase")
    ap.add_argument("--rounds", type=int, default=2, help="steady/alternating pairs")
    args = ap.parse_args(argv)
    unwind_on_signals()
    print(machine_line("start"), flush=True)
    with tempfile.TemporaryDirectory(prefix="pb-bench-watch-") as tmp:
        pb = Paneboard(Path(tmp))
        pb.start()
        try:
            assert pb.tmux is not None and pb.collector is not None
            collector = pb.collector.pid
            pane = pb.tmux.new_window("work", "bench", "bash -c 'seq 1 5000; exec sleep 3600'")
            row = wait_for(lambda: next((p for p in pb.panes() if p["pane"] == pane), None), 60, what="pane")
            tmux_pid = int(
                subprocess.run(
                    [*pb.tmux.base(), "display", "-p", "#{pid}"], capture_output=True, text=True, check=True
                ).stdout
            )
            c = WebClient(pb.url).login(USER, PASSWORD)
            url = f"/api/panes/{row['id']}/screen"
            wait_for(lambda: c.get(url + "?wait=3")["lines"], 30, what="the first screen")

            def phase(alternate: bool) -> tuple[float, float, int]:
                c.get(url + "?scrollback=200")
                time.sleep(1.0)  # the last phase's captures settle
                col0, tmux0, n = cpu(collector), cpu(tmux_pid), 0
                until = time.monotonic() + args.duration
                while time.monotonic() < until:
                    sb = 200 if not alternate or n % 2 == 0 else 0
                    c.get(f"{url}?scrollback={sb}")
                    n += 1
                return cpu(collector) - col0, cpu(tmux_pid) - tmux0, n

            got: dict[bool, list[tuple[float, float, int]]] = {False: [], True: []}
            for _ in range(args.rounds):
                for alternate in (False, True):
                    got[alternate].append(phase(alternate))
        finally:
            pb.close()
    print(f"{'requests':<22} {'collector CPU s':>16} {'tmux CPU s':>11} {'requests':>9}")
    for alternate, rows in got.items():
        name = "alternating 0/200" if alternate else "steady 200"
        cols = [r[0] for r in rows]
        print(
            f"{name:<22} {statistics.median(cols):>9.2f} ({min(cols):.2f}-{max(cols):.2f})"
            f" {statistics.median(r[1] for r in rows):>6.2f} {statistics.median(r[2] for r in rows):>9.0f}"
        )
    print(machine_line("end"), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
