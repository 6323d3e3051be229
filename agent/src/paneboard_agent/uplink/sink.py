"""Where the collector sends what it sees: the seam between watching and reporting.

The collector knows nothing of JSON lines or WebSockets. It calls a `Sink` whenever a
pane's classification changes, a pane vanishes, or a host's reachability changes; the
stdout printer (`paneboard agent --stdout`) and the server uplink
(`paneboard agent --server URL`) are two implementations. A sink that reconnects
(the uplink) asks the collector for everything it knows through `SnapshotSource`.
"""

from __future__ import annotations

from typing import Protocol

from paneboard_protocol import server_messages as sm
from paneboard_protocol.pane import PaneKey, PaneUpdate

from paneboard_agent.uplink.health import Health

__all__ = ["Commands", "PaneKey", "PaneUpdate", "Reports", "Sink", "SnapshotSource"]


class Sink(Protocol):
    """Receives the collector's changes; implementations must not block the event loop."""

    async def pane_changed(self, update: PaneUpdate) -> None: ...

    async def pane_gone(self, key: PaneKey, t: float) -> None: ...

    async def host_status(self, host: str, reachable: bool, t: float, error: str | None) -> None: ...

    async def host_health(self, host: str, health: Health) -> None:
        """The link's health (health.py); a sink with no use for it returns."""
        ...


class Reports(Protocol):
    """Where a watcher hands its changes, without waiting (`pump.Pump` and what wraps it)."""

    def changed(self, update: PaneUpdate) -> None: ...

    def gone(self, key: PaneKey, t: float) -> None: ...

    def host(self, host: str, reachable: bool, t: float, error: str | None) -> None: ...

    def health(self, host: str, health: Health) -> None: ...


class SnapshotSource(Protocol):
    """What a reconnecting sink asks for: every live pane and every host's status."""

    def snapshot(self) -> tuple[list[PaneUpdate], dict[str, tuple[bool, str | None]]]: ...


class Commands(Protocol):
    """Where the server's word about panes goes (the collector): which hosts take
    answers, a pane the user looked at, and `watch` / `unwatch` / `answer`."""

    def input_hosts(self) -> set[str]: ...

    def mark_seen(self, key: PaneKey, t: float) -> None: ...

    async def command(self, cmd: sm.PaneCommand) -> None: ...
