"""In-memory mirror of the panes and hosts tables, and the pane's API shape.

The writer task is the only code that changes these objects (after its transaction
has committed), so readers (`GET /api/panes`, SSE snapshots) see committed state only
and need no locks.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any


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


@dataclass(slots=True)
class Pane:
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
    title: str | None = None
    progress: int | None = None
    source: str | None = None
    observable: bool = True
    process: str | None = None
    since: float | None = None
    last_seen: float | None = None
    evidence: dict[str, Any] = field(default_factory=dict)
    records: list[dict[str, Any]] = field(default_factory=list)
    rev: int = 0
    gone_at: float | None = None
    # The classification before the pane lost it ({agent, state, kind, msg, since, at}),
    # kept in memory (rebuilt from history on start) so a pane that became
    # unobservable can still say what it was doing and since when it is unknown.
    last_known: dict[str, Any] | None = None

    def copy(self) -> Pane:
        return replace(self)

    def triple(self) -> tuple[str | None, str | None, str | None]:
        return (self.agent, self.state, self.kind)

    def row(self) -> dict[str, Any]:
        """The panes-table columns this object owns (what an update writes)."""
        return {
            "session": self.session,
            "window": self.window,
            "agent": self.agent,
            "state": self.state,
            "kind": self.kind,
            "msg": self.msg,
            "title": self.title,
            "progress": self.progress,
            "source": self.source,
            "observable": self.observable,
            "process": self.process,
            "since": self.since,
            "last_seen": self.last_seen,
            "evidence": self.evidence,
            "rev": self.rev,
            "gone_at": self.gone_at,
        }

    def api(self, host: Host | None) -> dict[str, Any]:
        """The pane as `GET /api/panes` and the live stream show it.

        `reachable` false means the collector (or its SSH link) is away: the state is
        the last known one, `stale` is true and `last_seen` gives its age.
        `last_known` is set only while the pane has no state and is not observable
        (a program behind `ssh` whose report went stale): what it was last, and `at`,
        when that stopped being known.
        """
        reachable = host.reachable if host is not None else False
        return {
            "id": self.id,
            "host": host.name if host is not None else None,
            "tmux": self.tmux,
            "pane": self.pane,
            "session": self.session,
            "window": self.window,
            "agent": self.agent,
            "state": self.state,
            "kind": self.kind,
            "msg": self.msg,
            "title": self.title,
            "progress": self.progress,
            "source": self.source,
            "observable": self.observable,
            "process": self.process,
            "since": self.since,
            "last_seen": self.last_seen,
            "reachable": reachable,
            "stale": not reachable,
            "records": self.records,
            "rev": self.rev,
            "last_known": self.last_known if self.state is None and not self.observable else None,
        }
