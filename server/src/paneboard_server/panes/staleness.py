"""When to look at a pane again: one heap of deadlines and one timer task.

Each pane with evidence has at most one live deadline (`evidence_deadline`); a newer
one supersedes the old (lazy deletion by generation). The timer sleeps until the
earliest deadline, never scanning every pane, and hands due panes to the writer,
which re-runs the classifier with the server's clock and records any change.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
from collections.abc import Callable

MAX_SLEEP = 60.0


class Deadlines:
    def __init__(self, clock: Callable[[], float], due: Callable[[list[int]], None]) -> None:
        self.clock = clock
        self.due = due
        self.heap: list[tuple[float, int, int]] = []
        self.gen: dict[int, int] = {}
        self._wake = asyncio.Event()

    def schedule(self, pane_id: int, when: float | None) -> None:
        g = self.gen.get(pane_id, 0) + 1
        self.gen[pane_id] = g
        if when is None:
            return
        first = self.heap[0][0] if self.heap else None
        heapq.heappush(self.heap, (when, pane_id, g))
        if first is None or when < first:
            self._wake.set()

    def forget(self, pane_id: int) -> None:
        self.gen.pop(pane_id, None)

    def next_deadline(self) -> float | None:
        while self.heap and self.gen.get(self.heap[0][1]) != self.heap[0][2]:
            heapq.heappop(self.heap)
        return self.heap[0][0] if self.heap else None

    def pop_due(self) -> list[int]:
        now = self.clock()
        out: list[int] = []
        while self.heap and self.heap[0][0] <= now:
            _when, pid, g = heapq.heappop(self.heap)
            if self.gen.get(pid) == g:
                self.gen.pop(pid, None)
                out.append(pid)
        return out

    def poke(self) -> None:
        """Re-check now (tests that move an injected clock call this)."""
        self._wake.set()

    async def run(self) -> None:
        while True:
            nxt = self.next_deadline()
            delay = MAX_SLEEP if nxt is None else max(0.0, min(MAX_SLEEP, nxt - self.clock()))
            self._wake.clear()
            if delay > 0:
                # Not `asyncio.wait_for`: on Python 3.11 it returns normally when the task
                # is cancelled in the same turn as the event is set (python/cpython#86296),
                # and this loop then slept on for up to a minute: a server asked to stop
                # as a deadline was scheduled, that did not. `asyncio.timeout` lets the
                # cancellation through.
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(delay):
                        await self._wake.wait()
            due = self.pop_due()
            if due:
                self.due(due)
