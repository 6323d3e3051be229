"""Migration hosts_0004 on a database where the race it closes already happened: two
collectors' rows for one host name. The first row (the owner the servers showed) stays;
the later one goes with its panes, records, history and sessions; a notification that
pointed at such a pane keeps its text. On SQLite and on PostgreSQL."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url
from support.postgres import PG_ADMIN, pg_exec, require_postgres


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def bare_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """An empty database (no schema), as an async URL."""
    if request.param == "sqlite":
        yield f"sqlite+aiosqlite:///{tmp_path / 'old.db'}"
        return
    require_postgres()
    name = f"pb_mig_{uuid.uuid4().hex[:10]}"
    pg_exec(f'CREATE DATABASE "{name}"')
    try:
        yield (
            make_url(PG_ADMIN)
            .set(database=name, drivername="postgresql+asyncpg")
            .render_as_string(hide_password=False)
        )
    finally:
        pg_exec(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


SEED = [
    "INSERT INTO tokens (id, name, kind, token_hash, created_at, screens) VALUES "
    "(1, 'col', 'collector', 'h1', 0, false), (2, 'two', 'collector', 'h2', 0, false)",
    "INSERT INTO hosts (id, collector_id, name, reachable) VALUES (10, 1, 'vm', true), "
    "(11, 2, 'vm', true), (12, 2, 'own', true)",
    "INSERT INTO panes (id, host_id, tmux, pane, observable, rev) VALUES "
    "(100, 10, 'default', '%1', true, 1), (101, 11, 'default', '%1', true, 2), "
    "(102, 12, 'default', '%1', true, 3)",
    "INSERT INTO history (pane_id, t, reason) VALUES "
    "(100, 1, 'report'), (101, 1, 'report'), (102, 1, 'report')",
    "INSERT INTO pane_records (pane_id, record_id) VALUES (100, ''), (101, '')",
    "INSERT INTO tmux_sessions (host_id, tmux, name) VALUES (10, 'default', 's'), (11, 'default', 's')",
    "INSERT INTO notification_log (t, pane_id, channel, state, ok, detail) "
    "VALUES (1, 101, 'browser', 'blocked', true, 'd')",
]


def test_the_later_of_two_collectors_hosts_of_one_name_goes(bare_url: str) -> None:
    from paneboard_server.store.database import create_engine
    from paneboard_server.store.migrate import upgrade

    upgrade(bare_url, "push_0003")

    async def run(statements: list[str]) -> list[list[tuple]]:
        engine = create_engine(bare_url)
        try:
            async with engine.begin() as conn:
                out = []
                for q in statements:
                    res = await conn.execute(text(q))
                    out.append([tuple(r) for r in res.all()] if res.returns_rows else [])
                return out
        finally:
            await engine.dispose()

    asyncio.run(run(SEED))
    upgrade(bare_url)
    got = asyncio.run(
        run(
            [
                "SELECT id, collector_id, name FROM hosts ORDER BY id",
                "SELECT id FROM panes ORDER BY id",
                "SELECT pane_id FROM history ORDER BY pane_id",
                "SELECT pane_id FROM pane_records ORDER BY pane_id",
                "SELECT host_id FROM tmux_sessions ORDER BY host_id",
                "SELECT pane_id, detail FROM notification_log",
            ]
        )
    )
    assert got == [
        [(10, 1, "vm"), (12, 2, "own")],
        [(100,), (102,)],
        [(100,), (102,)],
        [(100,)],
        [(10,)],
        [(None, "d")],
    ]
