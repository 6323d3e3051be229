"""Benchmark the collector: N panes printing steadily on one host, watched through sshd.

    uv run python bench/collector.py [--panes 50 200] [--seconds 20] [--rate 2000] [--modes text spin]
                                     [--spinners 50] [--case all|stream|spinner]

A private tmux server on this machine holds N panes (10 windows per session), each
running a printer that writes `--rate` bytes/s of ordinary text plus, every 0.5 s, an
OSC 7501 report whose `msg` carries the instant it was written; in `spin` mode the text
is instead one short spinner redraw per pane every 0.1 s (many small writes). The
collector runs as `paneboard agent --stdout --ssh root@127.0.0.1:PORT ...` against a throw-away sshd
(tests/support/sshd.py) for `--seconds`, then is stopped; we report

* CPU seconds per MB of pane output (the collector's user+sys time from wait4),
* peak RSS (ru_maxrss),
* report-to-stdout delay p50/p99: from the printer writing a report to the line with
  that `msg` arriving on the collector's stdout.

Baselines, side by side in the same run: OpenSSH's own client (`ssh ... tmux -C attach`
per session, output to /dev/null: the cost of SSH itself) and a *drain-only* asyncssh
client that opens the same SSH control-mode channels (one per session) and throws the
bytes away: the cost of merely receiving the stream, without parsing, decoding or
classifying.
Stops by itself (about 6 minutes for the defaults; PB_BENCH_SHORT=1 for a quick run).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

sys.path.insert(0, str(ROOT / "bench"))

from machine import cpu_seconds, machine_line, profile, short, unwind_on_signals  # noqa: E402
from support.sshd import Sshd  # noqa: E402
from support.tmux import TmuxServer  # noqa: E402

PRINTER = r"""
import base64, mmap, os, struct, sys, time
rate, count_file, slot, mode = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4]
with open(count_file, "r+b") as f:
    counts = mmap.mmap(f.fileno(), 0)
line = b"building target 0123456789 abcdefghijklmnopqrstuvwxyz ........ ok\r\n"
frames = "\u280b\u2819\u2839\u2838\u283c\u2834\u2826\u2827\u2807\u280f"
written, seq, t0 = 0, 0, time.time()
next_report = t0 + 0.5
while True:
    now = time.time()
    due = int((now - t0) * rate) - written
    if mode == "spin":  # a spinner: one short redraw of the same line per tick
        spin = f"\r\033[2K{frames[int(now * 10) % 10]} Working ({int(now - t0)}s, esc to interrupt)"
        chunk = spin.encode()
        os.write(1, chunk)
        written += len(chunk)
    elif due > 0:
        chunk = (line * (due // len(line) + 1))[:due]
        os.write(1, chunk)
        written += len(chunk)
    if now >= next_report:
        seq += 1
        msg = base64.b64encode(f"{seq} {time.time():.6f}".encode()).decode()
        state = "working" if seq % 2 else "blocked"
        rep = f"\033]7501;state={state}:app=bench:msg={msg}\033\\".encode()
        os.write(1, rep)
        written += len(rep)
        next_report += 0.5
    struct.pack_into("<q", counts, 8 * slot, written)  # one aligned store, no file system work
    time.sleep(0.1)
"""


SPINNER = r"""
import os, time
frames = "\u280b\u2819\u2839\u2838\u283c\u2834\u2826\u2827\u2807\u280f"
os.write(1, b"\x1b[2J\x1b[H > Please do the task now\r\n")
t0, i = time.time(), 0
while True:
    line = f"\x1b[20;1H {frames[i % 10]} Thinking... (esc to cancel, {int(time.time() - t0)}s)\x1b[K"
    line += "\x1b[22;1H >   Type your message or @path/to/file\x1b[K"
    os.write(1, line.encode())
    i += 1
    time.sleep(0.08)
"""


WARMUP = short(5.0, 3.0)  # seconds before measuring (plus 1 s per 20 panes): start-up, SSH, attaching


def stop_and_peak_rss(proc: subprocess.Popen[bytes]) -> int:
    """Stop `proc`; its peak RSS in KiB (ru_maxrss from wait4)."""
    os.kill(proc.pid, signal.SIGTERM)
    _, _, ru = os.wait4(proc.pid, 0)
    proc.returncode = 0
    return ru.ru_maxrss


class Window:
    """CPU seconds (of all `procs` together) and pane bytes over the measured window
    (after the warm-up); RSS is the largest process's."""

    def __init__(self, procs: list[subprocess.Popen[bytes]], work: Path, n: int, seconds: float) -> None:
        time.sleep(WARMUP + n / 20)
        self.t0 = time.time()
        cpu0, b0 = sum(cpu_seconds(p.pid) for p in procs), output_bytes(work, n)
        time.sleep(seconds)
        cpu1, b1 = sum(cpu_seconds(p.pid) for p in procs), output_bytes(work, n)
        self.t1 = time.time()
        self.cpu, self.mb = cpu1 - cpu0, (b1 - b0) / 1e6
        self.load = os.getloadavg()[0]
        self.rss = max(stop_and_peak_rss(p) for p in procs)


def setup(n: int, rate: int, work: Path, mode: str) -> TmuxServer:
    script = work / "printer.py"
    script.write_text(PRINTER)
    (work / "counts").write_bytes(bytes(8 * n))
    return _panes(n, lambda i: f"{sys.executable} -S {script} {rate} {work / 'counts'} {i} {mode}")


def setup_spinners(n: int, work: Path) -> TmuxServer:
    """N panes running `gemini` (the spinner above, named so the Gemini CLI rules apply)."""
    script = work / "bin" / "gemini"
    script.parent.mkdir()
    script.write_text("#!/usr/bin/env python3\n" + SPINNER)
    script.chmod(0o755)
    return _panes(n, lambda _: str(script))


def _panes(n: int, command: Callable[[int], str]) -> TmuxServer:
    """A tmux server with `n` panes, ten windows a session, pane i running `command(i)`.
    Stopped half-way (SIGTERM), it kills the server: no printer is left running."""
    tmux = TmuxServer()
    try:
        tmux.start("s0", "sleep 100000")
        for i in range(n):
            session = f"s{i // 10}"
            if i % 10 == 0 and i:
                tmux.new_session(session, command(i))
            elif i == 0:
                tmux.cmd("respawn-pane", "-k", "-t", "s0:0", command(i))
            else:
                tmux.new_window(session, f"p{i}", command(i))
    except BaseException:
        tmux.kill()
        raise
    return tmux


def proc_times(pid: int, children: bool = False) -> float:
    """CPU seconds of a process (with `children`: also of its reaped descendants)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = int(fields[11]) + int(fields[12])
    if children:
        ticks += int(fields[13]) + int(fields[14])
    return ticks / os.sysconf("SC_CLK_TCK")


COUNTING_TMUX = """#!/bin/sh
case " $* " in *" capture-pane "*) echo c >> {count} ;; esac
exec {tmux} "$@"
"""


def counting_tmux(work: Path) -> tuple[Path, Path]:
    """A `tmux` first on the watched host's PATH that counts capture-pane calls (one
    line each in the returned file) and execs the real one: (its directory, the file)."""
    real = shutil.which("tmux")
    assert real is not None
    d, count = work / "count-bin", work / "captures"
    d.mkdir()
    (d / "tmux").write_text(COUNTING_TMUX.format(count=count, tmux=real))
    (d / "tmux").chmod(0o755)
    count.touch()
    return d, count


def captures(count: Path) -> int:
    return len(count.read_bytes()) // 2  # one "c\n" per capture


def run_spinner_case(
    sshd: Sshd, tmux: TmuxServer, work: Path, count: Path, n: int, seconds: float, reread: float
) -> tuple[float, float, float, float, float]:
    """One collector run over the spinner panes: captures/s, collector CPU %, tmux server
    CPU % (both over the measured window), sshd-and-children CPU % (over the collector's
    life: child times land only once reaped), peak RSS MiB."""
    config = work / f"reread-{reread:g}.toml"
    config.write_text(f"screen_reread = {reread}\n")
    argv = [sys.executable, "-m", "paneboard.cli", "agent", "--stdout", "--config", str(config)]
    argv += [*sshd.ssh_args(), "--tmux-socket", tmux.name]
    assert sshd.proc is not None and tmux.pid is not None
    host0, life0 = proc_times(sshd.proc.pid, children=True), time.time()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(WARMUP + n / 20)
    t0, cpu0, tm0, c0 = time.time(), cpu_seconds(proc.pid), proc_times(tmux.pid), captures(count)
    time.sleep(seconds)
    t1, cpu1, tm1, c1 = time.time(), cpu_seconds(proc.pid), proc_times(tmux.pid), captures(count)
    rss = stop_and_peak_rss(proc)
    time.sleep(1.0)  # the connection's sshd exits and is reaped: its children's times land
    host1, life1 = proc_times(sshd.proc.pid, children=True), time.time()
    span = t1 - t0
    return (
        (c1 - c0) / span,
        100 * (cpu1 - cpu0) / span,
        100 * (tm1 - tm0) / span,
        100 * (host1 - host0) / (life1 - life0),
        rss / 1024,
    )


def spinner_rows(n: int, seconds: float) -> list[tuple[str, float, float, float, float]]:
    with tempfile.TemporaryDirectory(prefix="pb-bench-", ignore_cleanup_errors=True) as d:
        work = Path(d)
        bin_dir, count = counting_tmux(work)
        path = f"{bin_dir}:{os.environ.get('PATH', '/usr/bin:/bin')}"
        sshd = Sshd(work / "sshd", extra=(f"SetEnv PATH={path}",)).start()
        try:
            tmux = setup_spinners(n, work)
            try:
                rows = []
                for reread in (0.4, 0.0):
                    row = run_spinner_case(sshd, tmux, work, count, n, seconds, reread)
                    rows.append((f"{reread:g}", *row))
            finally:
                tmux.kill()
        finally:
            sshd.stop()
    return rows


def output_bytes(work: Path, n: int) -> int:
    """Bytes the printers have written: each keeps its count in its own 8-byte slot of one
    shared file. (They used to replace a count file each 0.1 s: at 200 panes that file
    system churn alone took ~0.4 of this machine's 2 cores, in kernel threads, and
    the collector's delay measured the harness's load more than the collector.)"""
    data = (work / "counts").read_bytes()
    return sum(struct.unpack_from(f"<{n}q", data))


def baseline_tree(rev: str, dest: Path) -> dict[str, str]:
    """The collector as it was at git revision `rev`: its packages' sources extracted
    into `dest`, and the environment that runs them (PYTHONPATH before the checkout's
    own editable install), so a change is measured against its own before in one run."""
    dest.mkdir(parents=True, exist_ok=True)
    tar = subprocess.run(
        ["git", "-C", str(ROOT), "archive", rev, "src", "agent/src", "protocol/src", "server/src"],
        check=True,
        capture_output=True,
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=tar, check=True)
    paths = [str(dest / d) for d in ("src", "agent/src", "protocol/src", "server/src")]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}


def run_collector(
    sshd: Sshd, tmux: TmuxServer, work: Path, n: int, seconds: float, env: dict[str, str] | None = None
) -> tuple[Window, list[float]]:
    argv = [sys.executable, "-m", "paneboard.cli", "agent", "--stdout", *sshd.ssh_args()]
    proc = subprocess.Popen(
        [*argv, "--tmux-socket", tmux.name], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env
    )
    stamped: list[tuple[float, float]] = []  # (arrived, written)

    def read() -> None:
        assert proc.stdout is not None
        for raw in proc.stdout:
            now = time.time()
            msg = json.loads(raw).get("msg")
            if msg:
                stamped.append((now, float(msg.split()[1])))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    threading.Timer(WARMUP + n / 20, profile, (proc.pid, seconds)).start()
    w = Window([proc], work, n, seconds)
    reader.join(timeout=5)
    return w, [arrived - sent for arrived, sent in stamped if w.t0 <= sent <= w.t1]


DRAIN = r"""
import asyncio, sys
from paneboard_agent.transport.ssh import SSHTarget, SSHTransport
port, key, known, sock, sessions = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]

async def main():
    t = SSHTransport(SSHTarget("127.0.0.1", int(port), "root", (key,), known))
    await t.connect()
    async def drain(s):
        ch = await t.open_process(["tmux", "-u", "-L", sock, "-N", "-C", "attach-session", "-t", "=" + s,
                                   "-f", "ignore-size,read-only,pause-after=5"])
        while await ch.read(65536):
            pass
    await asyncio.gather(*(drain(s) for s in sessions))

asyncio.run(main())
"""


def run_drain(
    sshd: Sshd, tmux: TmuxServer, work: Path, n: int, seconds: float, sessions: list[str]
) -> Window:
    argv = [sys.executable, "-c", DRAIN, str(sshd.port), str(sshd.client_key), str(sshd.known_hosts)]
    proc = subprocess.Popen(
        [*argv, tmux.name, *sessions], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    return Window([proc], work, n, seconds)


def openssh_args(sshd: Sshd) -> list[str]:
    return [
        "-T",
        "-p",
        str(sshd.port),
        "-i",
        str(sshd.client_key),
        "-o",
        f"UserKnownHostsFile={sshd.known_hosts}",
        "-o",
        "StrictHostKeyChecking=yes",
        "-o",
        "IdentitiesOnly=yes",
        "-o",
        "BatchMode=yes",
        f"{sshd.user}@127.0.0.1",
    ]


def run_openssh(
    sshd: Sshd, tmux: TmuxServer, work: Path, n: int, seconds: float, sessions: list[str]
) -> Window:
    """The floor: OpenSSH's own client, one `ssh ... tmux -C attach` per session, output to
    /dev/null (stdin held open: control mode detaches at end of input). Costs the SSH
    crypto and the channel reads, nothing else."""
    procs = [
        subprocess.Popen(
            [
                "ssh",
                *openssh_args(sshd),
                "tmux",
                "-u",
                "-L",
                tmux.name,
                "-N",
                "-C",
                "attach-session",
                "-t",
                "=" + s,
                "-f",
                "ignore-size,read-only,pause-after=5",
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for s in sessions
    ]
    return Window(procs, work, n, seconds)


def pct(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, round(p / 100 * (len(values) - 1)))]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--panes", type=int, nargs="+", default=[50, 200])
    ap.add_argument("--seconds", type=float, default=short(20.0, 6.0))
    ap.add_argument("--rate", type=int, default=2000, help="bytes per second per pane (text)")
    ap.add_argument("--modes", nargs="+", choices=["text", "spin"], default=["text", "spin"])
    ap.add_argument("--spinners", type=int, default=50, help="panes animating a spinner (spinner case)")
    ap.add_argument("--case", choices=["all", "stream", "spinner"], default="all")
    ap.add_argument(
        "--baseline",
        metavar="REV",
        help="also run the collector as it was at git revision REV (stream case), same panes, same run",
    )
    ap.add_argument(
        "--runs", type=int, default=1, help="repeat each stream row; medians and spread are printed"
    )
    args = ap.parse_args()
    unwind_on_signals()
    print(machine_line("start"), flush=True)
    if args.case in ("all", "stream"):
        stream_case(args)
    if args.case in ("all", "spinner"):
        spinner_case(args)
    print(machine_line("end"))
    return 0


def spinner_case(args: argparse.Namespace) -> None:
    rows = spinner_rows(args.spinners, args.seconds)
    print(
        f"spinner case over sshd: {args.spinners} panes of `gemini` redrawing a spinner every 80 ms,"
        f" {args.seconds:g} s measured per run"
    )
    print(
        f"{'screen_reread':>13} | {'captures/s':>10} | {'collector CPU %':>15} | {'tmux CPU %':>10} |"
        f" {'sshd+children CPU %':>19} | {'RSS MiB':>7}"
    )
    for name, caps, cpu, tm, host, rss in rows:
        print(f"{name:>13} | {caps:>10.1f} | {cpu:>15.1f} | {tm:>10.1f} | {host:>19.1f} | {rss:>7.1f}")
    print("captures/s: capture-pane calls on the watched host (a counting tmux wrapper on its PATH);")
    print("tmux CPU: the tmux server; sshd+children: sshd and all it ran for the collector (the shell,")
    print("each tmux client and ps), per second of the collector's life. 0 = no re-read while output flows.")


def stream_case(args: argparse.Namespace) -> None:
    rows = []
    with tempfile.TemporaryDirectory(prefix="pb-bench-base-", ignore_cleanup_errors=True) as base_dir:
        base_env = baseline_tree(args.baseline, Path(base_dir)) if args.baseline else None
        for n in args.panes:
            for mode in args.modes:
                for _ in range(args.runs):
                    rows.extend(stream_run(args, n, mode, base_env))
    print(
        f"collector over sshd: {args.seconds:g} s measured per run after {WARMUP:g} s warm-up;"
        f" text = {args.rate} B/s per pane in 0.1 s chunks, spin = one spinner redraw per pane every 0.1 s;"
        " 2 OSC 7501 reports/s per pane"
    )
    print(
        f"{'panes':>5} {'mode':>5} {'who':>8} {'MB':>6} | {'CPU s/MB':>9} {'asyncssh':>9} {'openssh':>8}"
        f" {'x ssh':>6} | {'RSS MiB':>8} {'drain':>6} | {'delay p50':>9} {'p99 ms':>7} {'n':>5} | {'load':>5}"
    )
    medians: dict[tuple[int, str, str], list[tuple[float, float]]] = {}
    for n, mode, who, coll, drain, openssh, delays in rows:
        per = coll.cpu / coll.mb
        ratio = per / max(1e-9, openssh.cpu / openssh.mb)
        p99 = pct(delays, 99) * 1000
        medians.setdefault((n, mode, who), []).append((ratio, p99))
        print(
            f"{n:>5} {mode:>5} {who:>8} {coll.mb:>6.1f} | {per:>9.3f} {drain.cpu / drain.mb:>9.3f}"
            f" {openssh.cpu / openssh.mb:>8.3f} {ratio:>6.1f} |"
            f" {coll.rss / 1024:>8.1f} {drain.rss / 1024:>6.1f} |"
            f" {pct(delays, 50) * 1000:>9.1f} {p99:>7.1f} {len(delays):>5} |"
            f" {coll.load:>5.1f}"
        )
    if args.runs > 1:
        print("medians over runs (spread min-max):")
        for (n, mode, who), vals in medians.items():
            # a run whose reports all fell outside its window has no delay (nan): left out
            ratios = sorted(v[0] for v in vals)
            p99s = sorted(v[1] for v in vals if v[1] == v[1]) or [float("nan")]
            print(
                f"{n:>5} {mode:>5} {who:>8}: x ssh {pct(ratios, 50):.1f} ({ratios[0]:.1f}-{ratios[-1]:.1f}),"
                f" p99 {pct(p99s, 50):.0f} ms ({p99s[0]:.0f}-{p99s[-1]:.0f})"
            )
    print("CPU s/MB of pane output: the collector; asyncssh = a drain-only asyncssh client on the same")
    print("channels (no parsing); openssh = one `ssh ... tmux -C attach` per session, output to /dev/null;")
    print(
        "x ssh = collector / openssh (goal <= 3). load = 1-min load average when the collector's run ended."
    )
    print("who: `now` = this checkout's collector; `REV` = the collector at --baseline REV, same panes.")


def stream_run(
    args: argparse.Namespace, n: int, mode: str, base_env: dict[str, str] | None
) -> list[tuple[int, str, str, Window, Window, Window, list[float]]]:
    """One set of panes measured by OpenSSH, the asyncssh drain, this collector and
    (with --baseline) the baseline collector, one after the other."""
    out = []
    with tempfile.TemporaryDirectory(prefix="pb-bench-", ignore_cleanup_errors=True) as d:
        work = Path(d)
        sshd = Sshd(work / "sshd").start()
        sessions = [f"s{i}" for i in range((n + 9) // 10)]
        try:
            tmux = setup(n, args.rate, work, mode)
            try:
                openssh = run_openssh(sshd, tmux, work, n, args.seconds, sessions)
                drain = run_drain(sshd, tmux, work, n, args.seconds, sessions)
                coll, delays = run_collector(sshd, tmux, work, n, args.seconds)
                out.append((n, mode, "now", coll, drain, openssh, delays))
                if base_env is not None:
                    coll, delays = run_collector(sshd, tmux, work, n, args.seconds, base_env)
                    out.append((n, mode, args.baseline[:8], coll, drain, openssh, delays))
            finally:
                tmux.kill()
        finally:
            sshd.stop()
    return out


if __name__ == "__main__":
    sys.exit(main())
