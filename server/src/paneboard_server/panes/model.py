"""In-memory mirror of the panes and hosts tables, and the pane's view (its API shape).

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
from paneboard_protocol.pane import State, StoredPane
from paneboard_protocol.views import PaneView


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

    def triple(self) -> tuple[str | None, State | None, str | None]:
        return (self.agent, self.state, self.kind)

    def row(self) -> dict[str, Any]:
        """The panes-table columns this object owns (what an update writes)."""
        return _row(self)

    def row_values(self) -> tuple[Any, ...]:
        """`row`'s values alone, in `ROW_FIELDS` order: one C call, no mapping."""
        return _row_values(self)

    def view(self, host: Host | None, collector: str | None = None, input: bool = False) -> PaneView:
        """The pane as `GET /api/panes` and the live stream show it (`PaneView`).

        `reachable` false means the collector (or its SSH link) is away: the state is
        the last known one, `stale` is true and `last_seen` gives its age. `collector` is
        the name of the collector token the pane came from; `input`, whether that
        collector types answers on the pane's host.
        """
        if host is None:
            added: tuple[Any, ...] = (None, collector, False, True, None, input)
        else:
            r = host.reachable
            added = (host.name, collector, r, not r, None if r else host.unreachable_since, input)
        return PaneView(*(_shown(self) + added))


_ROW = pane_def.ROW_FIELDS


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


#: What a view takes from the pane, in the view's order (built with positional arguments,
#: one C call for the lot: this runs for every changed pane of every batch).
_SHOWN = (*pane_def.API_FIELDS, "id", "tmux", "pane")
_shown = attrgetter(*_SHOWN)
if tuple(f.name for f in msgspec.structs.fields(PaneView))[: len(_SHOWN)] != _SHOWN:
    raise TypeError("PaneView's fields are not the pane definition's shown fields, in order")
