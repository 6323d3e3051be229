"""The one runner of the panes' trackers: feed an input, carry out its effects.

`tracker.PaneTracker` decides (pure: an input in, `effects.Effects` out); `PaneTasks.feed`
is the only way an input reaches a tracker, and it carries the effects out at once: the
update to the watcher's output, the capture through the watcher's one
`capture.PaneCapture`, the settle and deadline times as asyncio timers, whose firing
and the capture's result are fed back in the same way. `watcher.TmuxWatcher` (sessions,
listings, processes) owns one `PaneTasks` and reads only `Effects.look` itself.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from paneboard_agent.tmux import PaneCapture
from paneboard_agent.transport import TransportError
from paneboard_agent.uplink import PaneUpdate
from paneboard_agent.watch.effects import Captured, CaptureFailed, Deadline, Effects, Input, Settled
from paneboard_agent.watch.targets import Discarded
from paneboard_agent.watch.tracker import PaneTracker

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
    unlisted_polls: int = 0  # full listings in a row that missed a pane never listed yet

    def cancel(self) -> None:
        for h in (self.settle_handle, self.deadline_handle):
            if h is not None:
                h.cancel()
        self.settle_handle = self.deadline_handle = None
        self.settle_for = self.deadline_for = None
        if self.capture_task is not None and not self.capture_task.done():
            self.capture_task.cancel()


class PaneTasks:
    """Feeds the watcher's trackers and carries out their effects (see the module's docstring).

    `panes` is the watcher's own table (a pane no longer in it is forgotten when its
    timer or capture comes back); `changed` sends an update (the watcher routes it to
    its pump, or holds it during a first sync); `discarded` (`--explain`) is told of each
    report a pane wrote that the spec discards."""

    def __init__(
        self,
        panes: dict[str, WatchedPane],
        changed: Callable[[PaneUpdate], None],
        capture: PaneCapture,
        host: str,
        discarded: Discarded | None = None,
    ) -> None:
        self.panes = panes
        self.changed = changed
        self.capture = capture
        self.host = host
        self.discarded = discarded

    def feed(self, pane: WatchedPane, i: Input) -> Effects:
        """Give the pane's tracker one input and carry out what it asks: send, capture,
        set timers. The effects are returned for the one the watcher acts on (`look`)."""
        fx = pane.tracker.step(i)
        now = time.time()
        if self.discarded is not None:
            for rejected in fx.discarded:
                self.discarded(pane.tracker.key, now, rejected)
        if fx.update is not None:
            self.changed(fx.update)
        if fx.capture:
            pane.capture_task = asyncio.create_task(self._do_capture(pane))
        loop = asyncio.get_running_loop()
        if fx.settle_at != pane.settle_for:
            if pane.settle_handle is not None:
                pane.settle_handle.cancel()
            pane.settle_for, pane.settle_handle = fx.settle_at, None
            if fx.settle_at is not None:
                pane.settle_handle = loop.call_later(
                    max(0.0, fx.settle_at - now), self._timer, pane, "settle"
                )
        if fx.deadline_at != pane.deadline_for:
            if pane.deadline_handle is not None:
                pane.deadline_handle.cancel()
            pane.deadline_for, pane.deadline_handle = fx.deadline_at, None
            if fx.deadline_at is not None:
                delay = max(0.0, fx.deadline_at - now) + 0.001
                pane.deadline_handle = loop.call_later(delay, self._timer, pane, "deadline")
        return fx

    def _timer(self, pane: WatchedPane, which: str) -> None:
        if self.panes.get(pane.tracker.key.pane) is not pane:
            return
        now = time.time()
        if which == "settle":
            pane.settle_handle = pane.settle_for = None
            self.feed(pane, Settled(now))
        else:
            pane.deadline_handle = pane.deadline_for = None
            self.feed(pane, Deadline(now))

    # --- screen capture ------------------------------------------------------------

    async def _do_capture(self, pane: WatchedPane) -> None:
        key = pane.tracker.key
        i: Input
        try:
            screen = await self.capture.read(key.pane)
            i = Captured(time.time(), screen)
        except TransportError as exc:
            log.debug("%s: capture of %s failed: %s", self.host, key.pane, exc)
            i = CaptureFailed()
        if self.panes.get(key.pane) is pane:
            self.feed(pane, i)
