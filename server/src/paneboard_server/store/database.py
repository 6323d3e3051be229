"""Where the database is and how to open it (SQLite by default, PostgreSQL by URL).

The default is a per-user SQLite file so `paneboard serve` runs with nothing else
installed; `--db URL` / `PANEBOARD_DB` pick another file or a PostgreSQL server.
SQLite gets WAL (readers never block the writer), synchronous=NORMAL (durable at
checkpoints, fast commits), a busy timeout (a CLI command and the server may share the
file) and enforced foreign keys.

The file holds what must not leak to other local users (the Web Push private key,
password hashes, prompts, the answer audit), so a new one is made 0600 in a directory
made 0700; SQLite gives its -wal and -shm files the database file's own mode. An
existing file or directory is never chmod'ed behind its owner's back: `exposure`
says what is open so the commands can warn.
"""

from __future__ import annotations

import os
import sqlite3
import sys
from pathlib import Path
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from .. import fastjson
from .sqlite_handle import keep_sqlite3_handles


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
    """Create the SQLite file's directory (0700: only its owner lists or enters it; any
    parents it also needs get the usual mode); a path through a regular file is one clear error."""
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
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
    explicit drivers, and a bare file path for SQLite. Touches nothing on disk: only
    `create_sqlite_file` (for `db upgrade`) may create the file and its directory, and
    `require_existing` refuses a SQLite file that is not there, because SQLite would
    otherwise create an empty one on first connect.
    """
    raw = url or os.environ.get("PANEBOARD_DB") or ""
    if not raw:
        return f"sqlite+aiosqlite:///{default_sqlite_path()}"
    if "://" not in raw:
        return f"sqlite+aiosqlite:///{Path(raw).expanduser().resolve()}"
    try:
        parsed = make_url(raw)
    except Exception as exc:
        raise DatabaseError(f"bad database URL {raw!r}: {exc}") from exc
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        if parsed.database and parsed.database != ":memory:":
            parsed = parsed.set(database=str(Path(parsed.database).expanduser()))
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


def sqlite_file(url: str) -> Path | None:
    """The file a SQLite URL names; None for PostgreSQL and in-memory databases."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite" or not parsed.database or parsed.database == ":memory:":
        return None
    if parsed.query.get("mode") == "memory":
        return None
    return Path(parsed.database)


def require_existing(url: str) -> None:
    """Raise DatabaseError, naming what to run, if a SQLite URL names a file that does not exist."""
    path = sqlite_file(url)
    if path is None or path.exists():
        return
    blocker = next((p for p in path.parents if p.exists()), None)
    if blocker is not None and not blocker.is_dir():
        raise DatabaseError(f"cannot use database {path}: {blocker} is a file, not a directory")
    raise DatabaseError(
        f"no database at {path}: create it with `paneboard db upgrade` (or serve with --migrate)"
    )


def create_sqlite_file(url: str) -> None:
    """Create a SQLite file, and its directory, private to its owner: what `db upgrade`
    does for a new store.

    The file is created empty (an empty file is an empty SQLite database) with mode
    0600 before SQLite opens it, because SQLite would create it 0644 and then give its
    -wal and -shm files that mode too. An existing file is left as it is.
    """
    path = sqlite_file(url)
    if path is None:
        return
    _make_parent(path)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except FileExistsError:
        return
    except OSError as exc:
        raise DatabaseError(f"cannot create database {path}: {exc.strerror or exc}") from exc
    os.close(fd)


def exposure(url: str) -> str | None:
    """One line naming the SQLite files (the database, its -wal and -shm) that group or
    others may read or write, with their modes; None when there are none (or for PostgreSQL)."""
    path = sqlite_file(url)
    if path is None:
        return None
    open_files = []
    for candidate in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        try:
            mode = candidate.stat().st_mode & 0o777
        except OSError:
            continue
        if mode & 0o077:
            open_files.append(f"{candidate.name} (mode {mode:04o})")
    if not open_files:
        return None
    return (
        f"database {path} is open to other users: {', '.join(open_files)}; it holds password hashes, "
        f"the Web Push private key, prompts and the answer audit: run `chmod 600 {path}*`"
    )


def warn_exposure(cmd: str, url: str) -> None:
    """`exposure`'s line on stderr, as `paneboard CMD: warning: ...`. Only a warning: the
    owner may share the file on purpose, and its mode is theirs to change, not ours."""
    warning = exposure(url)
    if warning:
        print(f"paneboard {cmd}: warning: {warning}", file=sys.stderr, flush=True)


def redact(url: str) -> str:
    return make_url(url).render_as_string(hide_password=True)


#: What the sqlite3 module binds for None, found in its adapter registry: a C method that
#: returns None for any argument. Without an adapter, each None parameter goes the long way
#: (the registry missed, then `__adapt__` looked up on the protocol and `__conform__` on
#: None) before it is bound as NULL, several times the cost of the registered adapter.
#: A batch binds ten or so None a report (a pane's empty fields, a history row's, an open
#: wait's end). The module's registry is process-wide; this changes no value bound.
_NO_VALUES: dict[None, None] = {}
_NULL_ADAPTER = _NO_VALUES.get


def adapt_none_directly() -> None:
    """Register `_NULL_ADAPTER` for None (idempotent)."""
    sqlite3.register_adapter(type(None), _NULL_ADAPTER)


def create_engine(url: str) -> AsyncEngine:
    """An async engine with the SQLite pragmas applied on every new connection."""
    if is_sqlite(url):
        adapt_none_directly()
        # The writer runs its batch's statements on the event loop's thread once its
        # transaction holds the write lock (`bulk.Pipeline`), on the sqlite3 connection
        # this engine keeps (`sqlite_handle.py`); aiosqlite opens the connection on a
        # thread of its own, so the same-thread check must be off.
        engine = create_async_engine(
            url,
            connect_args={"timeout": 30, "check_same_thread": False},
            json_serializer=fastjson.dumps_text,
        )
        keep_sqlite3_handles(engine)

        @event.listens_for(engine.sync_engine, "connect")
        def _pragmas(dbapi_conn: Any, _record: Any) -> None:
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.execute("PRAGMA busy_timeout=30000")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.close()

        return engine
    return create_async_engine(
        url, pool_size=10, max_overflow=10, pool_pre_ping=True, json_serializer=fastjson.dumps_text
    )
