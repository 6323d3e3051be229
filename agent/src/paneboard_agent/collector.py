"""The collector: every pane of every watched tmux server, decoded and classified.

`Collector` runs one `watcher.TmuxWatcher` (the session manager) per tmux server and
one `Pump` to the sink; each pane is followed by a pure `tracker.PaneTracker`.
`Options` and `TmuxTarget` (module `targets`) are re-exported here, where
callers have always found them.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import Sequence
from typing import Any

from paneboard_protocol import server_messages as sm
from paneboard_protocol import wire

from paneboard_agent.pump import Pump
from paneboard_agent.screens import ScreensPump
from paneboard_agent.sink import PaneKey, PaneUpdate, Sink
from paneboard_agent.targets import Options, TmuxTarget
from paneboard_agent.watcher import TmuxWatcher

__all__ = ["Collector", "Options", "TmuxTarget", "TmuxWatcher"]


class Collector:
    """All watched tmux servers, one sink; a `SnapshotSource` for reconnecting sinks."""

    def __init__(self, targets: Sequence[TmuxTarget], sink: Sink, options: Options | None = None) -> None:
        self.options = options or Options()
        self.pump = Pump(sink)
        screens_pump: Any = ScreensPump(self.pump, lambda: self.watchers)  # screens.py's hooks
        self.watchers = [TmuxWatcher(t, self.options, screens_pump) for t in targets]

    def snapshot(self) -> tuple[list[PaneUpdate], dict[str, tuple[bool, str | None]]]:
        panes: list[PaneUpdate] = []
        hosts: dict[str, tuple[bool, str | None]] = {}
        for w in self.watchers:
            panes += w.snapshot()
            hosts[w.host] = w.reachable
        return panes, hosts

    def set_rules(self, rules: Any) -> None:
        """Swap in reloaded screen rules (TA-17: on request, without a restart)."""
        self.options = dataclasses.replace(self.options, rules=rules)
        for w in self.watchers:
            w.set_rules(self.options)

    def set_side(self, send: Any) -> None:
        """Where screens and answer outcomes go (the uplink's `send_side`)."""
        for w in self.watchers:
            w.screens.send = send

    async def command(self, cmd: sm.PaneCommand) -> None:
        """A server command (`watch`, `unwatch`, `answer`, docs/wire.md) for one pane,
        read whole and checked by `server_messages.read_server`."""
        k = cmd.key
        for w in self.watchers:
            if w.host == k.host and w.target.label == k.tmux:
                if isinstance(cmd, sm.Watch):
                    w.screens.watch(k.pane, cmd.scrollback)
                elif isinstance(cmd, sm.Unwatch):
                    w.screens.unwatch(k.pane)
                else:
                    await w.screens.answer(cmd)
                return
        if isinstance(cmd, sm.Answer):  # no such tmux server here: nothing to type into
            send = self.watchers[0].screens.send if self.watchers else None
            if send is not None:
                send(wire.answered(cmd.id, "not-blocked"))

    def mark_seen(self, key: PaneKey, t: float) -> None:
        """Forwarded by a sink (the uplink's `on_seen`): the user looked at `key`."""
        for w in self.watchers:
            if w.host == key.host and w.target.label == key.tmux and w.mark_seen(key.pane, t):
                return

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
