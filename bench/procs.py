"""Process benchmark: what asking about the panes' processes costs the host, by how many
processes the host runs besides them.

Every look asks about the panes' processes (look.py), about ten times a second on a busy
host. `ps` reads every process of the host to answer; the /proc walk (procfs.py) reads
the panes' own. This starts a tmux server with P panes, each a shell running `sleep`,
adds N idle processes elsewhere on the host, and times one answer both ways, side by
side (the same pids and terminals; `ps` first, then the walk, alternately): wall time,
the CPU the answer's processes used (their user+system time), median and spread, and the
reply's size.

    uv run python bench/procs.py
    uv run python bench/procs.py --panes 32 200 --others 0 300 1000
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine import machine_line, short, unwind_on_signals
from paneboard_agent.tmux.panes import parse_ps, ps_argv
from paneboard_agent.tmux.procfs import procs_answer, procs_argv


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _time(argv: list[str]) -> tuple[float, float, bytes]:
    cpu0, t0 = _children_cpu(), time.perf_counter()
    out = subprocess.run(argv, capture_output=True, timeout=30, check=False).stdout
    return time.perf_counter() - t0, _children_cpu() - cpu0, out


def _panes(sock: str, n: int) -> tuple[list[int], list[str]]:
    tmux = ["tmux", "-S", sock, "-f", "/dev/null"]
    subprocess.run([*tmux, "new-session", "-d", "-x", "80", "-y", "24", "sh -c 'sleep 600'"], check=True)
    for _ in range(n - 1):
        subprocess.run([*tmux, "new-window", "-d", "sh -c 'sleep 600'"], check=True)
    lines = subprocess.run(
        [*tmux, "list-panes", "-a", "-F", "#{pane_pid} #{pane_tty}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return [int(p) for p in lines[::2]], lines[1::2]


def _row(panes: int, others: int, rounds: int) -> None:
    with tempfile.TemporaryDirectory() as d:
        sock = os.path.join(d, "tmux.sock")
        extra = [subprocess.Popen(["sleep", "600"]) for _ in range(others)]
        try:
            pids, ttys = _panes(sock, panes)
            time.sleep(0.5)  # the panes' shells have forked their sleeps
            ps_w, ps_c, walk_w, walk_c = [], [], [], []
            for i in range(rounds):
                w, c, out = _time(ps_argv(pids, ttys))
                ps_w.append(w)
                ps_c.append(c)
                w, c, got = _time(procs_argv(pids, ttys, f"b{i}"))
                walk_w.append(w)
                walk_c.append(c)
            seen_ps, seen_walk = parse_ps(out), procs_answer(0, got, b"", f"b{rounds - 1}", pids)
            same = "same" if seen_walk == seen_ps else f"DIFFER ({len(seen_walk or {})} vs {len(seen_ps)})"
            host = sum(1 for p in os.listdir("/proc") if p.isdigit())
            ps = f"ps {_ms(ps_w)} cpu {_ms(ps_c)} {len(out):>6} B"
            walk = f"walk {_ms(walk_w)} cpu {_ms(walk_c)} {len(got):>6} B"
            print(f"{panes:>5} {host:>9}  {ps}   {walk}  {same}", flush=True)
        finally:
            subprocess.run(["tmux", "-S", sock, "kill-server"], capture_output=True, check=False)
            for p in extra:
                p.kill()
            for p in extra:
                p.wait()


def _ms(xs: list[float]) -> str:
    q = sorted(xs)
    return f"{statistics.median(q) * 1000:5.1f} ({q[0] * 1000:4.1f}-{q[-1] * 1000:5.1f})"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--panes", type=int, nargs="+", default=[32, 200])
    p.add_argument("--others", type=int, nargs="+", default=[0, 300, 1000], help="idle processes added")
    p.add_argument("--rounds", type=int, default=0, help="answers timed each way (default 15, 5 short)")
    a = p.parse_args()
    unwind_on_signals()
    if shutil.which("tmux") is None or not Path("/proc/self/task").is_dir():
        print("needs tmux and Linux's /proc")
        return 1
    rounds = a.rounds or int(short(15, 5))
    print(machine_line("start"), flush=True)
    print("\nms of one answer about the panes' processes, median (min-max); cpu: the answer's own")
    print("processes; B: the reply's bytes (over SSH every one crosses the link and the SSH client)")
    print(f"{'panes':>5} {'host procs':>9}")
    for panes in a.panes:
        for others in a.others:
            _row(panes, others, rounds)
    print(machine_line("end"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
