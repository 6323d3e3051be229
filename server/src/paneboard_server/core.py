"""The server's authoritative pane state and its single writer task.

Everything that changes panes or hosts (collector reports, staleness expiry, "seen",
a collector going away, changes made by another process on the same PostgreSQL)
becomes an operation on one queue. The writer takes whatever has queued up, applies
it in one transaction (a burst of reports is one commit, not one per report), and
only after the commit updates the in-memory mirror, acknowledges collectors, and
publishes the changes to live-stream clients. One writer means no locks and a clear
order of changes.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from paneboard_protocol.pane import HISTORY_FIELDS, ROW_FIELDS, UPDATE_FIELDS
from sqlalchemy import bindparam, delete, insert, select, text, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from . import reclassify
from . import schema as s
from .config import Config
from .database import is_sqlite
from .hub import Hub
from .model import Host, Pane
from .staleness import Deadlines
from .wire import HostIn, Key, PaneIn

log = logging.getLogger("paneboard.server")
# Operations per transaction. PANEBOARD_WRITER_BATCH=1 (one commit per operation) exists
# only so bench/ingest.py can show what batching buys; nobody should run with it.
BATCH_MAX = max(1, int(os.environ.get("PANEBOARD_WRITER_BATCH", "4000")))
# Collector messages allowed to wait for the writer before ingest stops reading sockets.
MAX_PENDING = 2000
NOTIFY_CHANNEL = "paneboard_change"
SEEN_CHANNEL = "paneboard_seen"
DISCONNECTED = "collector disconnected"


class Unstorable(Exception):
    """An operation the database refused for its data (not for the database's health):
    retrying it cannot help, so its sender is told to drop it."""


class Refused(Exception):
    """An operation refused by a rule (host ownership, pane cap), before it changed anything."""

    def __init__(self, text: str, host: str | None = None) -> None:
        super().__init__(text)
        self.host = host


def is_data_error(exc: BaseException) -> bool:
    """True when `exc` (or what it wraps) is about the values sent, not the database:
    a Python-side conversion error or an SQLSTATE class 22 ("data exception")."""
    stack: list[BaseException | None] = [exc]
    seen: set[int] = set()
    while stack:
        e = stack.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, OverflowError | UnicodeError | ValueError | TypeError):
            return True
        if str(getattr(e, "sqlstate", "") or "").startswith("22"):
            return True
        stack += [getattr(e, "orig", None), e.__cause__, e.__context__]
    return False


@dataclass
class Change:
    """One committed change of a pane, for listeners (notifications)."""

    pane: dict[str, Any]
    prev_state: str | None
    reason: str
    gone: bool = False


class Tx:
    """One batch's view: copies of what it touches, rows to write, work for after commit."""

    def __init__(self, core: Core, conn: AsyncConnection, now: float) -> None:
        self.core = core
        self.conn = conn
        self.now = now
        self.hosts: dict[int, Host] = {}
        self.panes: dict[int, Pane] = {}
        self.host_dirty: set[int] = set()
        self.changed: set[int] = set()
        self.records_dirty: set[int] = set()
        self.reasons: dict[int, tuple[str | None, str]] = {}
        self.history: list[dict[str, Any]] = []
        self.collectors: dict[int, dict[str, Any]] = {}
        self.after: list[Callable[[], None]] = []
        self.refreshed: set[int] = set()
        self.new_keys: dict[tuple[int, str, str], int] = {}

    # --- lookups that copy into the batch ---------------------------------------
    def host_by_id(self, host_id: int) -> Host | None:
        h = self.hosts.get(host_id)
        if h is None:
            base = self.core.hosts.get(host_id)
            if base is None:
                return None
            h = self.hosts[host_id] = base.copy()
        return h

    async def host(self, collector_id: int, name: str) -> Host:
        hid = self.core.host_ids.get((collector_id, name))
        if hid is not None:
            h = self.host_by_id(hid)
            assert h is not None
            return h
        for h in self.hosts.values():
            if h.collector_id == collector_id and h.name == name:
                return h
        res = await self.conn.execute(
            insert(s.hosts).values(collector_id=collector_id, name=name, reachable=True, last_seen=self.now)
        )
        h = Host(res.inserted_primary_key[0], collector_id, name, True, None, self.now)
        self.hosts[h.id] = h
        self.host_dirty.add(h.id)
        return h

    def pane_by_id(self, pane_id: int) -> Pane | None:
        p = self.panes.get(pane_id)
        if p is None:
            base = self.core.panes.get(pane_id)
            if base is None:
                return None
            p = self.panes[pane_id] = base.copy()
        return p

    def find_pane(self, host_id: int, tmux: str, pane: str) -> Pane | None:
        pid = self.core.pane_ids.get((host_id, tmux, pane)) or self.new_keys.get((host_id, tmux, pane))
        return self.pane_by_id(pid) if pid is not None else None

    async def ensure_panes(self, keys: list[tuple[Host, str, str]]) -> None:
        """Create the panes not yet known in one statement (a snapshot of a new
        collector may bring hundreds; one INSERT each would be one round trip each)."""
        missing: dict[tuple[int, str, str], None] = {}
        for host, tmux, pane in keys:
            k = (host.id, tmux, pane)
            if k not in missing and self.find_pane(*k) is None:
                missing[k] = None
        if not missing:
            return
        rows = [
            {
                "host_id": h,
                "tmux": tm,
                "pane": pn,
                "observable": True,
                "rev": 0,
                "last_seen": self.now,
                "evidence": {},
            }
            for h, tm, pn in missing
        ]
        # One executemany and one SELECT: INSERT ... RETURNING with guaranteed order may fall
        # back to a statement per row on SQLite, and every statement is a round trip to the
        # driver's thread through a busy event loop.
        # A key may have a row already: a gone pane evicted from memory (`gone_in_memory`)
        # that comes back keeps its id and history.
        ins = (pg_insert if self.core.is_pg else sqlite_insert)(s.panes).on_conflict_do_nothing()
        await self.conn.execute(ins, rows)
        hosts = sorted({h for h, _, _ in missing})
        found = (
            await self.conn.execute(
                select(s.panes.c.id, s.panes.c.host_id, s.panes.c.tmux, s.panes.c.pane).where(
                    s.panes.c.host_id.in_(hosts)
                )
            )
        ).all()
        ids = {(r.host_id, r.tmux, r.pane): r.id for r in found}
        for key in missing:
            h, tm, pn = key
            p = Pane(ids[key], h, tm, pn, last_seen=self.now, gone_at=self.now)
            self.panes[p.id] = p
            self.new_keys[key] = p.id
            self.records_dirty.add(p.id)  # an evicted pane's old records must not linger

    async def pane(self, host: Host, tmux: str, pane: str) -> Pane:
        p = self.find_pane(host.id, tmux, pane)
        if p is None:
            await self.ensure_panes([(host, tmux, pane)])
            p = self.find_pane(host.id, tmux, pane)
            assert p is not None
        return p

    async def owner(self, name: str) -> int | None:
        """The collector that owns host `name`: known in memory, created in this batch, or
        (another process on the same PostgreSQL) in the database."""
        owner = self.core.host_owner.get(name)
        if owner is not None:
            return owner
        for h in self.hosts.values():
            if h.name == name:
                return h.collector_id
        row = (
            await self.conn.execute(
                select(s.hosts.c.collector_id).where(s.hosts.c.name == name).order_by(s.hosts.c.id).limit(1)
            )
        ).first()
        return None if row is None else int(row[0])

    def live_count(self, collector_id: int) -> int:
        n = self.core.live_count(collector_id)
        for p in self.panes.values():
            base = self.core.panes.get(p.id)
            h = self.hosts.get(p.host_id) or self.core.hosts.get(p.host_id)
            if h is None or h.collector_id != collector_id:
                continue
            n += (p.gone_at is None) - (base is not None and base.gone_at is None)
        return n

    # --- changes -------------------------------------------------------------------
    def touch(self, p: Pane, reason: str, prev_state: str | None) -> None:
        self.changed.add(p.id)
        self.reasons.setdefault(p.id, (prev_state, reason))

    def classify(self, p: Pane, fields: dict[str, Any], reason: str) -> None:
        """Set a pane's classification; a change of (agent, state, kind) is history."""
        prev = p.triple()
        was_gone = p.gone_at is not None
        before = {"agent": p.agent, "state": p.state, "kind": p.kind, "msg": p.msg, "since": p.since}
        for k, v in fields.items():
            if k != "since":
                setattr(p, k, v)
        p.gone_at = None
        if p.state is not None or p.observable:
            p.last_known = None  # it says what it is now: nothing to remember
        if p.triple() != prev or was_gone:
            p.since = fields.get("since") or self.now
            if p.state is None and not p.observable and before["state"] is not None and not was_gone:
                # It lost its state where it cannot be seen (behind ssh): keep what it was.
                p.last_known = {**before, "at": self.now}
            self.history.append(
                {
                    "pane_id": p.id,
                    "t": self.now,
                    **{k: getattr(p, k) for k in HISTORY_FIELDS},
                    "prev_state": None if was_gone else prev[1],
                    "reason": reason,
                }
            )
        elif fields.get("since") is not None:
            p.since = fields["since"]
        self.touch(p, reason, None if was_gone else prev[1])

    def gone(self, p: Pane, t: float) -> None:
        if p.gone_at is not None:
            return
        prev = p.state
        p.gone_at = self.now
        self.history.append(
            {
                "pane_id": p.id,
                "t": self.now,
                **dict.fromkeys(HISTORY_FIELDS),
                "agent": p.agent,
                "prev_state": prev,
                "reason": "gone",
            }
        )
        self.touch(p, "gone", prev)

    def set_host(self, h: Host, reachable: bool, error: str | None) -> None:
        if h.reachable != reachable or h.error != error:
            was = h.reachable
            h.reachable, h.error = reachable, error
            h.unreachable_since = None if reachable else (h.unreachable_since or self.now)
            if was != reachable:
                for p in list(self.core.panes.values()) + list(self.panes.values()):
                    if p.host_id == h.id and p.gone_at is None:
                        q = self.pane_by_id(p.id)
                        if q is not None:
                            self.touch(q, "reachable" if reachable else "unreachable", q.state)
        h.last_seen = self.now
        self.host_dirty.add(h.id)


#: What a collector's update sets on a pane (records are compared and kept apart).
_APPLIED = tuple(k for k in UPDATE_FIELDS if k in ROW_FIELDS)


def apply_update(tx: Tx, p: Pane, u: PaneIn, reason: str = "report") -> None:
    """A collector's view of a pane, re-derived with the server's clock when possible."""
    fields: dict[str, Any] = {k: getattr(u, k) for k in _APPLIED}
    # Only a THINKTERM_AGENT contract makes the verdict depend on the clock (TA-12/TA-13);
    # without one the server's classification is the collector's, so skip the work.
    server = reclassify.classify(u.evidence, tx.now) if u.evidence.get("contract") else None
    if server is not None:
        for k in reclassify.FIELDS:
            if k in server:
                fields[k] = server[k]
        if server.get("state") != u.state or server.get("agent") != u.agent:
            fields["since"] = None  # the server's own verdict starts now
    records = [dict(r) for r in u.records]
    if records != p.records:
        p.records = records
        tx.records_dirty.add(p.id)
    p.last_seen = tx.now
    tx.classify(p, fields, reason)


class Core:
    def __init__(self, engine: AsyncEngine, cfg: Config, clock: Callable[[], float] = time.time) -> None:
        self.engine = engine
        self.cfg = cfg
        self.clock = clock
        self.is_pg = not is_sqlite(str(engine.url))
        self.instance = uuid.uuid4().hex[:12]
        self.hosts: dict[int, Host] = {}
        self.host_ids: dict[tuple[int, str], int] = {}
        self.panes: dict[int, Pane] = {}
        self.pane_ids: dict[tuple[int, str, str], int] = {}
        self.rev = 0
        self.queue: asyncio.Queue[Op] = asyncio.Queue()
        self.hub = Hub(cfg.limits.sse_queue)
        self.deadlines = Deadlines(self.clock, self._due)
        self.listeners: list[Callable[[list[Change]], Any]] = []
        self.seen_routes: dict[int, Callable[[dict[str, Any]], None]] = {}
        self.collector_names: dict[int, str] = {}
        # tmux sessions already in the tmux_sessions table: (host id, tmux server, name).
        self.sessions: set[tuple[int, str, str]] = set()
        self.stats = {
            "reports": 0,
            "batches": 0,
            "commits_failed": 0,
            "stale_changes": 0,
            "batches_retried": 0,
            "refused_invalid": 0,
            "refused_unstorable": 0,
            "refused_host": 0,
            "refused_cap": 0,
        }
        # Set while the writer cannot commit (cleared by the next commit): /healthz shows it.
        self.writer_error: tuple[float, str] | None = None
        # Gone panes kept in memory per collector, oldest first; beyond
        # `limits.gone_in_memory` they leave memory (not the database).
        self.gone_order: dict[int, OrderedDict[int, None]] = {}
        self.evicted_rev = 0  # the highest rev of a pane evicted from memory (SSE resume)
        # Host name -> the collector that owns it (the first to announce it).
        self.host_owner: dict[str, int] = {}
        self._tasks: list[asyncio.Task[Any]] = []
        self.collector_rows: set[int] | None = None  # token ids that have a collectors row
        self._room = asyncio.Event()

    # --- lifecycle -------------------------------------------------------------------
    async def load(self) -> None:
        async with self.engine.connect() as conn:
            for r in (await conn.execute(select(s.hosts))).all():
                self._put_host(
                    Host(
                        r.id,
                        r.collector_id,
                        r.name,
                        bool(r.reachable),
                        r.error,
                        r.last_seen,
                        r.unreachable_since,
                    )
                )
            recs: dict[int, list[dict[str, Any]]] = {}
            for r in (await conn.execute(select(s.pane_records))).all():
                recs.setdefault(r.pane_id, []).append(dict(r.data or {}))
            rows = (await conn.execute(select(s.panes))).all()
            for r in sorted(rows, key=lambda r: (r.gone_at is not None, r.gone_at or 0)):
                p = _pane_from_row(r)
                p.records = recs.get(p.id, [])
                self._put_pane(p)
            for p in self.panes.values():
                if p.state is None and not p.observable and p.gone_at is None:
                    p.last_known = await _last_known(conn, p.id)
            for r in (await conn.execute(select(s.tmux_sessions))).all():
                self.sessions.add((r.host_id, r.tmux, r.name))
            for r in (await conn.execute(select(s.tokens.c.id, s.tokens.c.name))).all():
                self.collector_names[r.id] = r.name
        self.rev = max((p.rev for p in self.panes.values()), default=0)
        now = self.clock()
        for p in self.panes.values():
            if p.gone_at is None:
                self.deadlines.schedule(p.id, reclassify.deadline(p.evidence, now))

    def start(self) -> None:
        self._tasks.append(asyncio.create_task(self._writer(), name="paneboard-writer"))
        self._tasks.append(asyncio.create_task(self.deadlines.run(), name="paneboard-deadlines"))

    async def stop(self) -> None:
        # Let queued work commit (acks already promised nothing; this just loses less).
        try:
            await asyncio.wait_for(self.queue.join(), 5)
        except TimeoutError:
            log.warning("stopping with %d operations not committed", self.queue.qsize())
        for t in self._tasks:
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def submit(self, op: Op) -> None:
        self.queue.put_nowait(op)

    async def submit_ingest(self, op: Op) -> None:
        """Queue a collector's message, waiting while the writer is behind.

        The wait stops that connection's reader, so TCP pushes back on the collector,
        whose uplink coalesces per pane meanwhile: the server's memory stays bounded and
        what finally arrives is the newest state, not a backlog of old ones.
        """
        while self.queue.qsize() >= MAX_PENDING:
            self._room.clear()
            await self._room.wait()
        self.queue.put_nowait(op)

    def _due(self, pane_ids: list[int]) -> None:
        self.submit(Reevaluate(pane_ids))

    def _put_host(self, h: Host) -> None:
        self.hosts[h.id] = h
        self.host_ids[(h.collector_id, h.name)] = h.id
        owner = self.host_owner.get(h.name)
        if owner is None or (owner != h.collector_id and self._first_host(h.name) == h.id):
            self.host_owner[h.name] = h.collector_id

    def _first_host(self, name: str) -> int:
        return min(h.id for h in self.hosts.values() if h.name == name)

    def collector_name(self, collector_id: int) -> str | None:
        return self.collector_names.get(collector_id)

    def live_count(self, collector_id: int) -> int:
        """Live panes of a collector (for its cap); counted, as caps are checked rarely."""
        return sum(
            1
            for p in self.panes.values()
            if p.gone_at is None
            and (h := self.hosts.get(p.host_id)) is not None
            and h.collector_id == collector_id
        )

    def _track_gone(self, p: Pane) -> None:
        """Keep at most `limits.gone_in_memory` gone panes per collector in memory: the
        oldest leave memory (their rows and history stay in the database until retention
        removes them; a key that comes back finds its row again)."""
        h = self.hosts.get(p.host_id)
        if h is None:
            return
        order = self.gone_order.setdefault(h.collector_id, OrderedDict())
        if p.gone_at is None:
            order.pop(p.id, None)
            return
        order[p.id] = None
        order.move_to_end(p.id)
        cap = self.cfg.limits.gone_in_memory
        while len(order) > cap:
            pid, _ = order.popitem(last=False)
            old = self.panes.pop(pid, None)
            if old is not None:
                self.pane_ids.pop((old.host_id, old.tmux, old.pane), None)
                self.evicted_rev = max(self.evicted_rev, old.rev)
            self.deadlines.forget(pid)

    def _put_pane(self, p: Pane) -> None:
        self.panes[p.id] = p
        self.pane_ids[(p.host_id, p.tmux, p.pane)] = p.id
        self._track_gone(p)

    def api(self, p: Pane) -> dict[str, Any]:
        h = self.hosts.get(p.host_id)
        return p.api(h, self.collector_names.get(h.collector_id) if h is not None else None)

    def live_panes(self) -> list[dict[str, Any]]:
        return [self.api(p) for p in sorted(self.panes.values(), key=lambda p: p.id) if p.gone_at is None]

    def collector_of(self, pane_id: int) -> tuple[int, Key] | None:
        p = self.panes.get(pane_id)
        h = self.hosts.get(p.host_id) if p else None
        if p is None or h is None:
            return None
        return h.collector_id, Key(host=h.name, tmux=p.tmux, pane=p.pane)

    # --- the writer -------------------------------------------------------------------
    async def _writer(self) -> None:
        while True:
            batch = [await self.queue.get()]
            while len(batch) < BATCH_MAX:
                try:
                    batch.append(self.queue.get_nowait())
                except asyncio.QueueEmpty:
                    break
            self._room.set()
            try:
                await self._write(batch)
            finally:
                for _ in batch:
                    self.queue.task_done()

    async def _write(self, batch: list[Op]) -> None:
        """Commit a batch; if it fails, commit its operations one by one, so one bad
        operation fails alone and never another collector's."""
        batch = [op for op in batch if op.wanted()]
        if not batch:
            return
        try:
            await self._apply(batch)
            return
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self.collector_rows = None  # re-read after a failed batch
            if len(batch) == 1:
                self._failed(batch[0], exc)
                return
            self.stats["batches_retried"] += 1
            log.warning("a batch of %d operations failed (%s); retrying them one by one", len(batch), exc)
        for op in batch:
            if not op.wanted():  # its connection failed on an earlier operation of this batch
                continue
            try:
                await self._apply([op])
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                self.collector_rows = None
                self._failed(op, exc)

    def _failed(self, op: Op, exc: BaseException) -> None:
        if is_data_error(exc):
            self.stats["refused_unstorable"] += 1
            log.warning("refused an operation the database cannot store: %s: %s", type(exc).__name__, exc)
            op.failed(Unstorable(f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"))
            return
        self.stats["commits_failed"] += 1
        self.writer_error = (self.clock(), f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}")
        log.error("could not commit: %s: %s", type(exc).__name__, exc)
        op.failed(exc)

    async def _apply(self, batch: list[Op]) -> None:
        now = self.clock()
        async with self.engine.begin() as conn:
            tx = Tx(self, conn, now)
            for op in batch:
                await op.apply(tx)
            await self._flush(tx)
        self.writer_error = None
        self._commit(tx)
        self.stats["batches"] += 1

    async def _flush(self, tx: Tx) -> None:
        conn = tx.conn
        changed = sorted(tx.changed)
        if changed:
            if self.is_pg:
                revs = [
                    r[0]
                    for r in (
                        await conn.execute(
                            text("SELECT nextval('pane_rev_seq') FROM generate_series(1, :n)"),
                            {"n": len(changed)},
                        )
                    ).all()
                ]
            else:
                revs = list(range(self.rev + 1, self.rev + 1 + len(changed)))
            for pid, rev in zip(changed, revs, strict=True):
                tx.panes[pid].rev = rev
            cols = list(Pane(0, 0, "", "").row())
            stmt = (
                update(s.panes)
                .where(s.panes.c.id == bindparam("pid"))
                .values({c: bindparam(c) for c in cols})
            )
            await conn.execute(stmt, [{"pid": pid, **tx.panes[pid].row()} for pid in changed])
        if tx.records_dirty:
            ids = sorted(tx.records_dirty)
            await conn.execute(delete(s.pane_records).where(s.pane_records.c.pane_id.in_(ids)))
            rows = []
            for pid in ids:
                seen: set[str] = set()
                for r in tx.panes[pid].records:
                    rid = str(r.get("id") or "")[:255]
                    if rid in seen:
                        continue
                    seen.add(rid)
                    rows.append(
                        {
                            "pane_id": pid,
                            "record_id": rid,
                            "state": _s(r.get("state"), 16),
                            "kind": _s(r.get("kind"), 32),
                            "app": _s(r.get("app"), 128),
                            "msg": _s(r.get("msg"), 4096),
                            "title": _s(r.get("title"), 4096),
                            "data": r,
                        }
                    )
            if rows:
                await conn.execute(insert(s.pane_records), rows)
        if tx.host_dirty:
            stmt = (
                update(s.hosts)
                .where(s.hosts.c.id == bindparam("hid"))
                .values(
                    reachable=bindparam("reachable"),
                    error=bindparam("error"),
                    last_seen=bindparam("last_seen"),
                    unreachable_since=bindparam("unreachable_since"),
                )
            )
            await conn.execute(
                stmt,
                [
                    {
                        "hid": h.id,
                        "reachable": h.reachable,
                        "error": h.error,
                        "last_seen": h.last_seen,
                        "unreachable_since": h.unreachable_since,
                    }
                    for h in (tx.hosts[i] for i in sorted(tx.host_dirty))
                ],
            )
        new_sessions = {
            (p.host_id, p.tmux, p.session)
            for p in (tx.panes[i] for i in changed)
            if p.session and (p.host_id, p.tmux, p.session) not in self.sessions
        }
        if new_sessions:
            # Another process on the same database may have added one already: ignore that.
            ins = (pg_insert if self.is_pg else sqlite_insert)(s.tmux_sessions).on_conflict_do_nothing()
            await conn.execute(
                ins,
                [
                    {"host_id": h, "tmux": tm, "name": n, "last_seen": tx.now}
                    for h, tm, n in sorted(new_sessions)
                ],
            )
            tx.after.append(lambda: self.sessions.update(new_sessions))
        if tx.history:
            await conn.execute(insert(s.history), tx.history)
        if tx.collectors:
            await self._write_collectors(conn, tx)
        if self.is_pg and changed:
            ids = [str(pid) for pid in changed]
            for chunk in _chunks(ids, 7000):
                await conn.execute(
                    text("SELECT pg_notify(:c, :p)"),
                    {"c": NOTIFY_CHANNEL, "p": self.instance + ":" + ",".join(chunk)},
                )

    async def _write_collectors(self, conn: AsyncConnection, tx: Tx) -> None:
        """Stream positions of every collector in the batch: one statement per shape,
        not one (or two) per collector."""
        if self.collector_rows is None:
            self.collector_rows = {r[0] for r in (await conn.execute(select(s.collectors.c.token_id))).all()}
        known = self.collector_rows
        new = [{"token_id": cid, **v} for cid, v in tx.collectors.items() if cid not in known]
        for shape in {tuple(sorted(r)) for r in new}:
            await conn.execute(insert(s.collectors), [r for r in new if tuple(sorted(r)) == shape])
        old = [(cid, v) for cid, v in tx.collectors.items() if cid in known]
        for shape in {tuple(sorted(v)) for _, v in old}:
            stmt = (
                update(s.collectors)
                .where(s.collectors.c.token_id == bindparam("cid"))
                .values({k: bindparam(k) for k in shape})
            )
            await conn.execute(stmt, [{"cid": cid, **v} for cid, v in old if tuple(sorted(v)) == shape])
        if new:
            added = {r["token_id"] for r in new}
            tx.after.insert(0, lambda: known.update(added))

    def _commit(self, tx: Tx) -> None:
        for h in tx.hosts.values():
            self._put_host(h)
        changes: list[Change] = []
        live: list[dict[str, Any]] = []
        gone: list[int] = []
        top = self.rev
        for pid in sorted(tx.changed | tx.refreshed, key=lambda i: tx.panes[i].rev):
            p = tx.panes[pid]
            self._put_pane(p)
            top = max(top, p.rev)
            prev, reason = tx.reasons.get(pid, (None, "refresh"))
            if p.gone_at is not None:
                gone.append(pid)
                self.deadlines.forget(pid)
                changes.append(Change({"id": pid}, prev, reason, gone=True))
            else:
                data = self.api(p)
                live.append(data)
                changes.append(Change(data, prev, reason))
                self.deadlines.schedule(pid, reclassify.deadline(p.evidence, self.clock()))
        self.rev = top
        self.hub.publish(top, live, gone)
        for fn in tx.after:
            try:
                fn()
            except Exception as exc:  # an ack to a collector that just went away
                log.debug("after-commit callback failed: %s", exc)
        if changes:
            for listener in self.listeners:
                try:
                    listener(changes)
                except Exception as exc:
                    log.error("change listener failed: %s", exc)


def _s(v: Any, n: int) -> str | None:
    return None if v is None else str(v)[:n]


def _chunks(items: list[str], limit: int) -> list[list[str]]:
    out: list[list[str]] = [[]]
    size = 0
    for it in items:
        if size + len(it) + 1 > limit and out[-1]:
            out.append([])
            size = 0
        out[-1].append(it)
        size += len(it) + 1
    return out


async def _last_known(conn: Any, pane_id: int) -> dict[str, Any] | None:
    """The last classified state in a pane's history and when it ended (on start-up)."""
    h = s.history.c
    row = (
        await conn.execute(
            select(h.id, h.t, h.agent, h.state, h.kind, h.msg)
            .where(h.pane_id == pane_id, h.state.is_not(None))
            .order_by(h.id.desc())
            .limit(1)
        )
    ).first()
    if row is None:
        return None
    m = row._mapping
    end = (
        await conn.execute(select(h.t).where(h.pane_id == pane_id, h.id > m["id"]).order_by(h.id).limit(1))
    ).scalar()
    keys = ("agent", "state", "kind", "msg")
    return {**{k: m[k] for k in keys}, "since": m["t"], "at": end if end is not None else m["t"]}


def _pane_from_row(r: Any) -> Pane:
    m = r._mapping
    p = Pane(r.id, r.host_id, r.tmux, r.pane, **{k: m[k] for k in ROW_FIELDS})
    p.observable = bool(p.observable)
    p.evidence = dict(p.evidence or {})
    p.rev = p.rev or 0
    return p


# --- operations ------------------------------------------------------------------------
@dataclass
class Op:
    on_commit: Callable[[], None] | None = field(default=None, kw_only=True)
    on_fail: Callable[[BaseException], None] | None = field(default=None, kw_only=True)

    async def apply(self, tx: Tx) -> None:
        raise NotImplementedError

    async def run(self, tx: Tx) -> None:
        await self.apply(tx)

    def wanted(self) -> bool:
        """False once the operation's sender has failed: it must not be applied then
        (a later seq committed after a lost one would be acknowledged for both)."""
        return True

    def failed(self, exc: BaseException) -> None:
        if self.on_fail is not None:
            self.on_fail(exc)


class _Hooked(Op):
    def hook(self, tx: Tx) -> None:
        if self.on_commit is not None:
            tx.after.append(self.on_commit)


@dataclass
class Ingest(_Hooked):
    """A collector's snapshot or delta (already validated), then its sequence number."""

    collector_id: int
    stream: str
    seq: int
    version: str = ""
    snapshot_hosts: dict[str, HostIn] | None = None  # set for a snapshot
    panes: list[PaneIn] = field(default_factory=list)
    gone: list[tuple[Key, float]] = field(default_factory=list)
    host_ops: list[tuple[str, bool, str | None]] = field(default_factory=list)
    alive: Callable[[], bool] = lambda: True

    def wanted(self) -> bool:
        return self.alive()

    def names(self) -> set[str]:
        out = {u.key.host for u in self.panes} | {name for name, _, _ in self.host_ops}
        return out | set(self.snapshot_hosts or ())

    async def check(self, tx: Tx) -> None:
        """Refuse, before changing anything, a claim to another collector's host and a
        message that would take the collector over its cap of live panes."""
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
            new = 0
            for u in self.panes:
                hid = tx.core.host_ids.get((cid, u.key.host))
                if hid is None or tx.find_pane(hid, u.key.tmux, u.key.pane) is None:
                    new += 1
            live = tx.live_count(cid) if new else 0
            if new and live + new > cap:
                tx.core.stats["refused_cap"] += 1
                raise Refused(f"{live + new} live panes, limit {cap} per collector")

    async def apply(self, tx: Tx) -> None:
        cid = self.collector_id
        try:
            await self.check(tx)
        except Refused as exc:
            self.failed(exc)  # nothing was changed: the rest of the batch goes on
            return
        if self.snapshot_hosts is not None:
            for name, h in self.snapshot_hosts.items():
                host = await tx.host(cid, name)
                tx.set_host(host, h.reachable, h.error)
        for name, reachable, error in self.host_ops:
            host = await tx.host(cid, name)
            tx.set_host(host, reachable, error)
        present: set[int] = set()
        wanted = []
        for u in self.panes:
            wanted.append((await tx.host(cid, u.key.host), u.key.tmux, u.key.pane))
        await tx.ensure_panes(wanted)
        for u in self.panes:
            host = await tx.host(cid, u.key.host)
            if self.snapshot_hosts is None:
                host.last_seen = tx.now
                tx.host_dirty.add(host.id)
            p = await tx.pane(host, u.key.tmux, u.key.pane)
            apply_update(tx, p, u)
            present.add(p.id)
            tx.core.stats["reports"] += 1
        for key, t in self.gone:
            hid = tx.core.host_ids.get((cid, key.host))
            p = tx.find_pane(hid, key.tmux, key.pane) if hid is not None else None
            if p is not None:
                tx.gone(p, t)
        if self.snapshot_hosts is not None:
            mine = {
                h.id for h in list(tx.core.hosts.values()) + list(tx.hosts.values()) if h.collector_id == cid
            }
            for p in list(tx.core.panes.values()):
                if p.host_id in mine and p.id not in present and p.gone_at is None:
                    q = tx.pane_by_id(p.id)
                    if q is not None and q.gone_at is None:
                        tx.gone(q, tx.now)
        tx.collectors[cid] = {
            "stream": self.stream,
            "last_seq": self.seq,
            "version": self.version,
            "connected": True,
            "last_seen": tx.now,
        }
        self.hook(tx)


@dataclass
class Reevaluate(Op):
    """Deadlines that came due: re-run the classifier on stored evidence with `now`."""

    pane_ids: list[int]

    async def apply(self, tx: Tx) -> None:
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


@dataclass
class Seen(_Hooked):
    """The user looked at a pane: `done` becomes `idle` (P7501-8)."""

    pane_id: int
    result: dict[str, Any] = field(default_factory=dict)

    async def apply(self, tx: Tx) -> None:
        self.hook(tx)
        p = tx.pane_by_id(self.pane_id)
        if p is None or p.gone_at is not None:
            return
        ev = reclassify.mark_seen(p.evidence, tx.now)
        fields = reclassify.classify(ev, tx.now) if ev is not None else None
        if ev is not None and fields is not None:
            p.evidence = ev
            tx.classify(p, {k: fields[k] for k in reclassify.FIELDS if k in fields}, "seen")
        elif p.state == "done":
            tx.classify(p, {"state": "idle", "kind": None, "since": tx.now}, "seen")
        self.result["changed"] = p.id in tx.changed


@dataclass
class HostsDown(Op):
    """A collector stayed away past the grace period: its hosts become unreachable."""

    collector_id: int
    still_away: Callable[[], bool] = lambda: True

    async def apply(self, tx: Tx) -> None:
        if not self.still_away():
            return
        for h in list(tx.core.hosts.values()):
            if h.collector_id == self.collector_id and h.reachable:
                host = tx.host_by_id(h.id)
                if host is not None:
                    tx.set_host(host, False, DISCONNECTED)
        tx.collectors[self.collector_id] = {"connected": False, "last_seen": tx.now}


@dataclass
class HostsUp(Op):
    """A collector is back: hosts it was away from are reachable again (their next
    report or snapshot says otherwise if the collector itself cannot reach them)."""

    collector_id: int

    async def apply(self, tx: Tx) -> None:
        for h in list(tx.core.hosts.values()):
            if h.collector_id == self.collector_id and not h.reachable and h.error == DISCONNECTED:
                host = tx.host_by_id(h.id)
                if host is not None:
                    tx.set_host(host, True, None)


@dataclass
class Refresh(Op):
    """Panes another process changed (PostgreSQL NOTIFY): re-read them, publish, no write."""

    pane_ids: list[int] | None  # None: compare every pane's rev (after a lost connection)

    async def apply(self, tx: Tx) -> None:
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
            return
        host_ids = {r.host_id for r in wanted}
        for r in (await conn.execute(select(s.hosts).where(s.hosts.c.id.in_(host_ids)))).all():
            tx.hosts[r.id] = Host(
                r.id, r.collector_id, r.name, bool(r.reachable), r.error, r.last_seen, r.unreachable_since
            )
        ids = [r.id for r in wanted]
        recs: dict[int, list[dict[str, Any]]] = {}
        for r in (await conn.execute(select(s.pane_records).where(s.pane_records.c.pane_id.in_(ids)))).all():
            recs.setdefault(r.pane_id, []).append(dict(r.data or {}))
        for r in wanted:
            p = _pane_from_row(r)
            p.records = recs.get(p.id, [])
            tx.panes[p.id] = p
            tx.refreshed.add(p.id)


@dataclass
class Purge(_Hooked):
    """Panes gone for longer than retention keeps them: delete them and their history."""

    before: float
    removed: list[int] = field(default_factory=list)

    async def apply(self, tx: Tx) -> None:
        self.hook(tx)
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
            return
        await tx.conn.execute(delete(s.history).where(s.history.c.pane_id.in_(ids)))
        await tx.conn.execute(delete(s.pane_records).where(s.pane_records.c.pane_id.in_(ids)))
        await tx.conn.execute(delete(s.panes).where(s.panes.c.id.in_(ids)))
        self.removed.extend(ids)

        def forget() -> None:
            for pid in ids:
                p = tx.core.panes.pop(pid, None)
                if p is not None:
                    tx.core.pane_ids.pop((p.host_id, p.tmux, p.pane), None)
                    h = tx.core.hosts.get(p.host_id)
                    if h is not None:
                        tx.core.gone_order.get(h.collector_id, {}).pop(pid, None)
                tx.core.deadlines.forget(pid)

        tx.after.append(forget)
