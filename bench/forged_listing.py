"""A pane program that names itself with a `%sessions-changed` line: the collector's CPU.

Issue 40 finding 2: tmux 3.3a copies argv[0] into `#{pane_current_command}` unescaped,
and a `%sessions-changed` line inside a listing's control-mode reply made the collector
re-list without pause. This runs a real tmux server with one such pane (owned by
`nobody`, run as root) and measures, per window of `--window` seconds, the CPU the
collector (`paneboard agent --stdout --local`) and the processes it waited for used,
and the commands the tmux server ran (the number in a control-mode `%begin`).

Baseline and new side by side in one run, rounds alternating:

    git archive <base-commit> agent protocol src | tar -x -C /tmp/base
    uv run --frozen python bench/forged_listing.py --baseline /tmp/base --rounds 3
"""

from __future__ import annotations

import argparse
import os
import secrets
import shlex
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

NAME = "sleep\nP\tX\n%sessions-changed\nx"


def tmux(sock: str, *args: str, stdin: bytes | None = None) -> bytes:
    return subprocess.run(
        ["tmux", "-L", sock, "-f", "/dev/null", *args], input=stdin, capture_output=True, check=True
    ).stdout


def commands_run(sock: str) -> int:
    out = tmux(sock, "-C", "attach-session", "-r", "-t", "=main", stdin=b"display-message -p x\n")
    return max(int(ln.split()[2]) for ln in out.splitlines() if ln.startswith(b"%begin "))


def cpu(pid: int) -> float:
    """utime + stime of the process and of the children it waited for, in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def one(sock: str, src: Path | None, window: float) -> tuple[float, int]:
    env = dict(os.environ)
    env.pop("TMUX", None)
    if src is not None:  # the baseline's sources before the installed ones
        env["PYTHONPATH"] = os.pathsep.join(str(src / p) for p in ("agent/src", "protocol/src", "src"))
    argv = [sys.executable, "-m", "paneboard.cli", "agent", "--stdout", "--local", "--tmux-socket", sock]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    try:
        assert proc.stdout is not None
        proc.stdout.readline()  # the first pane listed: connected and attached
        time.sleep(2.0)  # past the first sync
        c0, n0 = cpu(proc.pid), commands_run(sock)
        time.sleep(window)
        return cpu(proc.pid) - c0, commands_run(sock) - n0
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=20)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--baseline", type=Path, required=True, help="a tree of the base commit's sources")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--window", type=float, default=20.0)
    args = ap.parse_args()
    sock = f"pb-bench-{secrets.token_hex(4)}"
    quoted = "$'" + NAME.replace("\n", "\\n").replace("\t", "\\t") + "'"
    forger = "exec setpriv --reuid=65534 --regid=65534 --clear-groups bash -c " + shlex.quote(
        f"exec -a {quoted} sleep 100000"
    )
    tmux(sock, "new-session", "-d", "-s", "main", "-x", "120", "-y", "40", "bash --norc")
    tmux(sock, "new-session", "-d", "-s", "aaa", forger)
    results: dict[str, list[tuple[float, int]]] = {"baseline": [], "new": []}
    try:
        for _ in range(args.rounds):
            results["baseline"].append(one(sock, args.baseline, args.window))
            results["new"].append(one(sock, None, args.window))
    finally:
        subprocess.run(["tmux", "-L", sock, "kill-server"], capture_output=True, check=False)
    print(f"load (1 min) at the end: {os.getloadavg()[0]:.2f}; window {args.window:g} s")
    for name, rows in results.items():
        cpus = [c for c, _ in rows]
        cmds = [n for _, n in rows]
        print(
            f"{name:8s} CPU s/window median {statistics.median(cpus):.2f} "
            f"({min(cpus):.2f}-{max(cpus):.2f}); tmux commands median {statistics.median(cmds):.0f} "
            f"({min(cmds)}-{max(cmds)})"
        )


if __name__ == "__main__":
    main()
