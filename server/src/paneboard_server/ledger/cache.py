"""The stats answers, cached per range, and at most a few being worked out at once.

A stats page asks again on every filter change and every reload, often for a range it
asked for a moment ago; several viewers ask for the same. An answer is kept for `ttl`
seconds (its open waits count up to the moment it was made, which it says in `now`),
requests for a range already being worked out wait for that answer instead of starting
their own, and no more than `concurrent` are worked out at once, so a burst of year-long
requests queues here rather than on the database's connections.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable
from typing import Any


class AnswerCache:
    def __init__(self, ttl: float = 15.0, size: int = 64, concurrent: int = 2,
                 clock: Callable[[], float] = time.monotonic) -> None:  # fmt: skip
        self.ttl = ttl
        self.size = size
        self.clock = clock
        self._done: OrderedDict[Hashable, tuple[float, Any]] = OrderedDict()
        self._running: dict[Hashable, asyncio.Future[Any]] = {}
        self._slots = asyncio.Semaphore(concurrent)

    async def get(self, key: Hashable, make: Callable[[], Awaitable[Any]]) -> Any:
        """The answer for `key`: cached, the one under way, or `make()`'s."""
        hit = self._done.get(key)
        if hit is not None and self.clock() - hit[0] < self.ttl:
            self._done.move_to_end(key)
            return hit[1]
        running = self._running.get(key)
        if running is not None:
            return await asyncio.shield(running)
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._running[key] = fut
        try:
            async with self._slots:
                value = await make()
        except asyncio.CancelledError:
            fut.cancel()  # the asker went away: those waiting on it get the same
            raise
        except BaseException as exc:
            fut.set_exception(exc)
            fut.exception()  # retrieved: a failure with nobody else waiting is not logged as lost
            raise
        finally:
            del self._running[key]
        fut.set_result(value)
        self._done[key] = (self.clock(), value)
        self._done.move_to_end(key)
        while len(self._done) > self.size:
            self._done.popitem(last=False)
        return value
