"""Alembic, driven from code: `paneboard db upgrade | current` and the start-up check.

The migrations ship inside the wheel as `paneboard_server/migrations` (hatch
force-include); in an editable install they are read from the source tree's
`migrations/`. The server refuses to start on a schema that is not at head (older:
"run `paneboard db upgrade`"; newer: "this paneboard is older than the database").
"""

from __future__ import annotations

import functools
import re
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine

from .database import DatabaseError, create_sqlite_file, describe, probe_sqlite, redact

if TYPE_CHECKING:
    from alembic.config import Config

_REVISION = re.compile(r'^(down_)?revision\s*=\s*["\']([^"\']+)["\']', re.M)


def migrations_dir() -> Path:
    packaged = Path(str(resources.files("paneboard_server"))) / "migrations"
    if (packaged / "env.py").is_file():
        return packaged
    source = Path(__file__).resolve().parents[4] / "migrations"
    if (source / "env.py").is_file():
        return source
    raise DatabaseError("the migrations are missing from this installation")


def alembic_config(url: str) -> Config:
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(migrations_dir()))
    cfg.attributes["url"] = url
    return cfg


@functools.cache
def head_revision() -> str:
    """The newest revision in migrations/versions: the one no other revises.

    Read from the scripts' own `revision` / `down_revision` lines, so the start-up
    check does not import Alembic (most of a CLI command's start-up time) and a new
    migration is one file, not a file and a constant to keep in step (the constant this
    replaced). `script_head` (Alembic's own reading) is held to it by a test."""
    revisions: set[str] = set()
    revised: set[str] = set()
    for path in (migrations_dir() / "versions").glob("*.py"):
        for down, rev in _REVISION.findall(path.read_text(encoding="utf-8")):
            (revised if down else revisions).add(rev)
    heads = revisions - revised
    if len(heads) != 1:
        raise DatabaseError(f"the migrations have {len(heads)} heads ({', '.join(sorted(heads))}), not one")
    return heads.pop()


def script_head() -> str | None:
    """The head according to the migration scripts themselves (imports Alembic)."""
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(alembic_config("sqlite://")).get_current_head()


def known_revisions() -> set[str]:
    from alembic.script import ScriptDirectory

    script = ScriptDirectory.from_config(alembic_config("sqlite://"))
    return {rev.revision for rev in script.walk_revisions()}


def upgrade(url: str, revision: str = "head") -> None:
    """Run the migrations (synchronously; Alembic's env.py runs its own event loop).

    The one place a new SQLite store (file and directory, both private to their owner)
    is created: upgrading is how a store comes into being.
    """
    from alembic import command

    create_sqlite_file(url)
    command.upgrade(alembic_config(url), revision)


async def current_revision(engine: AsyncEngine) -> str | None:
    """The stored revision (None: no schema yet); DatabaseError, in one line, when the
    database cannot be opened or read (corrupt file, no such database or role, ...)."""
    if engine.url.get_backend_name() == "sqlite":
        probe_sqlite(engine.url.database)
    try:
        async with engine.connect() as conn:
            try:
                rows = (await conn.execute(text("SELECT version_num FROM alembic_version"))).all()
            except DBAPIError as exc:
                if "no such table" in str(exc) or "does not exist" in str(exc):
                    return None  # a database with no schema yet
                raise
    except Exception as exc:
        raise DatabaseError(f"cannot open database {redact(str(engine.url))}: {describe(exc)}") from exc
    return rows[0][0] if rows else None


async def check_schema(engine: AsyncEngine) -> None:
    """Raise DatabaseError naming what to run unless the schema is at head."""
    current = await current_revision(engine)
    head = head_revision()
    if current == head:
        return
    where = redact(str(engine.url))
    if current is None:
        raise DatabaseError(
            f"database {where} is not initialised: run `paneboard db upgrade` (or serve with --migrate)"
        )
    if current not in known_revisions():
        raise DatabaseError(
            f"database {where} is at revision {current}, newer than this paneboard knows ({head}): "
            "upgrade paneboard"
        )
    raise DatabaseError(
        f"database {where} is at revision {current}, not {head}: run `paneboard db upgrade` "
        "(or serve with --migrate)"
    )
