"""Where the collector sends what it sees: the seam between watching and reporting.

The collector knows nothing of JSON lines or WebSockets. It calls a `Sink` whenever a
pane's classification changes, a pane vanishes, or a host's reachability changes; the
stdout printer (`paneboard agent --stdout`) and the server uplink
(`paneboard agent --server URL`) are two implementations. A sink that reconnects
(the uplink) asks the collector for everything it knows through `SnapshotSource`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, make_dataclass
from typing import TYPE_CHECKING, Any, Protocol

from paneboard_protocol import pane as pane_def


@dataclass(frozen=True, slots=True)
class PaneKey:
    """A pane's identity: tmux pane ids (`%3`) are unique per tmux server, not per host."""

    host: str
    tmux: str  # the tmux server: socket name (-L) or path (-S), "default" otherwise
    pane: str  # tmux pane id, e.g. "%3"

    def __str__(self) -> str:
        return f"{self.host}/{self.tmux}/{self.pane}"


class _UpdateMethods:
    """One pane's classification as the collector currently sees it.

    Its fields are the `update` fields of `paneboard_protocol.pane.FIELDS`, the
    `--stdout` contract's first (docs/collector.md); `evidence` is the classifier's JSON-serialisable evidence
    snapshot, from which the server re-derives the classification as its clock moves
    (TA-12/TA-13 staleness) with the same shared code.
    """

    __slots__ = ()

    def stdout_json(self) -> dict[str, Any]:
        """The object `paneboard agent --stdout` prints, exactly the keys docs/collector.md lists."""
        u: Any = self
        return {
            "host": u.key.host,
            "session": u.session,
            "window": u.window,
            "pane": u.key.pane,
            "agent": u.agent,
            "state": u.state,
            "kind": u.kind,
            "msg": u.msg,
            "source": u.source,
            "observable": u.observable,
            "t": u.t,
        }

    def wire_json(self) -> dict[str, Any]:
        """Everything, for the server uplink."""
        out = asdict(self)  # type: ignore[call-overload]  # a dataclass, made below
        out["key"] = asdict(self.key)  # type: ignore[attr-defined]  # a field, made below
        out["records"] = list(self.records)  # type: ignore[attr-defined]  # a field, made below
        return out


def _update_field(f: pane_def.Field) -> tuple[str, Any] | tuple[str, Any, Any]:
    if f.required:
        return (f.name, Any)
    if f.type == "json":
        return (f.name, Any, field(default_factory=dict))
    return (f.name, Any, field(default=f.default))


if TYPE_CHECKING:

    class PaneUpdate(_UpdateMethods):
        """What a type checker sees of the dataclass made below: its key typed, every
        field of the definition as Any (naming them here would be a second field list)."""

        key: PaneKey

        def __init__(self, key: PaneKey, *fields: Any, **named: Any) -> None: ...
        def __getattr__(self, name: str) -> Any: ...


PaneUpdate = make_dataclass(  # type: ignore[assignment,misc]  # the real class of the declaration above
    "PaneUpdate",
    [("key", PaneKey)] + [_update_field(f) for f in pane_def.FIELDS if f.update],
    bases=(_UpdateMethods,),
    frozen=True,
    slots=True,
)
PaneUpdate.__module__ = __name__


class Sink(Protocol):
    """Receives the collector's changes; implementations must not block the event loop."""

    async def pane_changed(self, update: PaneUpdate) -> None: ...

    async def pane_gone(self, key: PaneKey, t: float) -> None: ...

    async def host_status(self, host: str, reachable: bool, t: float, error: str | None) -> None: ...


class SnapshotSource(Protocol):
    """What a reconnecting sink asks for: every live pane and every host's status."""

    def snapshot(self) -> tuple[list[PaneUpdate], dict[str, tuple[bool, str | None]]]: ...
