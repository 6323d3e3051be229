"""The OSC 7501 record store of one pane (spec section 1, P7501-6/8/16/21/22).

Kept apart from arbitration because its rules are purely about records: one record
per `id`, each report replacing the whole previous record (P7501-6), `clear` of a
subtree or of everything (P7501-16), the lifecycle on process exit and OSC 133 `A`
(P7501-8, RI-5), RIS (P7501-21) and the 256-record cap with least-recently-updated
eviction (P7501-21). The store also remembers *which process filed* each record (a
generation number the classifier bumps when the foreground process changes, and the
writer's pid), because RI-2 only lets a record speak for the pane while the process
that wrote it is in front or an ancestor of the process in front (`follow`).

Everything it hands out is plain data, so that `snapshot()` can travel inside the
evidence dict and be re-classified by the server with the list functions at the end of
this module. Why the store is indexed: a pane may flood reports (10,000 a second) at
the cap, and rescanning 256 records per report made the classifier far slower than
the decoder. So the store keeps, incrementally:

* the records in update order (an OrderedDict: the least recently updated is first,
  so eviction and the ordered view cost nothing extra);
* per record, its effective app (P7501-18), its evidence dict and its public dict;
* how many records lie below each id (so a report knows in O(1) whether its `app`
  can change anything else's effective app — only then is everything recomputed);
* for one *context* (current generation, process agent, aliases — what arbitration
  filters live records by), the eligible live records and the left-over ones by
  state, newest last: the P7501-22 roll-up is the newest record of the first
  non-empty state. A new context rebuilds these once (process change, rules reload).

A report, a clear without a subtree and the lifecycle drops are O(1) amortised (O(id
depth)); `seen`, `drop_results` and changes of a parent's `app` are O(n), as rare as a
user's look or a process change.
"""

from __future__ import annotations

import functools
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

from paneboard_protocol.events import StatusReport
from paneboard_protocol.pane import Kind, State
from paneboard_protocol.text import sanitize_text

MAX_RECORDS = 256
"""P7501-21: up to 256 records per pane (the spec's floor is 64)."""

LIVE_STATES: frozenset[State] = frozenset({"working", "blocked", "idle"})
"""States dropped on process exit / new prompt (P7501-8; paneboard drops idle too)."""

RESULT_STATES: frozenset[State] = frozenset({"done", "error"})
"""States that survive process exit as unseen results (P7501-8, RI-5)."""

ROLLUP_ORDER: tuple[State, ...] = ("blocked", "error", "working", "done", "idle")
"""P7501-22's order (chosen over RI-8's; see classifier docstring)."""

ROLLUP_RANK = {s: i for i, s in enumerate(ROLLUP_ORDER)}
"""A state's place in ROLLUP_ORDER (lower speaks first); any other state ranks last."""
_BUCKETS: tuple[str | None, ...] = (*ROLLUP_ORDER, None)  # None: any other state, ranked last


@functools.lru_cache(maxsize=4096)
def display_text(text: str | None) -> str | None:
    """P7501-19: report text is untrusted — strip bidi, invisible formatting and control
    characters before it is shown (and so before it reaches the classification). The
    cleaning is `sanitize_text`, the same function the server applies on ingest."""
    if text is None:
        return None
    return sanitize_text(text) or None


def alias(aliases: dict[str, str], app: str | None) -> str | None:
    """RI-1 row 3: the agent an OSC 7501 `app` names (`claude-code` -> `claude`)."""
    if not app:
        return None
    return aliases.get(app, app)


@dataclass(slots=True)
class Record:
    """One stored OSC 7501 record; `id` "" is the root record."""

    id: str
    state: State
    kind: Kind | None
    app: str | None
    msg: str | None
    title: str | None
    progress: int | None
    updated: float
    seq: int
    gen: int
    agent: str | None  # the pane's identity when the record was filed (for left-over results)
    pid: int | None = None  # the process in front when it was filed: its writer (RI-2)
    writer: str | None = None  # that process's name (no arguments), for people
    # Derived, kept with the record so that reading the store costs nothing per report.
    eff_app: str | None = None
    ev: dict[str, Any] | None = None
    pub: dict[str, Any] | None = None

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
            "pid": self.pid,
            "writer": self.writer,
        }


def public_record(rec: dict[str, Any], app: str | None) -> dict[str, Any]:
    """The per-record dict a Classification carries (effective app, display-safe text)."""
    return {
        "id": rec["id"] or None,
        "state": rec["state"],
        "kind": rec["kind"],
        "app": app,
        "msg": display_text(rec["msg"]) if rec["msg"] else None,  # display_text("") is None too
        "title": display_text(rec["title"]) if rec["title"] else None,
        "progress": rec["progress"],
        "updated": rec["updated"],
    }


def is_under(record_id: str, prefix: str) -> bool:
    """True when `record_id` is `prefix` or below it (P7501-16: `ab` is not under `a`)."""
    return record_id == prefix or record_id.startswith(prefix + "/")


def ancestors(record_id: str) -> Iterator[str]:
    """The ids above `record_id`, nearest first, ending with the root "" (P7501-18)."""
    rid = record_id
    while rid:
        rid = rid.rpartition("/")[0]
        yield rid


_EV = attrgetter("ev")


def _bucket(state: str) -> str | None:
    return state if state in ROLLUP_RANK else None


class RecordStore:
    """Per-pane OSC 7501 records with replace, clear, lifecycle, LRU cap and a roll-up index."""

    def __init__(self, limit: int = MAX_RECORDS) -> None:
        self._limit = limit
        self._records: OrderedDict[str, Record] = OrderedDict()  # least recently updated first
        self._seq = 0
        self.other_seq = 0  # seq of the latest report in a state other than done (the answer rule)
        self.version = 0  # bumped on every change, so views of the records can be cached
        self._view: list[dict[str, Any]] | None = None  # caches, dropped on every change
        self._public: tuple[dict[str, Any], ...] | None = None
        self._pub: dict[str, dict[str, Any]] = {}  # id -> public dict, in update order
        self._under: dict[str, int] = {}  # id -> how many records lie strictly below it
        self._by_state: dict[str, dict[str, Record]] = {}
        # The roll-up index, valid for `_ctx` (None: rebuilt when next asked).
        self._ctx: tuple[int, str | None, dict[str, str]] | None = None
        self._live: dict[str | None, OrderedDict[str, Record]] = {b: OrderedDict() for b in _BUCKETS}
        self._left: dict[str | None, OrderedDict[str, Record]] = {b: OrderedDict() for b in _BUCKETS}
        self._live_apps: OrderedDict[str, Record] = OrderedDict()  # eligible live, naming an agent
        # done records carrying a message, newest last, live and left-over (`answer`)
        self._live_said: OrderedDict[str, Record] = OrderedDict()
        self._left_said: OrderedDict[str, Record] = OrderedDict()
        self._live_n = 0  # records of the context's generation, eligible or not

    def __len__(self) -> int:
        return len(self._records)

    # ------------------------------------------------------------ changes

    def report(
        self,
        now: float,
        event: StatusReport,
        gen: int,
        agent: str | None,
        pid: int | None = None,
        writer: str | None = None,
    ) -> None:
        """P7501-6: the report replaces the whole record with that id (root when id is None).

        `pid`: the process in front, to which the report is attributed (its writer);
        `writer`: its name, kept to say on the board who reported."""
        self._changed()
        rid = event.id or ""
        self._seq += 1
        if event.state != "done":
            self.other_seq = self._seq
        recompute = False
        old = self._records.get(rid)
        if old is None:
            if len(self._records) >= self._limit:
                # P7501-21: evict the least recently updated record (the first one).
                victim = next(iter(self._records.values()))
                recompute = bool(victim.app) and self._under.get(victim.id, 0) > 0
                self._drop(victim)
            prev_app = None
        else:
            prev_app = old.app
            self._drop(old)
        if (prev_app or None) != (event.app or None) and self._under.get(rid, 0) > 0:
            recompute = True  # records below inherit this one's app (P7501-18)
        self._add(
            Record(
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
                pid=pid,
                writer=writer,
            )
        )
        if recompute:
            self._recompute_apps()

    def clear(self, record_id: str | None) -> bool:
        """P7501-16: remove `record_id` and its subtree, or everything when None."""
        self._changed()
        if record_id is None or record_id == "":
            changed = bool(self._records)
            self._records.clear()
            self._pub.clear()
            self._under.clear()
            self._by_state.clear()
            self._ctx = None
            return changed
        if self._under.get(record_id, 0) > 0:
            gone = [r for r in self._records.values() if is_under(r.id, record_id)]
        else:
            rec = self._records.get(record_id)
            gone = [] if rec is None else [rec]
        for rec in gone:
            self._drop(rec)
        # Nothing left was below a removed record, so no effective app changed.
        return bool(gone)

    def reset(self) -> bool:
        """RIS drops every record (P7501-21)."""
        return self.clear(None)

    def end_live(self) -> bool:
        """P7501-8: process exit or OSC 133 A drops working, blocked and idle records."""
        self._changed()
        gone = [r for s in LIVE_STATES for r in self._by_state.get(s, {}).values()]
        return self._drop_all(gone)

    def follow(
        self, old_gen: int, new_gen: int, old_pid: int | None, pid: int, chain: tuple[int, ...]
    ) -> bool:
        """The process in front changed to `pid` (its ancestors `chain`, nearest first),
        and it is no manifest agent: records stay live while their writer is in front or
        an ancestor of the process in front (RI-2's "or its parents").

        A record of generation `old_gen` whose writer is `pid` or in `chain` moves to
        `new_gen` (it still applies), except that when the foreground comes back to its
        writer from a command the writer ran, that is the writer's next prompt (P7501-8's
        second event, for a shell that sends no prompt marks): its working, blocked and
        idle records end, its done and error stay. Every other live record ends as on a
        process exit (`end_live`); its results stay as left-overs."""
        self._changed()
        gone: list[Record] = []
        moved = False
        for rec in [r for r in self._records.values() if r.gen == old_gen]:
            writer = rec.pid
            applies = writer is not None and (writer == pid or writer in chain)
            prompt = writer == pid and writer != old_pid
            if rec.state in LIVE_STATES and (not applies or prompt):
                gone.append(rec)
            elif applies:
                rec.gen = new_gen
                rec.ev = rec.to_evidence()
                moved = True
        if moved:
            self._ctx = None  # eligibility depends on the generation: rebuild when asked
        return self._drop_all(gone) or moved

    def drop_results(self, current_gen: int) -> bool:
        """Another agent started: left-over results of earlier processes go (RI-5)."""
        self._changed()
        return self._drop_all([r for r in self._records.values() if r.gen != current_gen])

    def seen(self, now: float, current_gen: int) -> bool:
        """The user looked: the live process's `done` turns `idle`; left-over results go."""
        self._changed()
        gone: list[Record] = []
        turned: list[Record] = []
        for rec in list(self._records.values()):  # oldest first, as evidence_mark_seen
            if rec.gen != current_gen:
                if rec.state in RESULT_STATES:
                    gone.append(rec)
            elif rec.state == "done":
                turned.append(rec)
        for rec in turned:
            self._drop(rec)
            self._seq += 1
            rec.state = "idle"
            rec.updated = now
            rec.seq = self._seq
            self._add(rec)
        self._drop_all(gone)
        return bool(gone or turned)

    # ------------------------------------------------------------ reading

    def snapshot(self) -> list[dict[str, Any]]:
        """Records oldest-updated first, as plain dicts (fresh dicts: callers may keep them)."""
        return list(map(dict.copy, self.view()))  # flat dicts: a copy each is a deep copy

    def view(self) -> list[dict[str, Any]]:
        """The same, shared and cached until the next change: read it, never modify it."""
        if self._view is None:
            self._view = list(map(_EV, self._records.values()))
        return self._view

    def public(self) -> tuple[dict[str, Any], ...]:
        """Every record as a Classification shows it (arbitration's `records_view` of
        `view()`), shared and cached until the next change."""
        if self._public is None:
            self._public = tuple(self._pub.values())
        return self._public

    def has_gen(self, gen: int) -> bool:
        """Is any record filed by the process of generation `gen`?"""
        if self._ctx is not None and self._ctx[0] == gen:
            return self._live_n > 0
        return any(r.gen == gen for r in self._records.values())

    def facts(self, gen: int, agent: str | None, aliases: dict[str, str]) -> RecordStore:
        """The store as arbitration's record facts for this context (see `ListFacts`).

        `aliases` must map to non-empty names (a RuleSet's always do)."""
        ctx = self._ctx
        if ctx is None or ctx[0] != gen or ctx[1] != agent or ctx[2] != aliases:
            self._ctx = (gen, agent, dict(aliases))
            self._rebucket()
        return self

    def live_winner(self) -> dict[str, Any] | None:
        """P7501-22 roll-up of the eligible live records (the newest of the first state)."""
        for b in _BUCKETS:
            od = self._live[b]
            if od:
                return od[next(reversed(od))].ev
        return None

    def live_agent(self) -> str | None:
        """The agent live records name: the winner's app, else the newest that names one."""
        assert self._ctx is not None
        aliases = self._ctx[2]
        for b in _BUCKETS:
            od = self._live[b]
            if od:
                found = alias(aliases, od[next(reversed(od))].eff_app)
                if found is not None:
                    return found
                break
        if self._live_apps:
            return alias(aliases, self._live_apps[next(reversed(self._live_apps))].eff_app)
        return None

    def leftover_winner(self) -> dict[str, Any] | None:
        """P7501-22 roll-up of the records other processes left (RI-5)."""
        rec = self._left_winner()
        return None if rec is None else rec.ev

    def answer(self, live: bool) -> dict[str, Any] | None:
        """The answer rule (spec.md, P7501-22's departure): when every record of the set
        (live, or left-over) is `done` and exactly one of them carries a message newer
        than the pane's last report of another state, that record; else None."""
        buckets, said = (self._live, self._live_said) if live else (self._left, self._left_said)
        if any(od for b, od in buckets.items() if b != "done"):
            return None
        return _only_new(said, self.other_seq)

    def leftover_agent(self) -> str | None:
        rec = self._left_winner()
        if rec is None:
            return None
        assert self._ctx is not None
        return alias(self._ctx[2], rec.eff_app) or rec.agent

    # ------------------------------------------------------------ internals

    def _left_winner(self) -> Record | None:
        for b in _BUCKETS:
            od = self._left[b]
            if od:
                return od[next(reversed(od))]
        return None

    def _changed(self) -> None:
        self.version += 1
        self._view = None
        self._public = None

    def _inherited(self, rid: str) -> str | None:
        for up in ancestors(rid):
            parent = self._records.get(up)
            if parent is not None and parent.app:
                return parent.app
        return None

    def _add(self, rec: Record) -> None:
        """File `rec` as the most recently updated record (its id must be free)."""
        rid = rec.id
        self._records[rid] = rec
        for up in ancestors(rid):
            self._under[up] = self._under.get(up, 0) + 1
        self._by_state.setdefault(rec.state, {})[rid] = rec
        rec.eff_app = rec.app or self._inherited(rid)
        rec.ev = rec.to_evidence()
        rec.pub = public_record(rec.ev, rec.eff_app)
        self._pub[rid] = rec.pub
        self._place(rec)

    def _drop(self, rec: Record) -> None:
        rid = rec.id
        self._unplace(rec)
        del self._records[rid]
        del self._pub[rid]
        del self._by_state[rec.state][rid]
        for up in ancestors(rid):
            n = self._under[up] - 1
            if n:
                self._under[up] = n
            else:
                del self._under[up]

    def _drop_all(self, gone: list[Record]) -> bool:
        for rec in gone:
            self._drop(rec)
        if any(rec.app and self._under.get(rec.id, 0) > 0 for rec in gone):
            self._recompute_apps()  # survivors below a dropped record lost its app
        return bool(gone)

    def _recompute_apps(self) -> None:
        """Effective apps of every record, after a parent's `app` changed (O(n), rare)."""
        for rec in self._records.values():
            eff = rec.app or self._inherited(rec.id)
            if eff != rec.eff_app:
                rec.eff_app = eff
                rec.pub = public_record(rec.ev, eff)  # type: ignore[arg-type]  # ev is set once the record is filed
                self._pub[rec.id] = rec.pub
        self._ctx = None  # eligibility depends on the effective app: rebuild when asked

    def _rebucket(self) -> None:
        for od in (*self._live.values(), *self._left.values()):
            od.clear()
        self._live_said.clear()
        self._left_said.clear()
        self._live_apps.clear()
        self._live_n = 0
        for rec in self._records.values():
            self._place(rec)

    def _place(self, rec: Record) -> None:
        """Index `rec` for the roll-up under the current context (arbitration's filters)."""
        ctx = self._ctx
        if ctx is None:
            return
        gen, agent, aliases = ctx
        said = rec.state == "done" and bool(rec.pub and rec.pub["msg"])
        if rec.gen != gen:
            self._left[_bucket(rec.state)][rec.id] = rec
            if said:
                self._left_said[rec.id] = rec
            return
        self._live_n += 1
        named = alias(aliases, rec.eff_app)
        if agent and named is not None and named != agent:
            return  # RI-2: names another agent than the process-identified one
        self._live[_bucket(rec.state)][rec.id] = rec
        if said:
            self._live_said[rec.id] = rec
        if named:
            self._live_apps[rec.id] = rec

    def _unplace(self, rec: Record) -> None:
        ctx = self._ctx
        if ctx is None:
            return
        if rec.gen != ctx[0]:
            self._left[_bucket(rec.state)].pop(rec.id, None)
            self._left_said.pop(rec.id, None)
            return
        self._live_n -= 1
        self._live[_bucket(rec.state)].pop(rec.id, None)
        self._live_said.pop(rec.id, None)
        self._live_apps.pop(rec.id, None)


def _only_new(said: OrderedDict[str, Record], other_seq: int) -> dict[str, Any] | None:
    """The one record of `said` (update order, so seq order) newer than `other_seq`."""
    if not said:
        return None
    it = reversed(said.values())
    last = next(it)
    before = next(it, None)
    if last.seq > other_seq and (before is None or before.seq <= other_seq):
        return last.ev
    return None


# ---------------------------------------------------------------- pure helpers over snapshots


def effective_app(
    records: list[dict[str, Any]], rec: dict[str, Any], by_id: dict[str, dict[str, Any]] | None = None
) -> str | None:
    """P7501-18: a record without `app` shows its nearest ancestor's (root last).

    Pass `by_id` (id -> record) when calling for many records: it keeps this linear."""
    if rec.get("app"):
        return str(rec["app"])
    if by_id is None:
        by_id = {r["id"]: r for r in records}
    for up in ancestors(rec["id"]):
        parent = by_id.get(up)
        if parent is not None and parent.get("app"):
            return str(parent["app"])
    return None


def roll_up(records: list[dict[str, Any]]) -> dict[str, Any] | None:
    """P7501-22: the record that speaks for the pane — most pressing state, ties to the newest."""
    if not records:
        return None
    rank = ROLLUP_RANK
    return min(records, key=lambda r: (rank.get(r["state"], len(rank)), -r["seq"]))
