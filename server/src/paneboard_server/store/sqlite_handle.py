"""The sqlite3 connection under each of an engine's aiosqlite connections, kept through
public interfaces only.

The writer runs a batch's statements on the event loop's own thread, straight on the
sqlite3 connection (`bulk.Pipeline`), and aiosqlite keeps no public handle on the one it
wraps. So the engine makes each connection itself, with what SQLAlchemy would pass, plus
sqlite3's own `factory` (a `sqlite3.Connection` subclass that notes the instance made),
and keeps that instance in the pool entry's `info`, which lives as long as the
connection does (SQLAlchemy's `do_connect` event, `sqlite3.connect(factory=...)`,
`ConnectionPoolEntry.info`: all three documented).
"""

from __future__ import annotations

import sqlite3
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Dialect
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine
from sqlalchemy.pool import ConnectionPoolEntry

#: The key of the sqlite3 connection in a pool entry's `info`.
SQLITE3 = "paneboard.sqlite3"


def keep_sqlite3_handles(engine: AsyncEngine) -> None:
    """Make every new connection of this (aiosqlite) engine note its sqlite3 connection."""

    @event.listens_for(engine.sync_engine, "do_connect")
    def _connect(
        dialect: Dialect, entry: ConnectionPoolEntry, cargs: list[Any], cparams: dict[str, Any]
    ) -> Any:
        made: list[sqlite3.Connection] = []

        # One class a connection, so that the instance is handed back to this call even
        # when several connections are being opened at once on their drivers' threads.
        class Noted(sqlite3.Connection):
            def __init__(self, *args: Any, **kwargs: Any) -> None:
                super().__init__(*args, **kwargs)
                made.append(self)

        if "factory" in cparams:
            raise ValueError("keep_sqlite3_handles: the engine already passes sqlite3 a factory")
        connection = dialect.connect(*cargs, **cparams, factory=Noted)
        if len(made) != 1:  # the driver opened its connection some other way
            raise RuntimeError(f"{dialect.driver}: sqlite3.connect(factory=...) made {len(made)} connections")
        entry.info[SQLITE3] = made[0]
        return connection


async def sqlite3_of(conn: AsyncConnection) -> sqlite3.Connection | None:
    """The sqlite3 connection under `conn`; None for an engine not made by
    `keep_sqlite3_handles` (or another database)."""
    found = (await conn.get_raw_connection()).info.get(SQLITE3)
    return found if isinstance(found, sqlite3.Connection) else None


__all__ = ["SQLITE3", "keep_sqlite3_handles", "sqlite3_of"]
