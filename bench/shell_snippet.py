"""The protocol author's "wrap a long command" snippet, in real tmux: how often the
shell's `working` holds through the command it runs.

    status() { printf '\\e]7501;state=%s:msg=%s\\e\\\\' "$1" "$(… | base64 | tr -d '\\n')"; }
    status working "Syncing photos"; sleep 3 && status done "Photos synced" || status error …

For each collector (the Python of a checkout: this one, and e.g. a worktree of main as
the baseline, side by side), each shell (bash, zsh, no rc files: no prompt marks) and
each way (typed: the command a second and a half after `status working`; pasted: both
lines at once), RUNS panes run the snippet in one tmux server watched by that checkout's
`paneboard agent --stdout --local`. A run *held* when the pane said `working` from its
first `working` until `done` (typed) or `error` (pasted, the command fails), with
`sleep` seen in front meanwhile, and nothing else in between; it held *through the
command* when it said `working` as long as `sleep` was seen in front, even if a look
then saw the shell back with nothing live before the result came (a "gap").

    uv run python bench/shell_snippet.py --python /path/to/main/.venv/bin/python
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

STATUS = (
    r"""status() { printf '\e]7501;state=%s:msg=%s\e\\' "$1" "$(printf '%s' "$2" | base64 | tr -d '\n')"; }"""
)
WORKING = 'status working "Syncing photos"'
TYPED = 'sleep 3 && status done "Photos synced" || status error "rsync failed"'
PASTED = 'sleep 3; false && status done "Photos synced" || status error "rsync failed"'
SHELLS = {"bash": "bash --noprofile --norc", "zsh": "zsh -f"}


class Tmux:
    def __init__(self) -> None:
        self.name = f"pb-bench-{secrets.token_hex(4)}"
        self.env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE")}
        self.env["PS1"] = "$ "

    def cmd(self, *args: str) -> str:
        argv = ["tmux", "-L", self.name, "-f", "/dev/null", *args]
        return subprocess.run(
            argv, capture_output=True, text=True, env=self.env, timeout=20, check=True
        ).stdout

    def kill(self) -> None:
        subprocess.run(
            ["tmux", "-L", self.name, "kill-server"], capture_output=True, env=self.env, check=False
        )


class Collector:
    """`paneboard agent --stdout --explain` of one checkout; its lines, collected."""

    def __init__(self, python: str, socket: str) -> None:
        argv = [
            python,
            "-m",
            "paneboard.cli",
            "agent",
            "--stdout",
            "--explain",
            "--local",
            "--tmux-socket",
            socket,
        ]
        env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "VIRTUAL_ENV")}
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
        self.lines: list[dict[str, Any]] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            try:
                self.lines.append(json.loads(raw))
            except ValueError:
                continue

    def of(self, pane: str) -> list[dict[str, Any]]:
        return [o for o in list(self.lines) if o.get("pane") == pane]

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=20)


def verdict(lines: list[dict[str, Any]], last: str) -> str:
    """held: `working` from the first `working` to the result; gap: `working` while the
    command ran, then a moment of nothing (the shell back in front, computing the
    report) before the result; dropped: anything else."""
    states = [o.get("state") for o in lines]
    if "working" not in states or last not in states:
        return "no result"
    start, end = states.index("working"), states.index(last)
    between = lines[start:end]
    ran = [i for i, o in enumerate(between) if o.get("process") == "sleep"]
    if ran and all(o.get("state") == "working" for o in between[: ran[-1] + 1]):
        after = between[ran[-1] + 1 :]
        if after and all(o.get("state") is None and o.get("process") is None for o in after):
            return "gap"
    held = all(o.get("state") == "working" for o in between) and any(
        o.get("process") == "sleep" for o in between
    )
    return "held" if held else "dropped"


def one(python: str, shell: str, way: str, runs: int) -> dict[str, int]:
    tmux = Tmux()
    tmux.cmd("new-session", "-d", "-s", "main", "-x", "120", "-y", "40", SHELLS[shell])
    collector = Collector(python, tmux.name)
    try:
        panes = [
            tmux.cmd("new-window", "-d", "-P", "-F", "#{pane_id}", "-t", "main:", SHELLS[shell]).strip()
            for _ in range(runs)
        ]
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not all(collector.of(p) for p in panes):
            time.sleep(0.1)
        for p in panes:
            tmux.cmd("send-keys", "-t", p, "-l", STATUS)
            tmux.cmd("send-keys", "-t", p, "Enter")
        time.sleep(1)
        if way == "typed":
            for p in panes:
                tmux.cmd("send-keys", "-t", p, "-l", WORKING)
                tmux.cmd("send-keys", "-t", p, "Enter")
            time.sleep(1.5)  # a person types the next line
            for p in panes:
                tmux.cmd("send-keys", "-t", p, "-l", TYPED)
                tmux.cmd("send-keys", "-t", p, "Enter")
        else:
            for p in panes:
                tmux.cmd("send-keys", "-t", p, "-l", f"{WORKING}\n{PASTED}\n")
        last = "done" if way == "typed" else "error"
        deadline = time.monotonic() + 40
        while time.monotonic() < deadline and not all(
            any(o.get("state") == last for o in collector.of(p)) for p in panes
        ):
            time.sleep(0.2)
        out: dict[str, int] = {"held": 0, "gap": 0, "dropped": 0, "no result": 0}
        for p in panes:
            v = verdict(collector.of(p), last)
            out[v] += 1
            if v != "held" and os.environ.get("PB_BENCH_STORY"):
                story = [(o.get("t"), o.get("state"), o.get("process")) for o in collector.of(p)]
                print(f"  {v}: {story}", file=sys.stderr)
        return out
    finally:
        collector.stop()
        tmux.kill()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--python", action="append", default=[], help="another checkout's Python (repeatable)")
    p.add_argument("--runs", type=int, default=10, help="panes per collector, shell and way")
    args = p.parse_args()
    pythons = [*args.python, sys.executable]
    print(f"load (1 min) at start: {os.getloadavg()[0]:.2f}")
    for shell in SHELLS:
        for way in ("typed", "pasted"):
            for py in pythons:
                got = one(py, shell, way, args.runs)
                where = Path(py).parents[2] if len(Path(py).parents) > 2 else py
                through = got["held"] + got["gap"]
                line = f"{shell:4} {way:6} {where!s:24} through the command {through}/{args.runs}  {got}"
                print(line, flush=True)
    print(f"load (1 min) at end: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
