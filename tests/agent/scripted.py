"""A scripted tmux behind the `Transport` interface, for what real tmux cannot do on demand.

Real tmux is what the collector is tested against; this stands in only where the
situation cannot be produced on the machine running the tests: an old tmux (< 3.2),
a host without `ps`, a pane id that a restarted server gave to another process
between two polls. It speaks just enough control mode (`%begin`/`%end` replies,
`%output`) for the real `ControlClient` above it, and records every command.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence

from paneboard_agent.tmux.panes import END_FIELD, PANE_FIELDS
from paneboard_agent.transport import Channel, RunResult, Transport


def token_of(command: str | Sequence[str]) -> str:
    """The listing token a query asked for: its `-F` format's first field, in argv or in a
    control-mode command line (`-F "TOKEN\\011..."`)."""
    if not isinstance(command, str):
        argv = list(command)
        return argv[argv.index("-F") + 1].split("\t", 1)[0]
    m = re.search(r'-F "([0-9a-f]+)\\011', command)
    assert m is not None, command
    return m[1]


def asks_processes(argv: Sequence[str]) -> bool:
    """`ps`, or the /proc walk that falls back to it (procfs.py), alone (not in a look)."""
    return argv[0] == "ps" or (
        list(argv[:2]) == ["sh", "-c"] and " pb-procfs-" in argv[2] and "list-panes" not in argv[2]
    )


class ScriptedTmux(Transport):
    def __init__(self, version: str = "tmux 3.3a", ps_missing: bool = False) -> None:
        self.host = "scripted"
        self.version = version
        self.ps_missing = ps_missing
        self.sessions = ["main"]
        self.panes: dict[str, dict[str, str]] = {}
        self.runs: list[list[str]] = []
        self.opened: list[list[str]] = []
        self.channels: list[ScriptedChannel] = []

    def add_pane(self, pane: str, pid: int, command: str, window: str = "w") -> None:
        self.panes[pane] = {"pid": str(pid), "command": command, "window": window}

    listings = 0  # pane listings answered

    def pane_lines(self, token: str) -> bytes:
        self.listings += 1
        out = []
        for pane, p in self.panes.items():
            fields = ["$0", "@0", "0", pane, p["pid"], "0", "/dev/pts/9", "main", p["window"], p["command"]]
            assert len(fields) == len(PANE_FIELDS)
            out.append("\t".join([token, *fields, END_FIELD]))
        return "".join(line + "\n" for line in out).encode()

    def session_lines(self, token: str) -> bytes:
        return "".join(
            f"{token}\t${i}\t{name}\t{END_FIELD}\n" for i, name in enumerate(self.sessions)
        ).encode()

    async def output(self, pane: str, data: bytes) -> None:
        """A pane writes `data`: every attached control client gets `%output`."""
        escaped = "".join(chr(b) if 0x20 <= b < 0x7F and b != 0x5C else f"\\{b:03o}" for b in data)
        for ch in self.channels:
            ch.feed(f"%output {pane} {escaped}\n".encode())

    # --- Transport ---------------------------------------------------------------

    async def connect(self) -> None:
        return None

    async def open_process(self, argv: Sequence[str]) -> Channel:
        self.opened.append(list(argv))
        ch = ScriptedChannel(self)
        self.channels.append(ch)
        return ch

    async def run(self, argv: Sequence[str], timeout: float = 10.0, limit: int = 1 << 20) -> RunResult:
        argv = list(argv)
        self.runs.append(argv)
        if asks_processes(argv):  # a host with no /proc to walk (procfs.py): the script is ps
            # the script's last line carries ps's status (procfs.py); `ps` alone has none
            nonce = re.search(r"pb-procfs-(\w+)", argv[2]) if argv[0] == "sh" else None
            if self.ps_missing:
                if nonce:
                    return RunResult(0, f"pb-procfs-{nonce[1]} ps 127\n".encode(), b"sh: 1: ps: not found\n")
                return RunResult(127, b"", b"sh: 1: ps: not found\n")
            # no such pids: what ps says for pids it cannot see
            if nonce:
                return RunResult(0, f"pb-procfs-{nonce[1]} ps 1\n".encode(), b"")
            return RunResult(1, b"", b"")
        if "-V" in argv:
            return RunResult(0, f"{self.version}\n".encode(), b"")
        if "list-sessions" in argv:
            return RunResult(0, self.session_lines(token_of(argv)), b"")
        if "list-panes" in argv:
            return RunResult(0, self.pane_lines(token_of(argv)), b"")
        if "capture-pane" in argv:
            return RunResult(0, b"$ \n", b"")
        return RunResult(0, b"", b"")

    async def close(self) -> None:
        for ch in self.channels:
            await ch.close()


class ScriptedChannel(Channel):
    """One control client: answers the read commands the collector sends."""

    def __init__(self, tmux: ScriptedTmux) -> None:
        self.tmux = tmux
        self._out: asyncio.Queue[bytes] = asyncio.Queue()
        self._number = 0
        self.closed = False
        self.feed(self._reply(b"", flags=0))  # the attach's own reply: the client is ready

    def feed(self, data: bytes) -> None:
        if not self.closed:
            self._out.put_nowait(data)

    def _reply(self, body: bytes, flags: int = 1) -> bytes:
        self._number += 1
        head = f"%begin 1 {self._number} {flags}\n".encode()
        return head + body + f"%end 1 {self._number} {flags}\n".encode()

    async def read(self, n: int = 65536) -> bytes:
        return await self._out.get()

    async def write(self, data: bytes) -> None:
        for line in data.decode().splitlines():
            if line.startswith("display-message"):
                body = b"4242\n"
            elif line.startswith("list-sessions"):
                body = self.tmux.session_lines(token_of(line))
            elif line.startswith("list-panes"):
                body = self.tmux.pane_lines(token_of(line))
            else:
                body = b""
            self.feed(self._reply(body))

    async def close(self) -> None:
        if not self.closed:
            self._out.put_nowait(b"")
            self.closed = True
        if self in self.tmux.channels:
            self.tmux.channels.remove(self)

    async def wait(self) -> int | None:
        return 0

    async def stderr_text(self) -> str:
        return ""
