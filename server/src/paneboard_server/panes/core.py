"""The server's authoritative pane state and its single writer task.

Everything that changes panes or hosts (collector reports, staleness expiry, "seen",
a collector going away, changes made by another process on the same PostgreSQL)
becomes an operation (`commands.py`) on one queue. The writer (`writer.py`) takes
whatever has queued up, applies it to one batch's view (`tx.py`) in one transaction,
writes it (`flush.py`), and only after the commit updates the in-memory mirror kept
here, acknowledges collectors, and publishes the changes to live-stream clients. One
writer means no locks and a clear order of changes.

The names other modules import from here (the operations, `Unstorable`, the NOTIFY
channels) stay importable from here.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import msgspec
from paneboard_protocol import wire as pwire
from paneboard_protocol.pane import LastKnown, PaneKey
from paneboard_protocol.views import PaneDetail, PaneView
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from ..config import Config
from ..store import is_sqlite
from ..store import schema as s
from ..stream import Hub
from . import reclassify, writer
from .commands import DISCONNECTED, HostsDown, HostsUp, Ingest, Op, Purge, Reevaluate, Refresh, Refused, Seen
from .flush import NOTIFY_CHANNEL
from .isolate import is_data_error
from .model import Host, Pane
from .staleness import Deadlines
from .tx import host_from_row, pane_from_row
from .writer import BATCH_MAX, Change, Unstorable

__all__ = [
    "BATCH_MAX",
    "DISCONNECTED",
    "MAX_PENDING",
    "NOTIFY_CHANNEL",
    "SEEN_CHANNEL",
    "Change",
    "Core",
    "HostsDown",
    "HostsUp",
    "Ingest",
    "Op",
    "Purge",
    "Reevaluate",
    "Refresh",
    "Refused",
    "Seen",
    "Unstorable",
    "is_data_error",
]

log = logging.getLogger("paneboard.server")
# Collector messages allowed to wait for the writer before ingest stops reading sockets.
MAX_PENDING = 2000
SEEN_CHANNEL = "paneboard_seen"


class Core:
    """The in-memory mirror of panes and hosts, the queue to the writer, and its lifecycle."""

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
        self.seen_routes: dict[int, Callable[[pwire.ServerMessage], None]] = {}
        self.collector_names: dict[int, str] = {}
        # Hosts whose collector types answers (its hello's `input`), per collector.
        self.input_hosts: dict[int, frozenset[str]] = {}
        # tmux sessions already in the tmux_sessions table: (host id, tmux server, name).
        self.sessions: set[tuple[int, str, str]] = set()
        self.open_waits: set[int] | None = None  # panes with an open wait (waits.py; read lazily)
        # Waits each collector opened since its ledger rows were last counted (wait_cap.py).
        self.waits_opened: dict[int, int] = {}
        self.stats = {
            "reports": 0,
            "batches": 0,
            "commits_failed": 0,
            "stale_changes": 0,
            "batches_retried": 0,
            "batches_rerun": 0,  # run again whole after a deadlock with another process's writer
            "transactions_failed": 0,  # every failed write transaction, bisection and probes included
            "refused_invalid": 0,
            "refused_unstorable": 0,
            "refused_host": 0,
            "refused_cap": 0,
            "ingest_delayed": 0,  # collector connections delayed after their token's refusals
            "gone_capped": 0,  # gone panes deleted over retention.max_gone_panes
            "waits_capped": 0,  # ledger rows deleted over retention.max_waits_per_day
        }
        # Set while the writer cannot commit (cleared by the next commit): /healthz shows it.
        self.writer_error: tuple[float, str] | None = None
        # time.monotonic() when the writer's current transaction began (None between
        # batches): one stuck on a lock fails no statement, so only its age shows it.
        self.batch_started: float | None = None
        # Gone panes kept in memory per collector, oldest first; beyond
        # `limits.gone_in_memory` they leave memory (not the database).
        self.gone_order: dict[int, OrderedDict[int, None]] = {}
        self.evicted_rev = 0  # the highest rev of a pane evicted from memory (SSE resume)
        # Host name -> the collector that owns it (the first to announce it).
        self.host_owner: dict[str, int] = {}
        self._tasks: list[asyncio.Task[Any]] = []
        self.collector_rows: set[int] | None = None  # token ids that have a collectors row
        self.room = asyncio.Event()

    # --- lifecycle -------------------------------------------------------------------
    async def load(self) -> None:
        async with self.engine.connect() as conn:
            for r in (await conn.execute(select(s.hosts))).all():
                self.put_host(host_from_row(r))
            recs: dict[int, list[dict[str, Any]]] = {}
            for r in (await conn.execute(select(s.pane_records))).all():
                recs.setdefault(r.pane_id, []).append(dict(r.data or {}))
            rows = (await conn.execute(select(s.panes))).all()
            for r in sorted(rows, key=lambda r: (r.gone_at is not None, r.gone_at or 0)):
                p = pane_from_row(r)
                p.records = tuple(recs.get(p.id, ()))
                self.put_pane(p)
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
        self._tasks.append(asyncio.create_task(writer.run(self), name="paneboard-writer"))
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
            self.room.clear()
            await self.room.wait()
        self.queue.put_nowait(op)

    def _due(self, pane_ids: list[int]) -> None:
        self.submit(Reevaluate(pane_ids))

    def put_host(self, h: Host) -> None:
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
        if p.gone_at is None:  # every live pane of every change: no new OrderedDict for it
            if (order := self.gone_order.get(h.collector_id)) is not None:
                order.pop(p.id, None)
            return
        order = self.gone_order.setdefault(h.collector_id, OrderedDict())
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

    def put_pane(self, p: Pane) -> None:
        if self.panes.get(p.id) is None:  # a row's key never changes: index it once
            self.pane_ids[(p.host_id, p.tmux, p.pane)] = p.id
        self.panes[p.id] = p
        self._track_gone(p)

    def view(self, p: Pane) -> PaneView:
        """The pane as clients see it, with its host's name and state and its collector's."""
        h = self.hosts.get(p.host_id)
        if h is None:
            return p.view(None)
        cid = h.collector_id
        return p.view(h, self.collector_names.get(cid), h.name in self.input_hosts.get(cid, ()))

    def detail(self, p: Pane) -> PaneDetail:
        """The pane's view and what decided its state now (`GET /api/panes/{id}`), from
        the evidence its collector sent (`reclassify.why`)."""
        v = self.view(p)
        return PaneDetail(**msgspec.structs.asdict(v), why=reclassify.why(p.evidence, self.clock()))

    def live_views(self) -> list[PaneView]:
        """Every live pane's view, by id (`GET /api/panes`, the stream's snapshot)."""
        return [self.view(p) for p in sorted(self.panes.values(), key=lambda p: p.id) if p.gone_at is None]

    def collector_of(self, pane_id: int) -> tuple[int, PaneKey] | None:
        p = self.panes.get(pane_id)
        h = self.hosts.get(p.host_id) if p else None
        if p is None or h is None:
            return None
        return h.collector_id, PaneKey(host=h.name, tmux=p.tmux, pane=p.pane)


async def _last_known(conn: Any, pane_id: int) -> LastKnown | None:
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
        await conn.execute(
            select(h.t, h.reason).where(h.pane_id == pane_id, h.id > m["id"]).order_by(h.id).limit(1)
        )
    ).first()
    at, reason = (end._mapping["t"], end._mapping["reason"]) if end is not None else (m["t"], None)
    return LastKnown(
        agent=m["agent"], state=m["state"], kind=m["kind"], msg=m["msg"], since=m["t"], at=at, reason=reason
    )
