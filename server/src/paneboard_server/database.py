"""Where the database is and how to open it (SQLite by default, PostgreSQL by URL).

The default is a per-user SQLite file so `paneboard serve` runs with nothing else
installed; `--db URL` / `PANEBOARD_DB` pick another file or a PostgreSQL server.
SQLite gets WAL (readers never block the writer), synchronous=NORMAL (durable at
checkpoints, fast commits), a busy timeout (a CLI command and the server may share the
file) and enforced foreign keys.
"""

from __future__ import annotations

import os
from pathlib import Path

from sqlalchemy import event
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine


class DatabaseError(Exception):
    """A database problem a person can act on (bad URL, unmigrated schema, ...)."""


def describe(exc: BaseException) -> str:
    """One line for a driver or SQLAlchemy error: the database's own words, no
    SQLAlchemy banner, no background link."""
    orig = getattr(exc, "orig", None)
    text = str(orig if orig is not None else exc).strip()
    first = text.splitlines()[0] if text else ""
    return first or type(exc).__name__


def _make_parent(path: Path) -> None:
    """Create the SQLite file's directory; a path through a regular file is one clear error."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        why = (
            "a part of it is a file, not a directory"
            if isinstance(exc, (FileExistsError, NotADirectoryError))
            else exc.strerror
        )
        raise DatabaseError(f"cannot create the directory for database {path}: {why}") from exc


def default_sqlite_path() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "paneboard" / "paneboard.db"


def resolve_url(url: str | None) -> str:
    """Turn `--db`, `PANEBOARD_DB` or the default into an async SQLAlchemy URL.

    Accepts plain `postgresql://` and `sqlite:///` URLs (what people type) as well as
    explicit drivers, and a bare file path for SQLite.
    """
    raw = url or os.environ.get("PANEBOARD_DB") or ""
    if not raw:
        path = default_sqlite_path()
        _make_parent(path)
        return f"sqlite+aiosqlite:///{path}"
    if "://" not in raw:
        path = Path(raw).expanduser()
        _make_parent(path)
        return f"sqlite+aiosqlite:///{path.resolve()}"
    try:
        parsed = make_url(raw)
    except Exception as exc:
        raise DatabaseError(f"bad database URL {raw!r}: {exc}") from exc
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        if parsed.database and parsed.database != ":memory:":
            _make_parent(Path(parsed.database).expanduser())
        return parsed.set(drivername="sqlite+aiosqlite").render_as_string(hide_password=False)
    if backend in {"postgresql", "postgres"}:
        return parsed.set(drivername="postgresql+asyncpg").render_as_string(hide_password=False)
    raise DatabaseError(f"unsupported database {backend!r} (use sqlite:///FILE or postgresql://...)")


def probe_sqlite(database: str | None) -> None:
    """Open a SQLite file synchronously and read its header: DatabaseError in one line if
    it is not a database or cannot be opened. (Done before aiosqlite touches it: a failed
    aiosqlite connect can leave its worker thread to print a traceback at exit.)"""
    import sqlite3

    if not database or database == ":memory:":
        return
    try:
        conn = sqlite3.connect(database, timeout=30)
        try:
            conn.execute("PRAGMA schema_version").fetchone()
        finally:
            conn.close()
    except sqlite3.Error as exc:
        raise DatabaseError(f"cannot open database {database}: {describe(exc)}") from exc


def is_sqlite(url: str) -> bool:
    return make_url(url).get_backend_name() == "sqlite"


def redact(url: str) -> str:
    return make_url(url).render_as_string(hide_password=True)


def create_engine(url: str) -> AsyncEngine:
    """An async engine with the SQLite pragmas applied on every new connection."""
    if is_sqlite(url):
        engine = create_async_engine(url, connect_args={"timeout": 30})

        @event.listens_for(engine.sync_engine, "connect")
        def _pragmas(dbapi_conn, _record):  # type: ignore[no-untyped-def]
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.execute("PRAGMA busy_timeout=30000")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.close()

        return engine
    return create_async_engine(url, pool_size=10, max_overflow=10, pool_pre_ping=True)
