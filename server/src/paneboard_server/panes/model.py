"""In-memory mirror of the panes and hosts tables, and the pane's API shape.

The writer task is the only code that changes these objects (after its transaction
has committed), so readers (`GET /api/panes`, SSE snapshots) see committed state only
and need no locks.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from operator import attrgetter
from typing import Any

import msgspec
from paneboard_protocol import pane as pane_def
from paneboard_protocol.pane import StoredPane


@dataclass(slots=True)
class Host:
    id: int
    collector_id: int
    name: str
    reachable: bool = True
    error: str | None = None
    last_seen: float | None = None
    unreachable_since: float | None = None
    # the link's health as the collector measured it (held in memory: each collector
    # reports it again within seconds of a reconnect or change)
    rtt: float | None = None
    reconnects: int = 0
    contact: float | None = None  # when the collector last heard from the host

    def copy(self) -> Host:
        return replace(self)

    def api(self, collector: str | None) -> dict[str, Any]:
        """The host as `GET /api/hosts` shows it."""
        return {
            "name": self.name,
            "collector": collector,
            "reachable": self.reachable,
            "error": self.error,
            "last_seen": self.last_seen,
            "unreachable_since": self.unreachable_since,
            "rtt": self.rtt,
            "reconnects": self.reconnects,
            "contact": self.contact,
        }


class Pane(StoredPane, kw_only=True):
    """The server's in-memory pane: a `StoredPane` (every field of the pane definition the
    server keeps, written once in `paneboard_protocol.pane`) and its row's identity. A
    pane the server has only heard of (`heard_of`) holds None where nothing is known."""

    id: int
    host_id: int
    tmux: str
    pane: str

    @classmethod
    def heard_of(cls, id: int, host_id: int, tmux: str, pane: str, **kept: Any) -> Pane:
        """A pane known only by its key (made for a message before the message's fields
        are applied, or read back from such a row): nothing known of it yet."""
        return cls(id=id, host_id=host_id, tmux=tmux, pane=pane, **{**_NOTHING_KNOWN, **kept})

    def copy(self) -> Pane:
        """A shallow copy (the writer's batch changes copies, never the mirror), made in
        one C call (`copy.copy` would first look up the Struct's `__copy__`)."""
        return msgspec.structs.replace(self)

    def triple(self) -> tuple[str | None, str | None, str | None]:
        return (self.agent, self.state, self.kind)

    def row(self) -> dict[str, Any]:
        """The panes-table columns this object owns (what an update writes)."""
        return _row(self)

    def row_values(self) -> tuple[Any, ...]:
        """`row`'s values alone, in `ROW_FIELDS` order: one C call, no mapping."""
        return _row_values(self)

    def api(self, host: Host | None, collector: str | None = None) -> dict[str, Any]:
        """The pane as `GET /api/panes` and the live stream show it.

        `reachable` false means the collector (or its SSH link) is away: the state is
        the last known one, `stale` is true and `last_seen` gives its age. `collector` is
        the name of the collector token the pane came from.
        """
        return _api(self, host, collector)


_ROW = pane_def.ROW_FIELDS
_API = pane_def.API_FIELDS


_row_values = attrgetter(*_ROW)
#: The fields a pane has no default for, as a pane the server has only heard of holds them.
_NOTHING_KNOWN: dict[str, Any] = {
    **{f.name: None for f in pane_def.FIELDS if f.required and f.name != "t"},
    "observable": True,
}


def _row(p: Pane) -> dict[str, Any]:
    """The row fields by name, read in one C call (`attrgetter`): this runs for every
    pane of every change. (A function compiled with `exec` from the names was faster,
    but not by enough to be worth code generated at run time.)"""
    return dict(zip(_ROW, _row_values(p), strict=True))


#: A pane's fields the API leaves out (its host's id, its evidence, when it went).
_NOT_API = tuple(f.name for f in msgspec.structs.fields(Pane) if f.name not in {"id", "tmux", "pane", *_API})
_asdict = msgspec.structs.asdict


def _api(p: Pane, host: Host | None, collector: str | None) -> dict[str, Any]:
    """Every field of the pane in one C call (`msgspec.structs.asdict`), less those the API
    leaves out, and its host's: about half the cost of a dict of the API's names filled
    from an attrgetter, for every changed pane of every batch."""
    out = _asdict(p)
    for name in _NOT_API:
        del out[name]
    reachable = host.reachable if host is not None else False
    out["host"] = host.name if host is not None else None
    out["collector"] = collector
    out["reachable"] = reachable
    out["stale"] = not reachable
    out["unreachable_since"] = host.unreachable_since if host is not None and not reachable else None
    return out
