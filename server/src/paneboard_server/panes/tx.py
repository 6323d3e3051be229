"""One writer batch's view of the pane state: copies of what it touches, rows to write,
work for after commit.

Operations change the copies only; the writer flushes them (`flush.py`) and, once the
transaction has committed, puts them into the in-memory mirror. A batch that fails
leaves the mirror as it was, since nothing outside the batch saw its copies.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from operator import attrgetter
from typing import TYPE_CHECKING, Any, cast

from paneboard_protocol.pane import HISTORY_FIELDS, ROW_FIELDS, LastKnown, State
from sqlalchemy import func, insert, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncConnection

from ..ledger import WAITING
from ..store import schema as s
from .model import Host, Pane
from .state import PaneState

if TYPE_CHECKING:
    from paneboard_protocol.wire import HostState

_history_values = attrgetter(*HISTORY_FIELDS)

#: A history row as the writer builds it: a tuple in the order of the table's columns
#: (its id aside), read by position (`H_*`). A dict a row, filled by name, read back by
#: name for the insert and again by the ledger, cost the writer more instructions.
HISTORY_ORDER = ("pane_id", "t", *HISTORY_FIELDS, "prev_state", "reason")
_READ_BY_POSITION = ("pane_id", "t", "agent", "state", "kind", "msg", "prev_state", "reason")
H_PANE, H_T, H_AGENT, H_STATE, H_KIND, H_MSG, H_PREV, H_REASON = map(HISTORY_ORDER.index, _READ_BY_POSITION)
HistoryRow = tuple[Any, ...]


def host_lock_key(name: str) -> int:
    """The advisory lock (a signed 64-bit key) that serialises claims of host `name`
    across processes; a collision between two names only makes their claims queue."""
    digest = hashlib.blake2b(name.encode("utf-8", "surrogatepass"), digest_size=8, person=b"pb-host").digest()
    return int.from_bytes(digest, "big", signed=True)


class Tx:
    """One batch's view: copies of what it touches, rows to write, work for after commit."""

    def __init__(self, core: PaneState, conn: AsyncConnection, now: float) -> None:
        self.core = core
        self.conn = conn
        self.now = now
        self.hosts: dict[int, Host] = {}
        self.panes: dict[int, Pane] = {}
        self.host_dirty: set[int] = set()
        self.changed: set[int] = set()
        self.records_dirty: set[int] = set()
        self.reasons: dict[int, tuple[State | None, str]] = {}
        self.history: list[HistoryRow] = []  # in `HISTORY_ORDER`
        self.collectors: dict[int, dict[str, Any]] = {}
        self.after: list[Callable[[], None]] = []
        self.refreshed: set[int] = set()
        self.new_keys: dict[tuple[int, str, str], int] = {}
        # Panes still waiting whose question text changed without a history row (a
        # contract's `blocked`, then the question read off its screen): the ledger's open
        # wait takes the text the card shows.
        self.retexts: dict[int, str] = {}
        # Collectors that opened enough waits since their last check to be checked
        # against their cap of ledger rows at this flush (`wait_cap.py`).
        self.waits_due: set[int] = set()

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
        if self.core.is_pg:
            # made through another process (this one's memory holds only hosts it loaded
            # at start-up or saw with panes): the collector's own row, not a second one
            row = (
                await self.conn.execute(
                    select(s.hosts).where(s.hosts.c.collector_id == collector_id, s.hosts.c.name == name)
                )
            ).first()
            if row is not None:
                h = self.hosts[row.id] = host_from_row(row)
                return h
        res = await self.conn.execute(
            insert(s.hosts).values(collector_id=collector_id, name=name, reachable=True, last_seen=self.now)
        )
        key = res.inserted_primary_key
        assert key is not None  # an INSERT of one row always has one
        h = Host(key[0], collector_id, name, True, None, self.now)
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

    async def ensure_panes(
        self, keys: list[tuple[Host, str, str]], found: list[Pane | None] | None = None
    ) -> list[Pane]:
        """The panes of `keys`, in order, the ones not yet known created in one statement
        (a snapshot of a new collector may bring hundreds; one INSERT each would be one
        round trip each). Returned, so the caller does not look each up again. `found`:
        the same keys already looked up in this batch, None where not found then: those
        are looked up again, since the host they were looked for may be this batch's own
        (the cap's check reads only the mirror's hosts) and its pane made earlier in it."""
        if found is None or None in found:
            found = [
                p or self.find_pane(h.id, tm, pn)
                for p, (h, tm, pn) in zip(found or [None] * len(keys), keys, strict=True)
            ]
        missing = {(h.id, tm, pn): None for (h, tm, pn), p in zip(keys, found, strict=True) if p is None}
        if not missing:
            return cast("list[Pane]", found)  # every one found
        await self._create_panes(missing)
        out = []
        for p, (host, tmux, pane) in zip(found, keys, strict=True):
            p = p or self.find_pane(host.id, tmux, pane)
            assert p is not None  # made above
            out.append(p)
        return out

    async def _create_panes(self, missing: dict[tuple[int, str, str], None]) -> None:
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
            p = Pane.heard_of(ids[key], h, tm, pn, last_seen=self.now, gone_at=self.now)
            self.panes[p.id] = p
            self.new_keys[key] = p.id
            self.records_dirty.add(p.id)  # an evicted pane's old records must not linger

    async def pane(self, host: Host, tmux: str, pane: str) -> Pane:
        p = self.find_pane(host.id, tmux, pane)
        if p is None:
            (p,) = await self.ensure_panes([(host, tmux, pane)])
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
        if self.core.is_pg:
            # A name new to this process: another process may be claiming it right now,
            # its row not yet committed, so neither would see the other's and both would
            # accept. The lock (held to this transaction's end) makes the second claim
            # wait for the first; the read after it sees the first one's committed row.
            await self.conn.execute(select(func.pg_advisory_xact_lock(host_lock_key(name))))
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
    def touch(self, p: Pane, reason: str, prev_state: State | None) -> None:
        self.changed.add(p.id)
        self.reasons.setdefault(p.id, (prev_state, reason))

    def classify(self, p: Pane, fields: dict[str, Any], reason: str) -> None:
        """Set a pane's classification; a change of (agent, state, kind) is history.

        Runs once per report, so it reads what it needs before the change as locals and
        builds the remembered state only when a pane loses its state unseen."""
        prev = p.triple()
        was_gone = p.gone_at is not None
        old_msg, old_since = p.msg, p.since
        since = fields.get("since")
        for k, v in fields.items():
            if k != "since":
                setattr(p, k, v)
        p.gone_at = None
        if p.state is not None or p.observable:
            p.last_known = None  # it says what it is now: nothing to remember
        if p.triple() != prev or was_gone:
            p.since = since or self.now
            agent, state, kind = prev
            if p.state is None and not p.observable and state is not None and not was_gone:
                # It lost its state where it cannot be seen (behind ssh): keep what it was,
                # and why (`stale`: its report outlived its `ts`; the board keeps such a
                # `blocked` among the waits, as possibly still waiting).
                p.last_known = LastKnown(
                    agent=agent,
                    state=state,
                    kind=kind,
                    msg=old_msg,
                    since=old_since,
                    at=self.now,
                    reason=reason,
                )
            self.history.append((p.id, self.now, *_history_values(p), None if was_gone else prev[1], reason))
            self.retexts.pop(p.id, None)  # the row carries its own text
        else:
            if since is not None:
                p.since = since
            if p.msg and p.msg != old_msg and p.state in WAITING:
                self.retexts[p.id] = p.msg
        self.touch(p, reason, None if was_gone else prev[1])

    def gone(self, p: Pane) -> None:
        """The pane is gone as of this batch (`now`): a history row, once."""
        if p.gone_at is not None:
            return
        prev = p.state
        p.gone_at = self.now
        row: list[Any] = [None] * len(HISTORY_ORDER)
        row[H_PANE], row[H_T], row[H_AGENT] = p.id, self.now, p.agent
        row[H_PREV], row[H_REASON] = prev, "gone"
        self.history.append(tuple(row))
        self.touch(p, "gone", prev)

    def set_host(self, h: Host, reachable: bool, error: str | None, health: HostState | None = None) -> None:
        """A host's reachability (and, from its collector, the link's health: round trip,
        reconnects, last contact) as of now."""
        if health is not None:
            h.rtt, h.reconnects, h.contact = health.rtt, health.reconnects, health.contact
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


def pane_from_row(r: Any) -> Pane:
    """A `panes` row as a Pane (records are read apart, from `pane_records`)."""
    m = r._mapping
    p = Pane.heard_of(r.id, r.host_id, r.tmux, r.pane, **{k: m[k] for k in ROW_FIELDS})
    p.observable = bool(p.observable)
    p.evidence = dict(p.evidence or {})
    p.rev = p.rev or 0
    return p


def host_from_row(r: Any) -> Host:
    """A `hosts` row as a Host."""
    return Host(r.id, r.collector_id, r.name, bool(r.reachable), r.error, r.last_seen, r.unreachable_since)
