"""The operations the writer applies, one class per kind of change.

Each changes only the batch's view (`Tx`); none commits, publishes or acknowledges
anything itself: the writer does that after the commit, running every operation's
`on_commit` (`writer.py`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import msgspec
from paneboard_protocol.pane import ROW_FIELDS, UPDATE_FIELDS, PaneKey, PaneUpdate
from paneboard_protocol.wire import HostState
from sqlalchemy import delete, select

from ..store import schema as s
from . import reclassify
from .model import Host, Pane
from .tx import Tx, host_from_row, pane_from_row

DISCONNECTED = "collector disconnected"


class Refused(Exception):
    """An operation refused by a rule (host ownership, pane cap), before it changed anything."""

    def __init__(self, text: str, host: str | None = None) -> None:
        super().__init__(text)
        self.host = host


#: What a collector's update sets on a pane (records are compared and kept apart), and
#: the update's other fields, left out of it.
_APPLIED = tuple(k for k in UPDATE_FIELDS if k in ROW_FIELDS)
_NOT_APPLIED = tuple(f.name for f in msgspec.structs.fields(PaneUpdate) if f.name not in _APPLIED)
_asdict = msgspec.structs.asdict


def apply_update(tx: Tx, p: Pane, u: PaneUpdate, reason: str = "report", resumed: bool = False) -> None:
    """A collector's view of a pane, re-derived with the server's clock when possible.

    `resumed`: the view comes in a snapshot (a collector that restarted, reconnected or
    resynced rebuilds its whole view). Its `since` is then when *this run* of the
    collector first saw the state, not when the state began: a pane that still shows
    exactly what is stored (agent, state, kind and msg) keeps the stored `since`, so a
    wait that outlives a collector restart stays one wait."""
    # every field in one C call, less the few not applied: cheaper than a dict of the
    # applied names filled from an attrgetter
    fields: dict[str, Any] = _asdict(u)
    for name in _NOT_APPLIED:
        del fields[name]
    # Only a THINKTERM_AGENT contract makes the verdict depend on the clock (TA-12/TA-13);
    # without one the server's classification is the collector's, so skip the work.
    server = reclassify.classify(u.evidence, tx.now) if u.evidence.get("contract") else None
    if server is not None:
        for k in reclassify.FIELDS:
            if k in server:
                fields[k] = server[k]
        if server.get("state") != u.state or server.get("agent") != u.agent:
            fields["since"] = None  # the server's own verdict starts now
    if resumed and p.gone_at is None and same_prompt(p, fields):
        fields["since"] = p.since
    records = tuple(dict(r) for r in u.records)
    if resumed and p.gone_at is None and reported_wait_outlives(p, fields, records, u.evidence):
        for k in ("agent", "state", "kind", "msg", "source"):
            fields[k] = getattr(p, k)
        fields["since"] = p.since
        records = p.records
    if records != p.records:
        p.records = records
        tx.records_dirty.add(p.id)
    p.last_seen = tx.now
    tx.classify(p, fields, reason)


def _pid(evidence: Any) -> int:
    proc = evidence.get("process") if isinstance(evidence, dict) else None
    pid = proc.get("pid") if isinstance(proc, dict) else None
    return pid if isinstance(pid, int) and not isinstance(pid, bool) else 0


def reported_wait_outlives(
    p: Pane, fields: dict[str, Any], records: tuple[dict[str, Any], ...], evidence: Any
) -> bool:
    """A collector that (re)started knows nothing of a `blocked` its pane's program
    reported over OSC 7501 before it attached (tmux keeps no raw output), while the
    stored pane still holds it. A record lives as long as the process that wrote it
    (P7501-8), so when the process in front is the very one that reported (same pid)
    and the new collector has learnt nothing since, the wait goes on: it keeps its
    state, question, `since` and ledger row. Anything the collector does learn (a
    record, a screen, another process) is applied as usual."""
    return (
        p.state == "blocked"
        and p.source == "protocol"
        and bool(p.records)
        and fields.get("state") is None
        and not records
        and bool(fields.get("observable"))
        and 0 < _pid(evidence) == _pid(p.evidence)
    )


def same_prompt(p: Pane, fields: dict[str, Any]) -> bool:
    """The update says what the pane already says: same agent, state, kind and text."""
    keys = ("agent", "state", "kind", "msg")
    return p.state is not None and all(fields.get(k) == getattr(p, k) for k in keys)


@dataclass
class Op:
    """One change for the writer. `on_commit` runs after the transaction that applied it
    committed (the writer runs it for every operation); `on_fail` when it could not be."""

    on_commit: Callable[[], None] | None = field(default=None, kw_only=True)
    on_fail: Callable[[BaseException], None] | None = field(default=None, kw_only=True)

    async def apply(self, tx: Tx) -> bool:
        """Change `tx`; False when refused before changing anything (its sender has been
        told through `failed`), so its `on_commit` must not run."""
        raise NotImplementedError

    def wanted(self) -> bool:
        """False once the operation's sender has failed: it must not be applied then
        (a later seq committed after a lost one would be acknowledged for both)."""
        return True

    def failed(self, exc: BaseException) -> None:
        if self.on_fail is not None:
            self.on_fail(exc)


@dataclass
class Ingest(Op):
    """A collector's snapshot or delta (already validated), then its sequence number."""

    collector_id: int
    stream: str
    seq: int
    version: str = ""
    snapshot_hosts: dict[str, HostState] | None = None  # set for a snapshot
    panes: list[PaneUpdate] = field(default_factory=list)
    gone: list[tuple[PaneKey, float]] = field(default_factory=list)
    host_ops: list[tuple[str, HostState]] = field(default_factory=list)
    alive: Callable[[], bool] = lambda: True
    #: where each of `panes` is in its message (`panes.3`, `ops.5.update`), for a refusal
    where: list[str] = field(default_factory=list)
    #: panes the database refused, left out of this message: (where.field, why)
    dropped: list[tuple[str, str]] = field(default_factory=list)
    #: tells the sender of each dropped pane, after the rest committed and before its ack
    on_drop: Callable[[str, str], None] | None = field(default=None, kw_only=True)

    def wanted(self) -> bool:
        return self.alive()

    def at(self, i: int) -> str:
        return self.where[i] if i < len(self.where) else f"panes.{i}"

    def probe(self, keep: list[int], replace: PaneUpdate | None = None) -> Ingest:
        """Only the panes at `keep` as a delta with no hooks (`isolate.py` writes it and
        rolls it back); `replace` stands in for the one pane kept."""
        panes = [self.panes[i] for i in keep] if replace is None else [replace]
        return dataclasses.replace(
            self,
            snapshot_hosts=None,
            panes=panes,
            gone=[],
            host_ops=[],
            where=[],
            dropped=[],
            on_commit=None,
            on_fail=None,
            on_drop=None,
        )

    def without(self, refused: dict[int, tuple[str | None, str]]) -> Ingest:
        """This message less the panes the database refused (index -> (the field, if one
        alone is refused; why)), which its sender is told of once the rest has committed."""
        keep = [i for i in range(len(self.panes)) if i not in refused]
        dropped = [
            (self.at(i) + ("" if name is None else f".{name}"), why)
            for i, (name, why) in sorted(refused.items())
        ]
        return dataclasses.replace(
            self,
            panes=[self.panes[i] for i in keep],
            where=[self.at(i) for i in keep],
            dropped=self.dropped + dropped,
        )

    def tell_dropped(self) -> None:
        if self.on_drop is not None:
            for at, why in self.dropped:
                self.on_drop(at, why)

    def names(self) -> set[str]:
        out = {u.key.host for u in self.panes} | {name for name, _ in self.host_ops}
        return out | set(self.snapshot_hosts or ())

    async def check(self, tx: Tx) -> list[Pane | None] | None:
        """Refuse, before changing anything, a claim to another collector's host and a
        message that would take the collector over its cap of live panes. The panes of a
        delta, as found for the cap (None: new), are returned for `apply` to go on with."""
        cid = self.collector_id
        for name in sorted(self.names()):
            owner = await tx.owner(name)
            if owner is not None and owner != cid:
                tx.core.stats["refused_host"] += 1
                who = tx.core.collector_name(owner) or f"#{owner}"
                raise Refused(f"host {name!r} belongs to collector {who!r}", name)
        cap = tx.core.cfg.limits.max_live_panes_per_collector
        if len(self.panes) > cap:
            tx.core.stats["refused_cap"] += 1
            raise Refused(f"{len(self.panes)} panes, limit {cap} live panes per collector")
        if self.snapshot_hosts is None and self.panes:
            host_ids = tx.core.host_ids
            found: list[Pane | None] = []
            for u in self.panes:
                k = u.key
                hid = host_ids.get((cid, k.host))
                found.append(None if hid is None else tx.find_pane(hid, k.tmux, k.pane))
            new = found.count(None)
            live = tx.live_count(cid) if new else 0
            if new and live + new > cap:
                tx.core.stats["refused_cap"] += 1
                raise Refused(f"{live + new} live panes, limit {cap} per collector")
            return found
        return None

    async def apply(self, tx: Tx) -> bool:
        cid = self.collector_id
        try:
            found = await self.check(tx)
        except Refused as exc:
            self.failed(exc)  # nothing was changed: the rest of the batch goes on
            return False
        if self.snapshot_hosts is not None:
            for name, h in self.snapshot_hosts.items():
                host = await tx.host(cid, name)
                tx.set_host(host, h.reachable, h.error, h)
        for name, h in self.host_ops:
            host = await tx.host(cid, name)
            tx.set_host(host, h.reachable, h.error, h)
        present: set[int] = set()
        hosts: dict[str, Host] = {}  # a message names a few hosts for many panes: look each up once
        wanted = []
        for u in self.panes:
            name = u.key.host
            if name not in hosts:
                hosts[name] = await tx.host(cid, name)
            wanted.append((hosts[name], u.key.tmux, u.key.pane))
        panes = await tx.ensure_panes(wanted, found)
        resumed = self.snapshot_hosts is not None
        if not resumed:
            for host in hosts.values():
                host.last_seen = tx.now
                tx.host_dirty.add(host.id)
        for u, p in zip(self.panes, panes, strict=True):
            apply_update(tx, p, u, resumed=resumed)
            present.add(p.id)
        tx.core.stats["reports"] += len(self.panes)
        went = 0
        for key, _t in self.gone:  # gone as of this batch's clock, not the collector's
            hid = tx.core.host_ids.get((cid, key.host))
            was = tx.find_pane(hid, key.tmux, key.pane) if hid is not None else None
            if was is not None and was.gone_at is None:
                tx.gone(was)
                went += 1
        if self.snapshot_hosts is not None:
            # A host the snapshot says the collector cannot reach (not connected yet after
            # a restart, its link down) says nothing about its panes: they stay, shown
            # unreachable, until a snapshot that reaches the host lists them.
            blind = {name for name, h in self.snapshot_hosts.items() if not h.reachable}
            mine = {
                h.id
                for h in list(tx.core.hosts.values()) + list(tx.hosts.values())
                if h.collector_id == cid and h.name not in blind
            }
            for p in list(tx.core.panes.values()):
                if p.host_id in mine and p.id not in present and p.gone_at is None:
                    q = tx.pane_by_id(p.id)
                    if q is not None and q.gone_at is None:
                        tx.gone(q)
                        went += 1
        if went:
            await cap_gone(tx, cid)
        if self.dropped:  # the sender hears of them before its ack (which follows this)
            tx.after.append(self.tell_dropped)
        tx.collectors[cid] = {
            "stream": self.stream,
            "last_seq": self.seq,
            "version": self.version,
            "connected": True,
            "last_seen": tx.now,
        }
        return True


@dataclass
class Reevaluate(Op):
    """Deadlines that came due: re-run the classifier on stored evidence with `now`."""

    pane_ids: list[int]

    async def apply(self, tx: Tx) -> bool:
        current: dict[int, int] | None = None
        if tx.core.is_pg:
            # Every process on the database has the same deadline; lock the rows so only
            # the first re-evaluates, the others see a newer rev and wait for its NOTIFY.
            rows = await tx.conn.execute(
                select(s.panes.c.id, s.panes.c.rev).where(s.panes.c.id.in_(self.pane_ids)).with_for_update()
            )
            current = {r.id: r.rev for r in rows.all()}
        for pid in self.pane_ids:
            p = tx.pane_by_id(pid)
            if p is None or p.gone_at is not None:
                continue
            if current is not None and current.get(pid) != p.rev and pid not in tx.changed:
                continue
            fields = reclassify.classify(p.evidence, tx.now)
            if fields is None:
                continue
            fields = {k: fields[k] for k in reclassify.FIELDS if k in fields}
            if any(getattr(p, k) != v for k, v in fields.items()):
                if (fields.get("agent"), fields.get("state"), fields.get("kind")) != p.triple():
                    tx.core.stats["stale_changes"] += 1
                fields["since"] = None
                tx.classify(p, fields, "stale")
            else:
                tx.core.deadlines.schedule(pid, reclassify.deadline(p.evidence, tx.now))
        return True


@dataclass
class Seen(Op):
    """The user looked at a pane: `done` becomes `idle` (P7501-8)."""

    pane_id: int
    result: dict[str, Any] = field(default_factory=dict)

    async def apply(self, tx: Tx) -> bool:
        p = tx.pane_by_id(self.pane_id)
        if p is None or p.gone_at is not None:
            return True
        ev = reclassify.mark_seen(p.evidence, tx.now)
        fields = reclassify.classify(ev, tx.now) if ev is not None else None
        if ev is not None and fields is not None:
            p.evidence = ev
            tx.classify(p, {k: fields[k] for k in reclassify.FIELDS if k in fields}, "seen")
        elif p.state == "done":
            tx.classify(p, {"state": "idle", "kind": None, "since": tx.now}, "seen")
        self.result["changed"] = p.id in tx.changed
        return True


@dataclass
class HostsDown(Op):
    """A collector stayed away past the grace period: its hosts become unreachable."""

    collector_id: int
    still_away: Callable[[], bool] = lambda: True

    async def apply(self, tx: Tx) -> bool:
        if not self.still_away():
            return True
        for h in list(tx.core.hosts.values()):
            if h.collector_id == self.collector_id and h.reachable:
                host = tx.host_by_id(h.id)
                if host is not None:
                    tx.set_host(host, False, DISCONNECTED)
        tx.collectors[self.collector_id] = {"connected": False, "last_seen": tx.now}
        return True


@dataclass
class HostsUp(Op):
    """A collector is back: hosts it was away from are reachable again (their next
    report or snapshot says otherwise if the collector itself cannot reach them)."""

    collector_id: int

    async def apply(self, tx: Tx) -> bool:
        for h in list(tx.core.hosts.values()):
            if h.collector_id == self.collector_id and not h.reachable and h.error == DISCONNECTED:
                host = tx.host_by_id(h.id)
                if host is not None:
                    tx.set_host(host, True, None)
        return True


@dataclass
class Refresh(Op):
    """Panes another process changed (PostgreSQL NOTIFY): re-read them, publish, no write."""

    pane_ids: list[int] | None  # None: compare every pane's rev (after a lost connection)
    # Set once the writer has begun it: until then the fan-out may add ids (`fanout.py`).
    taken: bool = field(default=False, kw_only=True)

    async def apply(self, tx: Tx) -> bool:
        self.taken = True
        conn = tx.conn
        q = select(s.panes)
        if self.pane_ids is not None:
            q = q.where(s.panes.c.id.in_(self.pane_ids))
        rows = (await conn.execute(q)).all()
        wanted = [
            r
            for r in rows
            if (tx.core.panes.get(r.id) is None or tx.core.panes[r.id].rev != r.rev)
            and r.id not in tx.changed
        ]
        if not wanted:
            return True
        host_ids = {r.host_id for r in wanted}
        for r in (await conn.execute(select(s.hosts).where(s.hosts.c.id.in_(host_ids)))).all():
            tx.hosts[r.id] = host_from_row(r)
        ids = [r.id for r in wanted]
        recs: dict[int, list[dict[str, Any]]] = {}
        for r in (await conn.execute(select(s.pane_records).where(s.pane_records.c.pane_id.in_(ids)))).all():
            recs.setdefault(r.pane_id, []).append(dict(r.data or {}))
        for r in wanted:
            p = pane_from_row(r)
            p.records = tuple(recs.get(p.id, ()))
            tx.panes[p.id] = p
            tx.refreshed.add(p.id)
        return True


@dataclass
class Purge(Op):
    """Panes gone for longer than retention keeps them: delete them and their history."""

    before: float
    removed: list[int] = field(default_factory=list)

    async def apply(self, tx: Tx) -> bool:
        self.removed.clear()  # a batch retried one by one applies this twice
        ids = [
            p.id
            for p in tx.core.panes.values()
            if p.gone_at is not None and p.gone_at < self.before and p.id not in tx.changed
        ][:1000]
        if len(ids) < 1000:  # and those already evicted from memory (`gone_in_memory`)
            old = await tx.conn.execute(
                select(s.panes.c.id).where(s.panes.c.gone_at < self.before).limit(1000 + len(ids))
            )
            ids += [i for (i,) in old.all() if i not in tx.core.panes and i not in tx.changed]
            ids = ids[:1000]
        if not ids:
            return True
        await delete_panes(tx, ids)
        self.removed.extend(ids)
        return True


async def delete_panes(tx: Tx, ids: list[int]) -> None:
    """Delete gone panes with their history and records, and forget them once committed."""
    await tx.conn.execute(delete(s.history).where(s.history.c.pane_id.in_(ids)))
    await tx.conn.execute(delete(s.pane_records).where(s.pane_records.c.pane_id.in_(ids)))
    await tx.conn.execute(delete(s.panes).where(s.panes.c.id.in_(ids)))

    def forget() -> None:
        for pid in ids:
            p = tx.core.panes.pop(pid, None)
            if p is not None:
                tx.core.pane_ids.pop((p.host_id, p.tmux, p.pane), None)
                tx.core.evicted_rev = max(tx.core.evicted_rev, p.rev)  # a resume from before: snapshot
                h = tx.core.hosts.get(p.host_id)
                order = tx.core.gone_order.get(h.collector_id) if h is not None else None
                if order is not None:
                    order.pop(pid, None)
            tx.core.deadlines.forget(pid)

    tx.after.append(forget)


#: Gone panes deleted per statement (an IN list of ids; well under either backend's
#: limit on bound parameters).
_DELETE_CHUNK = 1000


async def cap_gone(tx: Tx, collector_id: int) -> None:
    """Keep at most `retention.max_gone_panes` gone panes of one collector on disk: the
    oldest gone beyond it are deleted with their history, all of them however many went
    (a limit per batch fell behind a collector sending thousands of new keys a snapshot).

    The panes this batch makes gone are written only at its flush, so they cannot be
    deleted here; they are the newest gone, so room is made for them: as many of the
    older gone rows are kept as the cap leaves beside them. A pane this batch touches
    in any other way (one that came back) is left alone: it is live once committed."""
    cap = tx.core.cfg.retention.max_gone_panes
    hosts = tx.core.hosts
    going = sum(
        1
        for pid in tx.changed
        if (q := tx.panes.get(pid)) is not None
        and q.gone_at is not None
        and (host := tx.hosts.get(q.host_id) or hosts.get(q.host_id)) is not None
        and host.collector_id == collector_id
    )
    p, h = s.panes.c, s.hosts.c
    rows = await tx.conn.execute(
        select(p.id)
        .select_from(s.panes.join(s.hosts, p.host_id == h.id))
        .where(h.collector_id == collector_id, p.gone_at.is_not(None))
        .order_by(p.gone_at.desc(), p.id.desc())
        .offset(max(0, cap - going))
    )
    ids = [i for (i,) in rows.all() if i not in tx.changed and i not in tx.panes]
    if ids:
        tx.core.stats["gone_capped"] += len(ids)
        for at in range(0, len(ids), _DELETE_CHUNK):
            await delete_panes(tx, ids[at : at + _DELETE_CHUNK])
