"""The PostgreSQL the suite uses: `PANEBOARD_TEST_PG` (default
`postgresql://postgres@127.0.0.1:5432/test`) names a server where tests may create and
drop databases. A PostgreSQL that does not answer fails the test that needs it, like
any other missing tool (support/tools.py)."""

from __future__ import annotations

import asyncio
import os

from sqlalchemy.engine import make_url

from support.tools import missing

PG_ADMIN = os.environ.get("PANEBOARD_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")


def pg_exec(sql: str, dbname: str | None = None) -> None:
    """Run one statement on the admin server (or on `dbname` there)."""
    import asyncpg

    async def go() -> None:
        url = make_url(PG_ADMIN)
        if dbname:
            url = url.set(database=dbname)
        conn = await asyncpg.connect(url.set(drivername="postgresql").render_as_string(hide_password=False))
        try:
            await conn.execute(sql)
        finally:
            await conn.close()

    asyncio.run(go())


def pg_available() -> str | None:
    """None when PostgreSQL answers, else why not."""
    try:
        pg_exec("SELECT 1")
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


def require_postgres() -> None:
    """Fail the test unless PostgreSQL answers at PG_ADMIN."""
    why = pg_available()
    if why is not None:
        missing(f"PostgreSQL at {PG_ADMIN}", why)
