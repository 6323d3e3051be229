"""Fan-out of committed changes to live-stream clients, with a bounded queue each.

A change batch is encoded once (the SSE frame is the same bytes for every client)
and offered to every subscriber without awaiting; a subscriber whose queue is full
is dropped (its stream ends with a `reset` event telling it to reconnect and resume)
so one slow phone cannot grow the server's memory.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any

from paneboard_protocol.views import PaneView, StreamChange

from .. import fastjson

_rev = attrgetter("rev")


def sse_frame(event: str, data: Any, id_: int | None = None) -> bytes:
    """One SSE event (`data`: its view, `paneboard_protocol.views`); encoded once per
    frame and shared by every client."""
    body = fastjson.encode(data)
    head = f"id: {id_}\n" if id_ is not None else ""
    return b"".join((f"{head}event: {event}\ndata: ".encode(), body, b"\n\n"))


END: tuple[int, bytes] = (-1, b"")  # queued by `Subscriber.end`: the stream must stop


@dataclass(eq=False)
class Subscriber:
    maxsize: int
    queue: asyncio.Queue[tuple[int, bytes]] = field(init=False)
    dropped: bool = False
    wake: asyncio.Event = field(default_factory=asyncio.Event)

    def __post_init__(self) -> None:
        self.queue = asyncio.Queue(self.maxsize)

    def end(self) -> None:
        """Stop this stream now (its credential was revoked): whatever is queued is
        dropped and the reader gets the end marker, a negative rev, next."""
        self.dropped = True
        while not self.queue.empty():
            self.queue.get_nowait()
        self.queue.put_nowait(END)

    def offer(self, item: tuple[int, bytes]) -> bool:
        if self.dropped:
            return False
        try:
            self.queue.put_nowait(item)
        except asyncio.QueueFull:
            self.dropped = True
            self.wake.set()
            return False
        return True


class Hub:
    """Coalesces committed changes into at most one frame per `interval` (latest state
    per pane wins), so under load a client gets a few large frames a second instead of
    one per commit; an idle hub sends the next change at once."""

    def __init__(self, maxsize: int = 512, interval: float = 0.02) -> None:
        self.maxsize = maxsize
        self.interval = interval
        self.subscribers: set[Subscriber] = set()
        self.published = 0
        self.dropped = 0
        self._panes: dict[int, PaneView] = {}
        self._gone: set[int] = set()
        self._rev = 0
        self._last = float("-inf")
        self._handle: asyncio.Handle | None = None

    def subscribe(self) -> Subscriber:
        sub = Subscriber(self.maxsize)
        self.subscribers.add(sub)
        return sub

    def unsubscribe(self, sub: Subscriber) -> None:
        self.subscribers.discard(sub)

    def publish(self, rev: int, panes: list[PaneView], gone: list[int]) -> None:
        if not self.subscribers or (not panes and not gone):
            return
        for p in panes:
            self._panes[p.id] = p
            self._gone.discard(p.id)
        for g in gone:
            self._panes.pop(g, None)
            self._gone.add(g)
        self._rev = max(self._rev, rev)
        if self._handle is None:
            loop = asyncio.get_running_loop()
            delay = self._last + self.interval - loop.time()
            self._handle = loop.call_later(delay, self.flush) if delay > 0 else loop.call_soon(self.flush)

    def flush(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        if not self._panes and not self._gone:
            return
        with contextlib.suppress(RuntimeError):
            self._last = asyncio.get_running_loop().time()
        panes = sorted(self._panes.values(), key=_rev)
        frame = sse_frame(
            "change", StreamChange(rev=self._rev, panes=panes, gone=sorted(self._gone)), self._rev
        )
        item = (self._rev, frame)
        self._panes, self._gone = {}, set()
        self.published += 1
        for sub in list(self.subscribers):
            if not sub.offer(item):
                self.dropped += 1
                self.subscribers.discard(sub)
