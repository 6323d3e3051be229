"""Several `paneboard serve` processes on one PostgreSQL: LISTEN/NOTIFY carrying ids.

The writer NOTIFYs the ids of the panes each commit changed (inside the transaction,
so the notification is delivered only if the change is committed). Every other
process re-reads those rows and publishes them to its own live-stream clients. When
the listening connection is lost, notifications may have been missed, so after
reconnecting the process compares every pane's rev with the table and re-reads what
differs. "Seen" requests for a collector connected elsewhere travel the same way.

Which process holds a collector is in the database too: while a collector is connected
here, the listening connection holds a shared advisory lock on (`HOLD_CLASS`, its id).
PostgreSQL drops a session's locks with the session, so a process that died, or whose
listening connection broke (it hears no request then), holds nothing, and no message can
be missed: `held_anywhere` reads `pg_locks`. After a reconnect the locks are taken again.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from paneboard_protocol import wire as pwire
from paneboard_protocol.pane import PaneKey
from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine

from .core import NOTIFY_CHANNEL, SEEN_CHANNEL, Core, Refresh

if TYPE_CHECKING:
    import asyncpg

log = logging.getLogger("paneboard.fanout")

#: ids one merged refresh may collect (its re-read is one `IN (...)`; PostgreSQL takes
#: at most 32767 bind parameters)
MAX_MERGED = 5000
#: the advisory lock class of "a process holds this collector" (the two-int4-key form, so
#: it cannot meet a single bigint key another program on the database may use)
HOLD_CLASS = 0x70626864


def _dsn(url: str) -> str:
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


async def held_anywhere(engine: AsyncEngine, collector_id: int) -> bool:
    """Whether any process's listening connection holds this collector now (in this
    database: `pg_locks` lists the whole cluster's)."""
    q = text(
        "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted"
        " AND classid = :c AND objid = :o AND objsubid = 2"
        " AND database = (SELECT oid FROM pg_database WHERE datname = current_database()))"
    )
    async with engine.connect() as conn:
        return bool((await conn.execute(q, {"c": HOLD_CLASS, "o": collector_id})).scalar())


class Fanout:
    def __init__(self, core: Core, registry: Any) -> None:
        self.core = core
        self.registry = registry
        self.dsn = _dsn(str(core.engine.url.render_as_string(hide_password=False)))
        self.ready = asyncio.Event()
        self.conn: asyncpg.Connection | None = None
        # The refresh queued and not yet begun, and its ids: notifications arriving before
        # the writer takes it join it, so a busy peer costs one re-read per writer batch
        # rather than one per commit of every other process (no added delay).
        self._open: Refresh | None = None
        self._open_ids: set[int] = set()
        self.merged = 0  # notifications that joined a queued refresh
        self.extra: list[tuple[str, Any]] = []  # (channel, callback): replicas.py's
        # asyncpg runs one operation at a time on a connection; these take turns
        self.io = asyncio.Lock()
        self.held: set[int] = set()  # collector ids whose hold lock this session has
        self.holds_wake = asyncio.Event()

    def _on_change(self, _conn: Any, _pid: int, _channel: str, payload: str) -> None:
        origin, _, ids = payload.partition(":")
        if origin == self.core.instance or not ids:
            return
        try:
            pane_ids = [int(x) for x in ids.split(",") if x]
        except ValueError:
            return
        op = self._open
        if op is not None and not op.taken and op.pane_ids is not None and len(self._open_ids) < MAX_MERGED:
            new = [i for i in pane_ids if i not in self._open_ids]
            self._open_ids.update(new)
            op.pane_ids.extend(new)
            self.merged += 1
            return
        self._open = Refresh(pane_ids)
        self._open_ids = set(pane_ids)
        self.core.submit(self._open)

    def _on_seen(self, _conn: Any, _pid: int, _channel: str, payload: str) -> None:
        try:
            pane_id = int(payload)
        except ValueError:
            return
        target = self.core.collector_of(pane_id)
        if target is None:
            return
        cid, key = target
        send = self.core.seen_routes.get(cid)
        if send is not None:
            send(pwire.seen(PaneKey(key.host, key.tmux, key.pane), self.core.clock()))

    async def notify_seen(self, pane_id: int) -> None:
        conn = self.conn
        if conn is not None:
            async with self.io:
                await conn.execute("SELECT pg_notify($1, $2)", SEEN_CHANNEL, str(pane_id))

    def holds_changed(self, _cid: int | None = None) -> None:
        """A collector attached here or went: bring the hold locks up to date."""
        self.holds_wake.set()

    async def _keep_holds(self, conn: asyncpg.Connection) -> None:
        """Hold a lock for every collector connected here, and only for those, on `conn`
        (a fresh session: it holds none when this starts)."""
        self.held = set()
        while True:
            await self.holds_wake.wait()
            self.holds_wake.clear()
            want = set(self.core.seen_routes)
            async with self.io:
                for cid in sorted(want - self.held):
                    await conn.execute("SELECT pg_advisory_lock_shared($1, $2)", HOLD_CLASS, cid)
                    self.held.add(cid)
                for cid in sorted(self.held - want):
                    await conn.execute("SELECT pg_advisory_unlock_shared($1, $2)", HOLD_CLASS, cid)
                    self.held.discard(cid)

    async def run(self) -> None:
        import asyncpg  # here, not at the top: a server on SQLite never needs it

        delay = 0.5
        first = True
        while True:
            try:
                conn = await asyncpg.connect(self.dsn)
                await conn.add_listener(NOTIFY_CHANNEL, self._on_change)
                await conn.add_listener(SEEN_CHANNEL, self._on_seen)
                for channel, callback in self.extra:
                    await conn.add_listener(channel, callback)
                self.conn = conn
                if not first:
                    self.core.submit(Refresh(None))  # whatever was missed while away
                first = False
                self.holds_wake.set()
                holds = asyncio.create_task(self._keep_holds(conn), name="paneboard-holds")
                self.ready.set()
                delay = 0.5
                try:
                    while not conn.is_closed() and not holds.done():
                        await asyncio.sleep(1)
                        try:
                            async with self.io:
                                await asyncio.wait_for(conn.execute("SELECT 1"), 5)
                        except Exception:
                            break
                finally:
                    holds.cancel()
                    await asyncio.gather(holds, return_exceptions=True)
                if holds.done() and not holds.cancelled() and holds.exception() is not None:
                    log.warning("fan-out hold locks failed: %s", holds.exception())
                    await conn.close()
            except asyncio.CancelledError:
                if self.conn is not None:
                    await self.conn.close()
                raise
            except Exception as exc:
                log.warning("fan-out connection lost: %s; retrying in %.1fs", exc, delay)
                self.ready.set()
            self.conn = None
            await asyncio.sleep(delay)
            delay = min(delay * 2, 10)
