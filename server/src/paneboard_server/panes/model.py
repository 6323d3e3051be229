"""In-memory mirror of the panes and hosts tables, and the pane's API shape.

The writer task is the only code that changes these objects (after its transaction
has committed), so readers (`GET /api/panes`, SSE snapshots) see committed state only
and need no locks.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from operator import attrgetter
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


@dataclass(slots=True)
class Pane:
    """The server's in-memory pane: its identity, then every field of
    `paneboard_protocol.pane.FIELDS` that is stored (`row`) or shown (`api`), in the
    definition's order, with its type. Written out so a type checker knows each field
    (a misspelt one fails `mypy`); `tests/server/test_pane_definition.py` holds it to the
    definition (names, order, types, defaults). A pane the server has only heard of holds
    None where the wire would default; records are a list, changed in place."""

    id: int
    host_id: int
    tmux: str
    pane: str
    session: str | None = None
    window: str | None = None
    agent: str | None = None
    state: str | None = None
    kind: str | None = None
    msg: str | None = None
    source: str | None = None
    observable: bool = True
    title: str | None = None
    progress: int | None = None
    since: float | None = None
    process: str | None = None
    records: list[dict[str, Any]] = field(default_factory=list)
    evidence: dict[str, Any] | None = field(default_factory=dict)
    last_seen: float | None = None
    rev: int = 0
    gone_at: float | None = None
    last_known: dict[str, Any] | None = None

    def copy(self) -> Pane:
        """A shallow copy (the writer's batch changes copies, never the mirror). Every
        field read in one C call and passed positionally: 0.6 us against 3.1 for
        `dataclasses.replace`, once per pane per batch."""
        return Pane(*_all_values(self))

    def triple(self) -> tuple[str | None, str | None, str | None]:
        return (self.agent, self.state, self.kind)

    def row(self) -> dict[str, Any]:
        """The panes-table columns this object owns (what an update writes)."""
        return _row(self)

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
_all_values = attrgetter(*(f.name for f in fields(Pane)))
_api_values = attrgetter(*_API)


def _row(p: Pane) -> dict[str, Any]:
    """The row fields by name, read in one C call (`attrgetter`): this runs for every
    pane of every change. (It was a function compiled with `exec` from the names, twice
    as fast at 0.4 us against 0.9; not worth code generated at run time.)"""
    return dict(zip(_ROW, _row_values(p), strict=True))


def _api(p: Pane, host: Host | None, collector: str | None) -> dict[str, Any]:
    reachable = host.reachable if host is not None else False
    out: dict[str, Any] = {
        "id": p.id,
        "host": host.name if host is not None else None,
        "collector": collector,
        "tmux": p.tmux,
        "pane": p.pane,
    }
    out.update(zip(_API, _api_values(p), strict=True))
    out["reachable"] = reachable
    out["stale"] = not reachable
    out["unreachable_since"] = host.unreachable_since if host is not None and not reachable else None
    return out
