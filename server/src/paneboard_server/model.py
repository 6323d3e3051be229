"""In-memory mirror of the panes and hosts tables, and the pane's API shape.

The writer task is the only code that changes these objects (after its transaction
has committed), so readers (`GET /api/panes`, SSE snapshots) see committed state only
and need no locks.
"""

from __future__ import annotations

from dataclasses import dataclass, field, make_dataclass, replace
from typing import Any

from paneboard_protocol import pane as pane_def


@dataclass(slots=True)
class Host:
    id: int
    collector_id: int
    name: str
    reachable: bool = True
    error: str | None = None
    last_seen: float | None = None
    unreachable_since: float | None = None

    def copy(self) -> Host:
        return replace(self)


class _PaneMethods:
    """What a `Pane` does; its fields come from `paneboard_protocol.pane.FIELDS`."""

    __slots__ = ()

    def copy(self) -> Pane:
        return replace(self)  # type: ignore[type-var]  # a dataclass, made below

    def triple(self) -> tuple[str | None, str | None, str | None]:
        return (self.agent, self.state, self.kind)  # type: ignore[attr-defined]

    def row(self) -> dict[str, Any]:
        """The panes-table columns this object owns (what an update writes)."""
        return {k: getattr(self, k) for k in _ROW}

    def api(self, host: Host | None) -> dict[str, Any]:
        """The pane as `GET /api/panes` and the live stream show it.

        `reachable` false means the collector (or its SSH link) is away: the state is
        the last known one, `stale` is true and `last_seen` gives its age.
        """
        reachable = host.reachable if host is not None else False
        out: dict[str, Any] = {
            "id": self.id,  # type: ignore[attr-defined]
            "host": host.name if host is not None else None,
            "tmux": self.tmux,  # type: ignore[attr-defined]
            "pane": self.pane,  # type: ignore[attr-defined]
        }
        for k in _API:
            out[k] = getattr(self, k)
        out["reachable"] = reachable
        out["stale"] = not reachable
        return out


_ROW = pane_def.ROW_FIELDS
_API = pane_def.API_FIELDS


def _pane_field(f: pane_def.Field) -> tuple[str, Any, Any]:
    if f.type == "list":  # the server keeps records as a mutable list
        return (f.name, Any, field(default_factory=list))
    if f.type == "json":
        return (f.name, Any, field(default_factory=dict))
    # a pane the server has only heard of holds None where the wire would default
    return (f.name, Any, field(default=None if f.nullable else f.default))


#: The server's in-memory pane: its identity plus every stored or shown field.
Pane = make_dataclass(
    "Pane",
    [("id", int), ("host_id", int), ("tmux", str), ("pane", str)]
    + [_pane_field(f) for f in pane_def.FIELDS if f.row or f.api],
    bases=(_PaneMethods,),
    slots=True,
)
Pane.__module__ = __name__
