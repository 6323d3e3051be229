"""Revocation bites at once: open streams and collector sockets end when their
credential goes, not at their next reconnect.

`paneboard token revoke` and `paneboard user remove` run in another process and only
write the database, so every server process checks, every `revocation_check` seconds
(0.5 by default) and only while something is open, whether the credentials behind its
open ingest WebSockets and `/api/stream` responses still exist: the token not revoked,
the viewer account not removed, the browser session not deleted (revoking a token or
removing a user deletes its sessions; so does logging out). A token is identified by
its hash, not its row: a name revoked and re-created between two checks keeps its row
id, and the connections made with the old token still end. A periodic check rather
than PostgreSQL NOTIFY: it works the same on SQLite, needs no trigger in the CLI, and
costs three indexed queries over at most the open ids twice a second.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine
from sqlalchemy.sql import ColumnElement

from ..store import schema as s
from .accounts import Principal

log = logging.getLogger("paneboard.revocation")

CHUNK = 500  # ids per IN (...) list, well under SQLite's variable limit


@dataclass(eq=False)
class Holder:
    """One open thing that lives on a credential, and how to end it."""

    principal: Principal
    end: Callable[[str], None]
    what: str


class Revocation:
    def __init__(self, engine: AsyncEngine, interval: float) -> None:
        self.engine = engine
        self.interval = interval
        self.holders: set[Holder] = set()
        self.extra: list[Callable[[], Iterable[Holder]]] = []  # e.g. the connected collectors

    def hold(self, principal: Principal, end: Callable[[str], None], what: str) -> Holder:
        h = Holder(principal, end, what)
        self.holders.add(h)
        return h

    def release(self, h: Holder) -> None:
        self.holders.discard(h)

    def _open(self) -> list[Holder]:
        out = list(self.holders)
        for source in self.extra:
            out.extend(source())
        return out

    async def check(self) -> int:
        """End every holder whose credential is gone; returns how many were ended."""
        holders = self._open()
        if not holders:
            return 0
        token_ids = {h.principal.id for h in holders if h.principal.kind in ("collector", "viewer-token")}
        viewer_ids = {h.principal.id for h in holders if h.principal.kind == "viewer"}
        sessions = {h.principal.session_hash for h in holders if h.principal.session_hash}
        async with self.engine.connect() as conn:
            live_tokens = await _live_tokens(conn, token_ids)
            live_viewers = await _present(conn, s.viewers.c.id, viewer_ids)
            live_sessions = await _present(conn, s.web_sessions.c.id_hash, sessions)
        ended = 0
        for h in holders:
            p = h.principal
            if p.kind == "viewer":
                alive = p.id in live_viewers
            else:
                alive = p.id in live_tokens and p.credential in (None, live_tokens[p.id])
            if alive and p.session_hash is not None:
                alive = p.session_hash in live_sessions
            if not alive:
                ended += 1
                self.holders.discard(h)
                log.info("%s of %s %r ended: credential revoked or removed", h.what, p.kind, p.name)
                h.end("credential revoked")
        return ended

    async def run(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            try:
                await self.check()
            except Exception as exc:  # the database may be briefly away: try again next time
                log.warning("revocation check failed: %s: %s", type(exc).__name__, str(exc)[:200])


async def _present(
    conn: AsyncConnection, column: ColumnElement[Any], values: Iterable[Any], *cond: ColumnElement[bool]
) -> set[Any]:
    """Which of `values` exist in `column` (under the extra conditions)."""
    found: set[Any] = set()
    items = list(values)
    for i in range(0, len(items), CHUNK):
        part = items[i : i + CHUNK]
        rows = (await conn.execute(select(column).where(column.in_(part), *cond))).all()
        found.update(r[0] for r in rows)
    return found


async def _live_tokens(conn: AsyncConnection, ids: Iterable[int]) -> dict[int, str]:
    """The unrevoked tokens among `ids`, with the hash each holds now."""
    t = s.tokens
    found: dict[int, str] = {}
    items = list(ids)
    for i in range(0, len(items), CHUNK):
        q = select(t.c.id, t.c.token_hash).where(t.c.id.in_(items[i : i + CHUNK]), t.c.revoked_at.is_(None))
        found.update((r.id, r.token_hash) for r in (await conn.execute(q)).all())
    return found
