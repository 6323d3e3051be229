"""What the watcher does for one pane's tracker: send its updates, run its captures, set its timers.

`tracker.PaneTracker` decides (pure, driven by `(now, input)`); `PaneTasks` carries the
decisions out with asyncio timers and captures through the watcher's one
`capture.PaneCapture`. `watcher.TmuxWatcher` (sessions, listings, processes) owns one
`PaneTasks`: every input the watcher gives a tracker is followed by `after(pane)`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from paneboard_agent.capture import PaneCapture
from paneboard_agent.sink import PaneUpdate
from paneboard_agent.tracker import PaneTracker
from paneboard_agent.transport import TransportError

log = logging.getLogger("paneboard.agent")


@dataclass(eq=False)
class WatchedPane:
    """A tracker and the asyncio things the watcher runs for it."""

    tracker: PaneTracker
    settle_handle: asyncio.TimerHandle | None = None
    settle_for: float | None = None
    deadline_handle: asyncio.TimerHandle | None = None
    deadline_for: float | None = None
    capture_task: asyncio.Task[None] | None = None

    def cancel(self) -> None:
        for h in (self.settle_handle, self.deadline_handle):
            if h is not None:
                h.cancel()
        self.settle_handle = self.deadline_handle = None
        self.settle_for = self.deadline_for = None
        if self.capture_task is not None and not self.capture_task.done():
            self.capture_task.cancel()


class PaneTasks:
    """Timers and captures for the watcher's panes (see the module's docstring).

    `panes` is the watcher's own table (a pane no longer in it is forgotten when its
    timer or capture comes back); `changed` sends an update (through whatever pump
    the watcher has at that moment: `late_state` swaps it)."""

    def __init__(
        self,
        panes: dict[str, WatchedPane],
        changed: Callable[[PaneUpdate], None],
        capture: PaneCapture,
        host: str,
    ) -> None:
        self.panes = panes
        self.changed = changed
        self.capture = capture
        self.host = host

    # --- what a tracker asks for ---------------------------------------------------

    def after(self, pane: WatchedPane) -> None:
        """Carry out what the tracker wants after an input: send, capture, set timers."""
        t = pane.tracker
        update = t.take_update()
        if update is not None:
            self.changed(update)
        if t.take_capture():
            pane.capture_task = asyncio.create_task(self._do_capture(pane))
        loop = asyncio.get_running_loop()
        now = time.time()
        if t.settle_at != pane.settle_for:
            if pane.settle_handle is not None:
                pane.settle_handle.cancel()
            pane.settle_for, pane.settle_handle = t.settle_at, None
            if t.settle_at is not None:
                pane.settle_handle = loop.call_later(max(0.0, t.settle_at - now), self._timer, pane, "settle")
        if t.deadline_at != pane.deadline_for:
            if pane.deadline_handle is not None:
                pane.deadline_handle.cancel()
            pane.deadline_for, pane.deadline_handle = t.deadline_at, None
            if t.deadline_at is not None:
                delay = max(0.0, t.deadline_at - now) + 0.001
                pane.deadline_handle = loop.call_later(delay, self._timer, pane, "deadline")

    def _timer(self, pane: WatchedPane, which: str) -> None:
        if self.panes.get(pane.tracker.key.pane) is not pane:
            return
        now = time.time()
        if which == "settle":
            pane.settle_handle = pane.settle_for = None
            pane.tracker.settled(now)
        else:
            pane.deadline_handle = pane.deadline_for = None
            pane.tracker.deadline(now)
        self.after(pane)

    # --- screen capture ------------------------------------------------------------

    async def _do_capture(self, pane: WatchedPane) -> None:
        key = pane.tracker.key
        try:
            screen = await self.capture.read(key.pane)
        except TransportError as exc:
            log.debug("%s: capture of %s failed: %s", self.host, key.pane, exc)
            pane.tracker.capture_failed()
            return
        if self.panes.get(key.pane) is not pane:
            return
        pane.tracker.captured(time.time(), screen)
        self.after(pane)
