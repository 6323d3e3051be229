"""Fan-out of committed changes to live-stream clients, with a bounded queue each.

A change batch is encoded once (the SSE frame is the same bytes for every client)
and offered to every subscriber without awaiting; a subscriber whose queue is full
is dropped (its stream ends with a `reset` event telling it to reconnect and resume)
so one slow phone cannot grow the server's memory.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any


def sse_frame(event: str, data: Any, id_: int | None = None) -> bytes:
    body = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    head = f"id: {id_}\n" if id_ is not None else ""
    return f"{head}event: {event}\ndata: {body}\n\n".encode()


@dataclass(eq=False)
class Subscriber:
    maxsize: int
    queue: asyncio.Queue[tuple[int, bytes]] = field(init=False)
    dropped: bool = False
    wake: asyncio.Event = field(default_factory=asyncio.Event)

    def __post_init__(self) -> None:
        self.queue = asyncio.Queue(self.maxsize)

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
    def __init__(self, maxsize: int = 512) -> None:
        self.maxsize = maxsize
        self.subscribers: set[Subscriber] = set()
        self.published = 0
        self.dropped = 0

    def subscribe(self) -> Subscriber:
        sub = Subscriber(self.maxsize)
        self.subscribers.add(sub)
        return sub

    def unsubscribe(self, sub: Subscriber) -> None:
        self.subscribers.discard(sub)

    def publish(self, rev: int, panes: list[dict[str, Any]], gone: list[int]) -> None:
        if not self.subscribers or (not panes and not gone):
            return
        frame = sse_frame("change", {"rev": rev, "panes": panes, "gone": gone}, rev)
        self.published += 1
        for sub in list(self.subscribers):
            if not sub.offer((rev, frame)):
                self.dropped += 1
                self.subscribers.discard(sub)
