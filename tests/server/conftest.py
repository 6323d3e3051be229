"""Fixtures for the server tests: a fresh database per test on SQLite and PostgreSQL,
real `paneboard serve` processes on free ports, and a small SSE reader.

PostgreSQL: `PANEBOARD_TEST_PG` (default `postgresql://postgres@127.0.0.1:5432/test`)
names a server where we may create databases; each test session creates a migrated
template `pb_test_<random>` and each test a copy of it, all dropped at the end. If no
PostgreSQL answers, the PostgreSQL half of the suite fails with the reason.
"""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pbserver import ServerProc, free_port
from sqlalchemy.engine import make_url
from support.postgres import PG_ADMIN, pg_exec, require_postgres
from support.proctier import spawns


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from paneboard_server.store.migrate import upgrade

    path = tmp_path_factory.mktemp("tmpl") / "template.db"
    upgrade(f"sqlite+aiosqlite:///{path}")
    return path


@pytest.fixture(scope="session")
def pg_template() -> Iterator[str]:
    require_postgres()
    from paneboard_server.store.migrate import upgrade

    name = f"pb_test_{uuid.uuid4().hex[:10]}"
    pg_exec(f'CREATE DATABASE "{name}"')
    upgrade(
        make_url(PG_ADMIN)
        .set(database=name)
        .render_as_string(hide_password=False)
        .replace("postgresql://", "postgresql+asyncpg://")
    )
    yield name
    pg_exec(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A migrated, empty database (plain URL, as a user would pass it to --db)."""
    if request.param == "sqlite":
        tmpl = request.getfixturevalue("sqlite_template")
        path = tmp_path / "paneboard.db"
        shutil.copy(tmpl, path)
        yield f"sqlite:///{path}"
        return
    tmpl = request.getfixturevalue("pg_template")
    name = f"{tmpl}_{uuid.uuid4().hex[:8]}"
    pg_exec(f'CREATE DATABASE "{name}" TEMPLATE "{tmpl}"')
    try:
        yield make_url(PG_ADMIN).set(database=name).render_as_string(hide_password=False)
    finally:
        pg_exec(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
@spawns
def server_factory(tmp_path: Path) -> Iterator[Any]:
    started: list[ServerProc] = []

    def make(db: str, config: str | None = None, port: int | None = None) -> ServerProc:
        cfg = None
        if config is not None:
            cfg = tmp_path / f"config-{len(started)}.toml"
            cfg.write_text(config)
        log = tmp_path / f"server-{len(started)}.log"
        sp = ServerProc(db, port or free_port(), cfg, log=log, pick_port=port is None)
        started.append(sp)
        sp.start()
        return sp

    yield make
    for sp in started:
        sp.stop()
