"""Hands changes to the sink without ever making the collector wait for it.

Watching tmux must never stall because the sink is slow (a WebSocket being
re-established, a blocked stdout). The pump keeps at most one pending item per pane
(and per host): a newer classification replaces an older one not yet delivered, so
memory is bounded by the number of panes, and a slow sink sees the latest state.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from paneboard_agent.uplink.health import Health
from paneboard_agent.uplink.sink import PaneKey, PaneUpdate, Sink

log = logging.getLogger(__name__)

#: one pending item per pane, per host's status and per host's health
Slot = tuple[str, PaneKey | str]


class Pump:
    """A `Reports`: what the watchers hand over, delivered to one `Sink` in its own task."""

    def __init__(self, sink: Sink) -> None:
        self._sink = sink
        # the pending delivery per slot, as the sink call still to make (and its name, for the log)
        self._pending: dict[Slot, tuple[str, Callable[[], Awaitable[None]]]] = {}
        self._wake = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()

    def changed(self, update: PaneUpdate) -> None:
        self._put(("pane", update.key), "changed", lambda: self._sink.pane_changed(update))

    def gone(self, key: PaneKey, t: float) -> None:
        self._put(("pane", key), "gone", lambda: self._sink.pane_gone(key, t))

    def host(self, host: str, reachable: bool, t: float, error: str | None) -> None:
        self._put(("host", host), "host", lambda: self._sink.host_status(host, reachable, t, error))

    def health(self, host: str, health: Health) -> None:
        """The link's health (health.py); a sink with no use for it ignores it."""
        self._put(("health", host), "health", lambda: self._sink.host_health(host, health))

    def _put(self, slot: Slot, kind: str, deliver: Callable[[], Awaitable[None]]) -> None:
        # a replaced item keeps its place: order across panes stays first-come
        self._pending[slot] = (kind, deliver)
        self._idle.clear()
        self._wake.set()

    @property
    def pending(self) -> int:
        """Items not yet handed to the sink (at most one per pane and per host)."""
        return len(self._pending)

    async def drained(self) -> None:
        """Wait until everything queued so far was handed to the sink."""
        await self._idle.wait()

    async def run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._pending:
                slot = next(iter(self._pending))
                kind, deliver = self._pending.pop(slot)
                try:
                    await deliver()
                except asyncio.CancelledError:
                    raise
                except Exception:
                    log.exception("sink failed on %s", kind)
            self._idle.set()
