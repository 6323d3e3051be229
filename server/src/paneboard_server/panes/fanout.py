"""Several `paneboard serve` processes on one PostgreSQL: LISTEN/NOTIFY carrying ids.

The writer NOTIFYs the ids of the panes each commit changed (inside the transaction,
so the notification is delivered only if the change is committed). Every other
process re-reads those rows and publishes them to its own live-stream clients. When
the listening connection is lost, notifications may have been missed, so after
reconnecting the process compares every pane's rev with the table and re-reads what
differs. "Seen" requests for a collector connected elsewhere travel the same way.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from paneboard_protocol import wire as pwire
from paneboard_protocol.pane import PaneKey
from sqlalchemy.engine import make_url

from .core import NOTIFY_CHANNEL, SEEN_CHANNEL, Core, Refresh

if TYPE_CHECKING:
    import asyncpg

log = logging.getLogger("paneboard.fanout")

#: ids one merged refresh may collect (its re-read is one `IN (...)`; PostgreSQL takes
#: at most 32767 bind parameters)
MAX_MERGED = 5000


def _dsn(url: str) -> str:
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


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
        if self.conn is not None:
            await self.conn.execute("SELECT pg_notify($1, $2)", SEEN_CHANNEL, str(pane_id))

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
                self.ready.set()
                delay = 0.5
                while not conn.is_closed():
                    await asyncio.sleep(1)
                    try:
                        await asyncio.wait_for(conn.execute("SELECT 1"), 5)
                    except Exception:
                        break
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
