"""A real tmux server on a private socket, for tests that need one.

`tmux -L pb-test-<random> -f /dev/null`: no user config, a socket no one else uses,
killed (and its socket removed) at teardown. The socket lives in tmux's default
directory on purpose, so the same server is reachable through a loopback sshd.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shlex
import signal
import subprocess
import time
from pathlib import Path

SHELL = "bash --noprofile --norc"


class TmuxServer:
    def __init__(self, name: str | None = None) -> None:
        self.name = name or f"pb-test-{secrets.token_hex(4)}"
        self.env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE", "TMUX_TMPDIR")}
        self.env["PS1"] = "$ "

    def base(self) -> list[str]:
        return ["tmux", "-L", self.name, "-f", "/dev/null"]

    def cmd(self, *args: str, check: bool = True) -> str:
        res = subprocess.run(
            [*self.base(), *args], capture_output=True, text=True, env=self.env, timeout=10, check=False
        )
        if check and res.returncode != 0:
            raise RuntimeError(f"tmux {' '.join(args)}: {res.stderr.strip()}")
        return res.stdout

    pid: int | None = None

    def start(self, session: str = "main", command: str = SHELL) -> TmuxServer:
        self.cmd("new-session", "-d", "-s", session, "-x", "120", "-y", "40", command)
        self.pid = int(self.cmd("display-message", "-p", "#{pid}").strip())
        self.cmd("set-option", "-g", "default-command", SHELL)
        self.cmd("set-option", "-g", "remain-on-exit", "off")
        return self

    def new_window(self, session: str, name: str, command: str = SHELL) -> str:
        """Open a window; returns its pane id (%N)."""
        return self.cmd(
            "new-window", "-d", "-P", "-F", "#{pane_id}", "-t", f"{session}:", "-n", name, command
        ).strip()

    def new_session(self, session: str, command: str = SHELL) -> str:
        return self.cmd(
            "new-session", "-d", "-P", "-F", "#{pane_id}", "-s", session, "-x", "120", "-y", "40", command
        ).strip()

    def send(self, target: str, line: str) -> None:
        """Type a line into a pane's shell (literally, then Enter)."""
        self.cmd("send-keys", "-t", target, "-l", line)
        self.cmd("send-keys", "-t", target, "Enter")

    def panes(self) -> list[str]:
        return self.cmd("list-panes", "-a", "-F", "#{pane_id}", check=False).split()

    def socket_path(self) -> Path:
        return Path(f"/tmp/tmux-{os.getuid()}") / self.name

    def kill(self) -> None:
        """kill-server; if the server lingers (tmux 3.3a waits for control clients whose
        far end died), kill its clients and then the server itself, by pid."""
        clients = self.cmd("list-clients", "-F", "#{client_pid}", check=False).split()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.cmd("kill-server", check=False)
        if self.pid is not None and not _exited(self.pid, 3.0):
            for pid in [*(int(c) for c in clients if c.isdigit()), self.pid]:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            _exited(self.pid, 3.0)
        self.socket_path().unlink(missing_ok=True)


def _exited(pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except OSError:
            return True
        time.sleep(0.05)
    return False


def printf_cmd(*chunks: bytes) -> str:
    """A shell `printf` writing exactly these bytes (octal escapes, no interpretation)."""
    data = b"".join(chunks)
    return "printf " + shlex.quote("".join(f"\\{b:03o}" for b in data))


class TerminalClient:
    """A real tmux client on a pty, read continuously: a person's terminal, attached.

    Flow control depends on it: with only a control client attached, tmux simply stops
    reading a pane whose output nobody takes; with a terminal attached it keeps
    reading, and a control client that falls behind gets `%pause` instead.
    """

    def __init__(self, server: TmuxServer, session: str = "main") -> None:
        import pty
        import threading

        self.master, slave = pty.openpty()
        self.proc = subprocess.Popen(
            [*server.base(), "attach-session", "-t", session],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env={**server.env, "TERM": "xterm-256color"},
            start_new_session=True,
        )
        os.close(slave)
        self.read_bytes = 0
        self._thread = threading.Thread(target=self._drain, daemon=True)
        self._thread.start()

    def _drain(self) -> None:
        while True:
            try:
                chunk = os.read(self.master, 65536)
            except OSError:
                return
            if not chunk:
                return
            self.read_bytes += len(chunk)

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=5)
        os.close(self.master)
        self._thread.join(timeout=5)
