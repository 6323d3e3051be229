"""Alembic environment for paneboard: async engines, batch mode for SQLite.

The URL comes from the caller (`paneboard db upgrade`, `serve --migrate`, tests) via
`config.attributes["url"]`; there is no alembic.ini to keep in sync.
"""

from __future__ import annotations

import asyncio

from alembic import context
from paneboard_server.store.database import create_engine, is_sqlite
from paneboard_server.store.schema import metadata
from sqlalchemy.engine import Connection

config = context.config


def _run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=metadata,
        render_as_batch=is_sqlite(str(connection.engine.url)),
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


async def _main(url: str) -> None:
    engine = create_engine(url)
    try:
        async with engine.connect() as conn:
            await conn.run_sync(_run)
            await conn.commit()
    finally:
        await engine.dispose()


def run() -> None:
    url = config.attributes.get("url")
    if context.is_offline_mode():
        context.configure(url=url, target_metadata=metadata, literal_binds=True)
        with context.begin_transaction():
            context.run_migrations()
        return
    conn = config.attributes.get("connection")
    if conn is not None:
        _run(conn)
        return
    asyncio.run(_main(url))


run()
