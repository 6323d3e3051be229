"""Looks that overlap: a held report waits for one look begun after it, not also for the
one already under way.

Every held report is served by the first look (tmux's listing, then `ps`) started after
it arrived (`tracker.PaneTracker.output`). With one poll at a time, a report that came
while a look was on its way waited for that look to come back and then for a whole
look of its own: two round trips of the link to a far host, or two `ps` runs on a busy
one. Here the watcher may start the next look while the earlier is still out, at most
`depth` at once (and still no more often than its poll spacing), and the results are
applied in the order the looks started: a later `ps` stays the later word.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class LookPipeline:
    """The looks of one tmux server under way, oldest first.

    A look that fails (the link broke) does not raise in a task nobody awaits: its error
    is kept, the watcher is woken, and `check` raises it in the watcher's own loop, which
    then reconnects as it would have had the look run inline."""

    def __init__(self, depth: int, wake: Callable[[], None]) -> None:
        self.depth = depth
        self._wake = wake
        self._tasks: deque[asyncio.Task[None]] = deque()
        self._error: BaseException | None = None

    def __len__(self) -> int:
        return len(self._tasks)

    def check(self) -> None:
        """Raise what a finished look raised (once)."""
        if self._error is not None:
            err, self._error = self._error, None
            raise err

    async def room(self) -> None:
        """Wait until another look may start: fewer than `depth` under way."""
        self.check()
        while len(self._tasks) >= self.depth:
            await asyncio.wait({self._tasks[0]})
            self.check()

    async def drain(self) -> None:
        """Wait until no look is under way (before work that must not overlap one)."""
        await self.room()
        while self._tasks:
            await asyncio.wait({self._tasks[-1]})
            self.check()

    def start(self, look: Coroutine[Any, Any, T], finish: Callable[[T], None]) -> None:
        """Run `look` now; once it and every look started before it have finished, `finish`
        its result. A look after a failed one is not applied: the link is going down."""
        prev = self._tasks[-1] if self._tasks else None
        task = asyncio.create_task(self._run(look, finish, prev))
        self._tasks.append(task)
        task.add_done_callback(self._done)

    async def _run(
        self, look: Coroutine[Any, Any, T], finish: Callable[[T], None], prev: asyncio.Task[None] | None
    ) -> None:
        got = await look
        if prev is not None:
            await asyncio.wait({prev})
            if prev.cancelled() or prev.exception() is not None:
                return
        finish(got)

    def _done(self, task: asyncio.Task[None]) -> None:
        with contextlib.suppress(ValueError):
            self._tasks.remove(task)
        if not task.cancelled() and task.exception() is not None and self._error is None:
            self._error = task.exception()
            self._wake()

    async def cancel(self) -> None:
        """Stop every look under way (the connection is being torn down)."""
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._tasks.clear()
        self._error = None
