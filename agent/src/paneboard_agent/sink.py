"""Where the collector sends what it sees: the seam between watching and reporting.

The collector knows nothing of JSON lines or WebSockets. It calls a `Sink` whenever a
pane's classification changes, a pane vanishes, or a host's reachability changes; the
stdout printer (`paneboard agent --stdout`) and the server uplink
(`paneboard agent --server URL`) are two implementations. A sink that reconnects
(the uplink) asks the collector for everything it knows through `SnapshotSource`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Protocol


@dataclass(frozen=True, slots=True)
class PaneKey:
    """A pane's identity: tmux pane ids (`%3`) are unique per tmux server, not per host."""

    host: str
    tmux: str  # the tmux server: socket name (-L) or path (-S), "default" otherwise
    pane: str  # tmux pane id, e.g. "%3"

    def __str__(self) -> str:
        return f"{self.host}/{self.tmux}/{self.pane}"


@dataclass(frozen=True, slots=True)
class PaneUpdate:
    """One pane's classification as the collector currently sees it.

    The first block is the design's `--stdout` contract; `evidence` is the classifier's
    JSON-serialisable evidence snapshot, from which the server re-derives the
    classification as its clock moves (TA-12/TA-13 staleness) with the same shared code.
    """

    key: PaneKey
    session: str
    window: str
    agent: str | None
    state: str | None
    kind: str | None
    msg: str | None
    source: str | None
    observable: bool
    t: float
    title: str | None = None
    progress: int | None = None
    since: float | None = None
    process: str | None = None
    records: tuple[dict[str, Any], ...] = ()
    evidence: dict[str, Any] = field(default_factory=dict)

    def stdout_json(self) -> dict[str, Any]:
        """The object `paneboard agent --stdout` prints, exactly the design's keys."""
        return {
            "host": self.key.host,
            "session": self.session,
            "window": self.window,
            "pane": self.key.pane,
            "agent": self.agent,
            "state": self.state,
            "kind": self.kind,
            "msg": self.msg,
            "source": self.source,
            "observable": self.observable,
            "t": self.t,
        }

    def wire_json(self) -> dict[str, Any]:
        """Everything, for the server uplink."""
        out = asdict(self)
        out["key"] = asdict(self.key)
        out["records"] = list(self.records)
        return out


class Sink(Protocol):
    """Receives the collector's changes; implementations must not block the event loop."""

    async def pane_changed(self, update: PaneUpdate) -> None: ...

    async def pane_gone(self, key: PaneKey, t: float) -> None: ...

    async def host_status(self, host: str, reachable: bool, t: float, error: str | None) -> None: ...


class SnapshotSource(Protocol):
    """What a reconnecting sink asks for: every live pane and every host's status."""

    def snapshot(self) -> tuple[list[PaneUpdate], dict[str, tuple[bool, str | None]]]: ...
