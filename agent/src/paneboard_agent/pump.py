"""Hands changes to the sink without ever making the collector wait for it.

Watching tmux must never stall because the sink is slow (a WebSocket being
re-established, a blocked stdout). The pump keeps at most one pending item per pane
(and per host): a newer classification replaces an older one not yet delivered, so
memory is bounded by the number of panes, and a slow sink sees the latest state.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from paneboard_agent.health import Health
from paneboard_agent.sink import PaneKey, PaneUpdate, Sink

log = logging.getLogger(__name__)


class Pump:
    def __init__(self, sink: Sink) -> None:
        self._sink = sink
        self._pending: dict[Any, tuple[str, Any]] = {}
        self._wake = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()

    def changed(self, update: PaneUpdate) -> None:
        self._put(("pane", update.key), ("changed", update))

    def gone(self, key: PaneKey, t: float) -> None:
        self._put(("pane", key), ("gone", (key, t)))

    def host(self, host: str, reachable: bool, t: float, error: str | None) -> None:
        self._put(("host", host), ("host", (host, reachable, t, error)))

    def health(self, host: str, health: Health) -> None:
        """The link's health (health.py), for a sink that takes it (`host_health`)."""
        if hasattr(self._sink, "host_health"):
            self._put(("health", host), ("health", (host, health)))

    def _put(self, slot: Any, item: tuple[str, Any]) -> None:
        # a replaced item keeps its place: order across panes stays first-come
        self._pending[slot] = item
        self._idle.clear()
        self._wake.set()

    async def drained(self) -> None:
        """Wait until everything queued so far was handed to the sink."""
        await self._idle.wait()

    async def run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._pending:
                slot = next(iter(self._pending))
                kind, payload = self._pending.pop(slot)
                try:
                    if kind == "changed":
                        await self._sink.pane_changed(payload)
                    elif kind == "gone":
                        await self._sink.pane_gone(*payload)
                    elif kind == "health":
                        await self._sink.host_health(*payload)  # type: ignore[attr-defined]  # checked in health()
                    else:
                        await self._sink.host_status(*payload)
                except asyncio.CancelledError:
                    raise
                except Exception:
                    log.exception("sink failed on %s", kind)
            self._idle.set()
