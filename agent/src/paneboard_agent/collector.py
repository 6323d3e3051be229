"""The collector: every pane of every watched tmux server, decoded and classified.

`Collector` runs one `watcher.TmuxWatcher` (the session manager) per tmux server and
one `Pump` to the sink; each pane is followed by a pure `tracker.PaneTracker`. It is
also what the uplink asks and tells (`SnapshotSource`, `Commands`): everything it
knows, and the server's `seen` and commands, each to the right watcher.
`Options` and `TmuxTarget` (module `targets`) are re-exported here, where
callers have always found them.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import Callable, Sequence

from paneboard_protocol import server_messages as sm
from paneboard_protocol import wire
from paneboard_protocol.rules import RuleSet

from paneboard_agent.screens import PaneScreens, Side
from paneboard_agent.uplink import Health, PaneKey, PaneUpdate, Pump, Reports, Sink
from paneboard_agent.watch import Options, TmuxTarget, TmuxWatcher

__all__ = ["Collector", "Options", "TmuxTarget", "TmuxWatcher"]


class Collector:
    """All watched tmux servers, one sink; a `SnapshotSource` and the `Commands` of an uplink.

    `side` is where screens and answer outcomes go (the uplink's `send_side`); without
    it they go nowhere (`--stdout`)."""

    def __init__(
        self,
        targets: Sequence[TmuxTarget],
        sink: Sink,
        options: Options | None = None,
        *,
        side: Side | None = None,
    ) -> None:
        self.options = options or Options()
        self.pump = Pump(sink)
        self.side = side
        reports = ScreensReports(self.pump, self._screens)
        self.watchers = [TmuxWatcher(t, self.options, reports, side) for t in targets]

    def _watcher(self, host: str, tmux: str) -> TmuxWatcher | None:
        for w in self.watchers:
            if w.host == host and w.target.label == tmux:
                return w
        return None

    def _screens(self, key: PaneKey) -> PaneScreens | None:
        w = self._watcher(key.host, key.tmux)
        return w.screens if w is not None else None

    # --- SnapshotSource ---------------------------------------------------------------
    def snapshot(self) -> tuple[list[PaneUpdate], dict[str, tuple[bool, str | None]]]:
        panes: list[PaneUpdate] = []
        hosts: dict[str, tuple[bool, str | None]] = {}
        for w in self.watchers:
            panes += w.snapshot()
            hosts[w.host] = w.reachable
        return panes, hosts

    # --- Commands ---------------------------------------------------------------------
    def input_hosts(self) -> set[str]:
        """The hosts whose panes take answers (--allow-input): the board shows which."""
        return {w.host for w in self.watchers if w.target.allow_input}

    async def command(self, cmd: sm.PaneCommand) -> None:
        """A server command (`watch`, `unwatch`, `answer`, docs/wire.md) for one pane,
        read whole and checked by `server_messages.read_server`."""
        k = cmd.key
        w = self._watcher(k.host, k.tmux)
        if w is not None:
            if isinstance(cmd, sm.Watch):
                w.screens.watch(k.pane, cmd.scrollback)
            elif isinstance(cmd, sm.Unwatch):
                w.screens.unwatch(k.pane)
            else:
                await w.screens.answer(cmd)
        elif isinstance(cmd, sm.Answer) and self.side is not None:
            self.side(wire.answered(cmd.id, "not-blocked"))  # no such tmux server here

    def mark_seen(self, key: PaneKey, t: float) -> None:
        """The server says the user looked at `key` (done -> idle)."""
        for w in self.watchers:
            if w.host == key.host and w.target.label == key.tmux and w.mark_seen(key.pane, t):
                return

    # --- running ----------------------------------------------------------------------
    def set_rules(self, rules: RuleSet) -> None:
        """Swap in reloaded screen rules (TA-17: on request, without a restart)."""
        self.options = dataclasses.replace(self.options, rules=rules)
        for w in self.watchers:
            w.set_rules(self.options)

    async def run(self) -> int:
        """Run until cancelled, or until every watcher failed fatally (returns 1)."""
        pump = asyncio.create_task(self.pump.run(), name="sink-pump")
        try:
            await asyncio.gather(*(w.run() for w in self.watchers))
            await asyncio.wait_for(self.pump.drained(), 5)
            return 1
        finally:
            pump.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await pump
            for w in self.watchers:
                with contextlib.suppress(Exception):
                    await w.t.close()


class ScreensReports:
    """The watchers' `Reports`: the pump, and the pane's `PaneScreens` told that its
    classification changed (its answers may have) or that it went. Here, where both
    are known, rather than in the watcher, which only tells screens of output."""

    def __init__(self, pump: Reports, screens: ScreensOf) -> None:
        self.pump = pump
        self.screens = screens

    def changed(self, update: PaneUpdate) -> None:
        self.pump.changed(update)
        s = self.screens(update.key)
        if s is not None:
            s.changed(update.key.pane)

    def gone(self, key: PaneKey, t: float) -> None:
        self.pump.gone(key, t)
        s = self.screens(key)
        if s is not None:
            s.gone(key.pane)

    def host(self, host: str, reachable: bool, t: float, error: str | None) -> None:
        self.pump.host(host, reachable, t, error)

    def health(self, host: str, health: Health) -> None:
        self.pump.health(host, health)


#: a pane's screens, found when a report comes (the watchers exist only after the reports)
ScreensOf = Callable[[PaneKey], PaneScreens | None]
