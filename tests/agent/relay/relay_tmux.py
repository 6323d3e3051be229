"""Test helpers for the relay: a real tmux server on a private socket, and its panes.

(Named `relay_tmux`, not `conftest`, so it never collides with another area's helpers;
the `tmux` fixture is registered in conftest.py.)

A real tmux server on a private socket, and helpers to run commands in its panes.

Every test gets its own server (`tmux -L pb-relay-<random> -f /dev/null`), killed at
teardown. A pane's raw output is captured with `pipe-pane` into a file; the command in
the pane waits for one line on its input before it starts, so the capture is attached
before the first byte is written.
"""

from __future__ import annotations

import os
import secrets
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.proctier import spawns
from support.tools import require_tool
from support.wait import wait_for

HERE = Path(__file__).parent
PYTHON = sys.executable
PANEBOARD = str(Path(sys.executable).parent / "paneboard")
PROBE = str(HERE / "claude_like_probe.py")


class Tmux:
    def __init__(self, tmp: Path) -> None:
        self.socket = f"pb-relay-{secrets.token_hex(4)}"
        self.tmp = tmp
        self.started = False
        # Not the tmux we may be running in: a private server, whatever the environment.
        self.env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE", "TMUX_TMPDIR")}

    def cmd(self, *args: str, check: bool = True) -> str:
        proc = subprocess.run(
            ["tmux", "-L", self.socket, "-f", "/dev/null", *args],
            capture_output=True,
            text=True,
            timeout=10,
            env=self.env,
        )
        if check and proc.returncode != 0:
            raise AssertionError(f"tmux {' '.join(args)} failed: {proc.stderr.strip()}")
        return proc.stdout

    def pane(
        self,
        shell_command: str,
        *,
        width: int = 100,
        height: int = 30,
        gate: bool = True,
        release: bool = True,
    ) -> Pane:
        """Start `shell_command` (run by sh) in a new pane, capture its raw output.

        With `release` False the gated command waits until the caller calls
        `Pane.release()` (say, once a collector watches the pane's session)."""
        name = f"p{secrets.token_hex(3)}"
        rc = self.tmp / f"{name}.rc"
        # tmux 3.3a's #{pane_dead_status} is sometimes empty for a dead pane, so the
        # pane's shell records the status itself.
        rcq = shlex.quote(str(rc))
        inner = f"{shell_command}; echo $? > {rcq}.tmp; mv {rcq}.tmp {rcq}"
        if gate:
            inner = f"read _gate; {inner}"
        if not self.started:
            # A session that outlives every test pane, so the server never exits under us.
            self.cmd("new-session", "-d", "-s", "keep", "sleep 3600")
            self.cmd("set-option", "-g", "remain-on-exit", "on")
            # (not `window-size manual` globally: tmux 3.3a then segfaults on new-session)
            self.started = True
        self.cmd(
            "new-session",
            "-d",
            "-s",
            name,
            "-x",
            str(width),
            "-y",
            str(height),
            "sh -c " + shlex.quote(inner),
        )
        pane_id = self.cmd("display-message", "-p", "-t", name, "#{pane_id}").strip()
        raw = self.tmp / f"{name}.raw"
        self.cmd("pipe-pane", "-t", pane_id, f"cat >> {shlex.quote(str(raw))}")
        pane = Pane(self, name, pane_id, raw, rc)
        if gate and release:
            pane.release()
        return pane

    def kill(self) -> None:
        self.cmd("kill-server", check=False)


class Pane:
    def __init__(self, tmux: Tmux, session: str, pane_id: str, raw: Path, rc: Path) -> None:
        self.tmux, self.session, self.id, self.raw, self.rc = tmux, session, pane_id, raw, rc

    def output(self) -> bytes:
        return self.raw.read_bytes() if self.raw.exists() else b""

    def release(self) -> None:
        """Let a gated command start."""
        self.keys("Enter")

    def keys(self, *keys: str, literal: bool = False) -> None:
        self.tmux.cmd("send-keys", "-t", self.id, *(["-l"] if literal else []), *keys)

    def dead_status(self, timeout: float = 30.0) -> int:
        """Wait for the pane's command to exit; return its exit status."""

        def status() -> str | None:
            return self.rc.read_text().strip() if self.rc.exists() else None

        return int(str(wait_for(status, timeout, f"the command in pane {self.id} to exit")))

    def screen(self) -> str:
        return self.tmux.cmd("capture-pane", "-p", "-t", self.id)


@pytest.fixture
@spawns
def tmux(tmp_path: Path) -> Iterator[Tmux]:
    """A fresh tmux server for one test, killed afterwards."""
    require_tool("tmux")
    server = Tmux(tmp_path)
    try:
        yield server
    finally:
        server.kill()


def q(*words: str) -> str:
    return " ".join(shlex.quote(w) for w in words)


__all__ = ["PANEBOARD", "PROBE", "PYTHON", "Pane", "Tmux", "q"]
