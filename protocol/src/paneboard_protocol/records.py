"""The OSC 7501 record store of one pane (spec section 1, P7501-6/8/16/21/22).

Kept apart from arbitration because its rules are purely about records: one record
per `id`, each report replacing the whole previous record (P7501-6), `clear` of a
subtree or of everything (P7501-16), the lifecycle on process exit and OSC 133 `A`
(P7501-8, RI-5), RIS (P7501-21) and the 256-record cap with least-recently-updated
eviction (P7501-21). The store also remembers *which process filed* each record (a
generation number the classifier bumps when the foreground process changes), because
RI-2 only lets a record speak for the pane while the process that wrote it is in front.

Everything here is plain data so that `snapshot()` can travel inside the evidence
dict and be re-classified by the server.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from paneboard_protocol.events import StatusReport

MAX_RECORDS = 256
"""P7501-21: up to 256 records per pane (the spec's floor is 64)."""

LIVE_STATES = frozenset({"working", "blocked", "idle"})
"""States dropped on process exit / new prompt (P7501-8; paneboard drops idle too)."""

RESULT_STATES = frozenset({"done", "error"})
"""States that survive process exit as unseen results (P7501-8, RI-5)."""


@dataclass(slots=True)
class Record:
    """One stored OSC 7501 record; `id` "" is the root record."""

    id: str
    state: str
    kind: str | None
    app: str | None
    msg: str | None
    title: str | None
    progress: int | None
    updated: float
    seq: int
    gen: int
    agent: str | None  # the pane's identity when the record was filed (for left-over results)

    def to_evidence(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "state": self.state,
            "kind": self.kind,
            "app": self.app,
            "msg": self.msg,
            "title": self.title,
            "progress": self.progress,
            "updated": self.updated,
            "seq": self.seq,
            "gen": self.gen,
            "agent": self.agent,
        }


def is_under(record_id: str, prefix: str) -> bool:
    """True when `record_id` is `prefix` or below it (P7501-16: `ab` is not under `a`)."""
    return record_id == prefix or record_id.startswith(prefix + "/")


class RecordStore:
    """Per-pane OSC 7501 records with replace, clear, lifecycle and LRU cap."""

    def __init__(self, limit: int = MAX_RECORDS) -> None:
        self._limit = limit
        self._records: dict[str, Record] = {}
        self._seq = 0
        self._snapshot: list[dict[str, Any]] | None = None  # cache, dropped on every change
        self.version = 0  # bumped on every change, so views of the records can be cached

    def __len__(self) -> int:
        return len(self._records)

    def report(self, now: float, event: StatusReport, gen: int, agent: str | None) -> None:
        """P7501-6: the report replaces the whole record with that id (root when id is None)."""
        self._snapshot = None
        self.version += 1
        rid = event.id or ""
        self._seq += 1
        if rid not in self._records and len(self._records) >= self._limit:
            # P7501-21: evict the least recently updated record.
            oldest = min(self._records.values(), key=lambda r: r.seq)
            del self._records[oldest.id]
        self._records.pop(rid, None)
        self._records[rid] = Record(
            id=rid,
            state=event.state,
            kind=event.kind if event.state == "blocked" else None,
            app=event.app,
            msg=event.msg,
            title=event.title,
            progress=event.progress if event.state in ("working", "blocked") else None,
            updated=now,
            seq=self._seq,
            gen=gen,
            agent=agent,
        )

    def clear(self, record_id: str | None) -> bool:
        """P7501-16: remove `record_id` and its subtree, or everything when None."""
        self._snapshot = None
        self.version += 1
        before = len(self._records)
        if record_id is None or record_id == "":
            self._records.clear()
        else:
            for rid in [r for r in self._records if is_under(r, record_id)]:
                del self._records[rid]
        return len(self._records) != before

    def reset(self) -> bool:
        """RIS drops every record (P7501-21)."""
        return self.clear(None)

    def end_live(self) -> bool:
        """P7501-8: process exit or OSC 133 A drops working, blocked and idle records."""
        self._snapshot = None
        self.version += 1
        gone = [rid for rid, r in self._records.items() if r.state in LIVE_STATES]
        for rid in gone:
            del self._records[rid]
        return bool(gone)

    def drop_results(self, current_gen: int) -> bool:
        """Another agent started: left-over results of earlier processes go (RI-5)."""
        self._snapshot = None
        self.version += 1
        gone = [rid for rid, r in self._records.items() if r.gen != current_gen]
        for rid in gone:
            del self._records[rid]
        return bool(gone)

    def seen(self, now: float, current_gen: int) -> bool:
        """The user looked: the live process's `done` turns `idle`; left-over results go."""
        self._snapshot = None
        self.version += 1
        changed = False
        for rec in sorted(self._records.values(), key=lambda r: r.seq):  # as evidence_mark_seen
            rid = rec.id
            if rec.gen != current_gen:
                if rec.state in RESULT_STATES:
                    del self._records[rid]
                    changed = True
            elif rec.state == "done":
                self._seq += 1
                rec.state = "idle"
                rec.updated = now
                rec.seq = self._seq
                changed = True
        return changed

    def snapshot(self) -> list[dict[str, Any]]:
        """Records oldest-updated first, as plain dicts (fresh dicts: callers may keep them)."""
        return [dict(r) for r in self.view()]

    def view(self) -> list[dict[str, Any]]:
        """The same, shared and cached until the next change: read it, never modify it."""
        if self._snapshot is None:
            ordered = sorted(self._records.values(), key=lambda r: r.seq)
            self._snapshot = [r.to_evidence() for r in ordered]
        return self._snapshot

    def has_gen(self, gen: int) -> bool:
        """Is any record filed by the process of generation `gen`?"""
        return any(r.gen == gen for r in self._records.values())


# ---------------------------------------------------------------- pure helpers over snapshots

ROLLUP_ORDER = ("blocked", "error", "working", "done", "idle")
"""P7501-22's order (chosen over RI-8's; see classifier docstring)."""


def effective_app(
    records: list[dict[str, Any]], rec: dict[str, Any], by_id: dict[str, dict[str, Any]] | None = None
) -> str | None:
    """P7501-18: a record without `app` shows its nearest ancestor's (root last).

    Pass `by_id` (id -> record) when calling for many records: it keeps this linear."""
    if rec.get("app"):
        return rec["app"]
    if by_id is None:
        by_id = {r["id"]: r for r in records}
    rid = rec["id"]
    while rid:
        rid = rid.rpartition("/")[0]
        parent = by_id.get(rid)
        if parent is not None and parent.get("app"):
            return parent["app"]
    return None


def roll_up(records: list[dict[str, Any]]) -> dict[str, Any] | None:
    """P7501-22: the record that speaks for the pane — most pressing state, ties to the newest."""
    if not records:
        return None
    rank = {s: i for i, s in enumerate(ROLLUP_ORDER)}
    return min(records, key=lambda r: (rank.get(r["state"], len(rank)), -r["seq"]))
