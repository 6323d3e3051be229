"""Benchmark `paneboard run`: keystroke round trip and output throughput, relay vs bare pty.

    uv run python bench/relay.py [--keys 2000] [--mb 32]

Both sides run the same child on a pseudo-terminal this script owns (standing in for
the tmux pane): the *baseline* runs it directly on that pty, the *relay* runs it as
`paneboard run -- CHILD` on that pty, so the only difference is the relay's extra
pty and process hop.

* latency: the child is `cat` with its terminal in raw mode, so it echoes each byte;
  we write one byte and time until it comes back, many times (median, p90, p99),
  alternating between the two sides keystroke by keystroke so noise hits both alike.
* throughput: the child writes N MB (`head -c N /dev/zero`, raw mode); we time
  until it has all arrived and the pty closes; best of a few alternating rounds.

Runtime is bounded (each measurement stops at a deadline); prints one table.
"""

from __future__ import annotations

import argparse
import os
import select
import signal
import statistics
import subprocess
import sys
import time
import tty
from pathlib import Path

from machine import unwind_on_signals

PANEBOARD = str(Path(sys.executable).parent / "paneboard")
DEADLINE = 20.0  # seconds for all the keystrokes, at most
THROUGHPUT_DEADLINE = 6.0  # seconds per throughput run, at most (then MB/s is of what arrived)


def spawn(child: list[str], relay: bool) -> tuple[subprocess.Popen, int]:
    """Start `child` (through the relay or not) on a fresh pty; return it and the pty master."""
    master, slave = os.openpty()
    tty.setraw(slave)  # the "pane" passes bytes untouched, as a terminal emulator would
    argv = [PANEBOARD, "run", "--", *child] if relay else child
    proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, start_new_session=True)
    os.close(slave)
    return proc, master


def read_exact(fd: int, n: int, deadline: float) -> bytes:
    out = b""
    while len(out) < n:
        r, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        if not r:
            raise TimeoutError("no echo")
        out += os.read(fd, n - len(out))
    return out


def _ready(master: int, deadline: float) -> None:
    buf = b""
    while b"READY" not in buf:
        buf += read_exact(master, 1, deadline)
    time.sleep(0.2)
    while select.select([master], [], [], 0.05)[0]:
        os.read(master, 4096)


def latency(keys: int) -> dict[str, list[float]]:
    """Both sides alive at once, keystrokes interleaved, so machine noise hits both alike."""
    child = ["sh", "-c", "stty raw -echo; echo READY; exec cat"]
    sides = {"bare": spawn(child, relay=False), "relay": spawn(child, relay=True)}
    samples: dict[str, list[float]] = {"bare": [], "relay": []}
    try:
        deadline = time.monotonic() + DEADLINE
        for _, master in sides.values():
            _ready(master, deadline)
        for i in range(keys):
            key = bytes([0x61 + i % 26])
            for side, (_, master) in sides.items():
                t0 = time.perf_counter()
                os.write(master, key)
                got = read_exact(master, 1, deadline)
                samples[side].append(time.perf_counter() - t0)
                if got != key:
                    raise RuntimeError(f"{side}: echo mismatch: sent {key!r}, got {got!r}")
            if time.monotonic() > deadline:
                break
        return samples
    finally:
        for proc, master in sides.values():
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            os.close(master)


def throughput(relay: bool, mb: int) -> tuple[int, float]:
    n = mb * 1024 * 1024
    proc, master = spawn(["sh", "-c", f"stty raw -echo; head -c {n} /dev/zero"], relay)
    try:
        got = 0
        t0 = time.perf_counter()
        deadline = time.monotonic() + THROUGHPUT_DEADLINE
        while time.monotonic() < deadline:
            r, _, _ = select.select([master], [], [], 1.0)
            if not r:
                continue
            try:
                chunk = os.read(master, 1 << 16)
            except OSError:  # EIO: the child side closed
                break
            if not chunk:
                break
            got += len(chunk)
        return got, time.perf_counter() - t0
    finally:
        proc.kill()
        proc.wait()
        os.close(master)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keys", type=int, default=2000, help="keystrokes per side (default 2000)")
    ap.add_argument("--mb", type=int, default=32, help="megabytes of output per side (default 32)")
    ap.add_argument("--rounds", type=int, default=3, help="throughput runs per side (default 3)")
    args = ap.parse_args()
    unwind_on_signals()

    rows = []
    lat = latency(args.keys)

    def q(samples: list[float], p: float) -> float:
        return statistics.quantiles(samples, n=100)[int(p) - 1] * 1e6

    for label, fn in [
        ("keystroke round trip, median (us)", lambda s: statistics.median(s) * 1e6),
        ("keystroke round trip, p90 (us)", lambda s: q(s, 90)),
        ("keystroke round trip, p99 (us)", lambda s: q(s, 99)),
    ]:
        rows.append((label, fn(lat["bare"]), fn(lat["relay"])))
    # Throughput: alternate the sides for a few rounds and keep each side's best run,
    # the usual way to read a throughput on a machine others are using.
    mbps: dict[str, float] = {"bare": 0.0, "relay": 0.0}
    for _ in range(args.rounds):
        for side in ("bare", "relay"):
            got, secs = throughput(side == "relay", args.mb)
            if got != args.mb * 1024 * 1024:
                print(
                    f"note: {side} delivered {got} of {args.mb * 1024 * 1024} bytes in time", file=sys.stderr
                )
            mbps[side] = max(mbps[side], got / secs / 1e6)
    rows.append(
        (f"output throughput, {args.mb} MiB, best of {args.rounds} (MB/s)", mbps["bare"], mbps["relay"])
    )

    print(
        f"paneboard run benchmark ({len(lat['bare'])} keystrokes, {args.mb} MiB;"
        f" {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f})"
    )
    print(f"{'measure':<48} {'bare pty':>10} {'relay':>10} {'relay/bare':>11}")
    for label, bare, relay in rows:
        print(f"{label:<48} {bare:>10.1f} {relay:>10.1f} {relay / bare:>10.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
