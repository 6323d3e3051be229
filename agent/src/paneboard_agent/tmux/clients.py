"""The session manager's control clients: one per tmux session, and which ones are ours.

Pane output reaches only the clients of the pane's session, so the watcher keeps one
read-only control client per session it watches. It records the pid of each client it
attached: after a lost link, tmux may still list them, and only those are detached.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from paneboard_agent.tmux import queries
from paneboard_agent.tmux.control import CommandError, ControlClient, Handler, attach_argv
from paneboard_agent.transport import Transport, TransportError

log = logging.getLogger("paneboard.agent")

#: seconds before a session whose attach failed is tried again (never hammer tmux)
RETRY_ATTACH = 10.0


@dataclass
class _Client:
    control: ControlClient
    pid: int | None = None
    watcher: asyncio.Task[None] | None = field(default=None, repr=False)


class ControlClients:
    """Attach, detach and look up control clients by session name."""

    def __init__(
        self, t: Transport, base: list[str], on_note: Handler, on_closed: Callable[[], None]
    ) -> None:
        self.t = t
        self.base = base
        self.ours: set[int] = set()  # pids of the control clients this process attached
        self._by_session: dict[str, _Client] = {}
        self._failures: dict[str, float] = {}
        self._on_note = on_note
        self._on_closed = on_closed

    def __contains__(self, session: object) -> bool:
        return session in self._by_session

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._by_session))

    def __len__(self) -> int:
        return len(self._by_session)

    def may_attach(self, session: str) -> bool:
        """Not attached, and no attach of it failed a moment ago."""
        if session in self._by_session:
            return False
        return time.monotonic() - self._failures.get(session, -1e9) >= RETRY_ATTACH

    def any(self) -> ControlClient | None:
        """A working client to send read commands through (tmux answers from memory)."""
        for c in self._by_session.values():
            if not c.control.closed.is_set() and c.pid is not None:
                return c.control
        return None

    def stale(self) -> set[int]:
        """Pids of clients we attached whose link broke without tmux's %exit: tmux may
        still list them (a remote client that cannot react lingers)."""
        live = {c.pid for c in self._by_session.values() if c.pid is not None}
        return self.ours - live

    async def detach_stale(self) -> None:
        """Detach control clients this process attached before a lost link.

        Called on every (re)connect, and before re-attaching after a client's link
        broke: the transport may open a fresh connection for the next command without
        the watcher ever seeing an error, so a reconnect alone would miss that case."""
        stale = self.stale()
        if stale:
            await queries.detach_stale(self.t, self.base, stale)
        self.ours -= stale

    async def attach(self, session: str, version: tuple[int, int], pause_after: int) -> None:
        argv = attach_argv(self.base, session, version, pause_after)
        chan = await self.t.open_process(argv)
        control = ControlClient(chan, session, self._on_note)
        client = _Client(control)
        self._by_session[session] = client
        try:
            block = await control.command("display-message -p '#{client_pid}'", timeout=10)
            text = b"".join(block.lines).decode(errors="replace").strip()
            if text.isdigit():
                client.pid = int(text)
                self.ours.add(client.pid)
            log.debug("%s: attached to session %r (%s)", self.t.host, session, " ".join(argv))
        except (TransportError, CommandError) as exc:
            err = await chan.stderr_text()
            log.warning("%s: cannot attach to session %r: %s", self.t.host, session, err or exc)
            self._failures[session] = time.monotonic()
            await self.detach(session)
            return
        client.watcher = asyncio.create_task(self._watch(session, client))

    async def _watch(self, session: str, client: _Client) -> None:
        await client.control.closed.wait()
        if self._by_session.get(session) is client:
            del self._by_session[session]
            if client.pid is not None and client.control.exit_reason is not None:
                # tmux said %exit: that client is gone. Without it (the link broke) the
                # remote client may linger, and is detached after reconnecting.
                self.ours.discard(client.pid)
            self._on_closed()

    async def detach(self, session: str, forget: bool = True) -> None:
        """Close the session's client; `forget` False keeps its pid for `detach_stale`."""
        client = self._by_session.pop(session, None)
        if client is None:
            return
        log.debug("%s: detaching from session %r", self.t.host, session)
        if client.watcher is not None:
            client.watcher.cancel()
        await client.control.close()
        if client.pid is not None and forget:
            self.ours.discard(client.pid)
