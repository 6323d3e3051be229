"""What every benchmark prints beside its figures: the machine's cores and load, and
whether it ran in short mode.

Figures from a shared machine are only comparable with the load they were taken under,
so each benchmark prints `machine_line()` when it starts and when it ends, and the
share of the machine's CPU that was busy (everyone's, not only the benchmark's) over
its run. `PB_BENCH_SHORT=1` shortens every benchmark (fewer seconds, fewer rounds) for
a quick re-run: the same comparisons side by side, noisier figures.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

SHORT = os.environ.get("PB_BENCH_SHORT", "") not in ("", "0")


def unwind_on_signals() -> None:
    """Make SIGTERM (`timeout`, `kill`) and SIGINT, even for a benchmark started in the
    background (where SIGINT is ignored), unwind through the benchmark's `finally`s.
    Killed outright, a benchmark leaves its tmux servers, printers, sshd and servers
    running, and they skew every figure taken after it on the same machine.

    Only the first SIGTERM unwinds: `timeout` sends one to the benchmark and another to
    its whole process group, and the second would cut the first one's cleanup short."""

    def stop(*_: object) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        sys.exit(143)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, signal.default_int_handler)


def short(normal: float, quick: float) -> float:
    """`quick` in short mode, else `normal`."""
    return quick if SHORT else normal


def _stat() -> tuple[int, int]:
    try:
        f = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except (OSError, ValueError):
        return 0, 0
    return sum(f), f[3] + (f[4] if len(f) > 4 else 0)


_START = _stat()


def _reference_work() -> int:
    """A fixed piece of plain Python (small tuples, str(), a dict), what servers and
    collectors spend their time on."""
    d: dict[int, tuple[int, str]] = {}
    for i in range(200_000):
        d[i & 1023] = (i, str(i))
    return len(d)


def reference_ms(rounds: int = 3) -> float:
    """Milliseconds of `_reference_work`, the best of `rounds`: the machine's speed for
    Python right now. The same code's figures moved 2x between days here (other tenants,
    clock speed) with the load average near 1, so a figure in µs is only comparable
    with others taken at the same reference."""
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        _reference_work()
        best = min(best, time.perf_counter() - t0)
    return best * 1000


def machine_line(tag: str = "start") -> str:
    """Cores, load averages, the Python reference speed and (at the end) how busy the
    whole machine was meanwhile."""
    one, five, _ = os.getloadavg()
    total, idle = _stat()
    busy = ""
    if tag != "start" and total > _START[0]:
        busy = f", machine CPU busy {1 - (idle - _START[1]) / (total - _START[0]):.0%} during the run"
    mode = ", short mode (PB_BENCH_SHORT)" if SHORT else ""
    return (
        f"machine at {tag}: {os.cpu_count()} cores, load {one:.2f} (1 min) {five:.2f} (5 min),"
        f" Python reference {reference_ms():.0f} ms (bench/machine.py; lower is faster){busy}{mode}"
    )


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process: what it cost, whatever else the machine was doing."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return float("nan")


IDLE = ("select (selectors.py", "aiosqlite/core.py:59)", "wait (threading.py")


def profile(pid: int, seconds: float, row: str | None = None) -> None:
    """PB_BENCH_PROFILE=FILE: sample process `pid` with py-spy for the measured window and
    write its flat top (own time per function) to FILE, so where the time goes is
    measured in the run that gave the figures. With `row`, to FILE.row: a benchmark of
    several rows (before and after, in one run) keeps each row's profile."""
    dest = os.environ.get("PB_BENCH_PROFILE")
    spy = shutil.which("py-spy") or str(Path.home() / ".local/bin/py-spy")
    if not dest or not Path(spy).exists():
        return
    if row:
        dest = f"{dest}.{row}"
    raw = Path(dest + ".raw")
    spy_proc = subprocess.Popen(
        [
            spy,
            "record",
            "-p",
            str(pid),
            "-d",
            str(max(1, int(seconds) - 1)),
            "-r",
            "50",
            "-f",
            "raw",
            "-o",
            str(raw),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )

    def summarise() -> None:
        spy_proc.wait(seconds + 30)
        own: dict[str, int] = {}
        total_with: dict[str, int] = {}
        n = 0
        for line in raw.read_text().splitlines() if raw.exists() else []:
            stack, _, count = line.rpartition(" ")
            c = int(count)
            frames = stack.split(";")
            if any(idle in frames[-1] for idle in IDLE):
                continue
            n += c
            own[frames[-1]] = own.get(frames[-1], 0) + c
            for f in set(frames):
                total_with[f] = total_with.get(f, 0) + c
        lines = [f"{n} busy samples at 50 Hz (waits in epoll/queues left out); own time:"]
        lines += [f"{v / n:6.1%}  {k}" for k, v in sorted(own.items(), key=lambda kv: -kv[1])[:40]]
        lines += ["", "inclusive:"]
        lines += [f"{v / n:6.1%}  {k}" for k, v in sorted(total_with.items(), key=lambda kv: -kv[1])[:60]]
        Path(dest).write_text("\n".join(lines) + "\n")

    threading.Thread(target=summarise, daemon=False).start()


def wait_healthy(url: str, proc: subprocess.Popen[bytes], log: Path, timeout: float = 60) -> None:
    """Return once `paneboard serve` at `url` answers /healthz; RuntimeError with its
    log's tail if it exits first or does not answer within `timeout` seconds."""
    import httpx

    deadline = time.monotonic() + timeout
    while True:
        try:
            if httpx.get(url + "/healthz", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline or proc.poll() is not None:
            raise RuntimeError("the server did not start: " + log.read_text()[-2000:])
        time.sleep(0.1)
