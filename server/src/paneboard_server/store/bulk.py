"""The writer's many-row statements, compiled once per dialect and sent through the driver
together.

SQLAlchemy's `execute(stmt, rows)` builds each row's parameters in Python (a dict per
row, looked up and processed by name), about twice what a tuple per row through the
driver costs. With a history row per report at high rates, that difference is a large
share of a core.
So the statements the writer runs for every report keep SQLAlchemy's compiler (one SQL
text per dialect, its placeholders and its type processors, e.g. the engine's JSON
serializer) and skip only its per-row work: the rows go to `exec_driver_sql` as tuples,
in the compiled statement's parameter order, each value passed through its column
type's bind processor where the type has one.

`Query` is the same for a SELECT the writer runs every batch (compiled once, its IN
list spread into the driver's placeholders at each run).

`Pipeline` sends a batch's statements together. On SQLite each statement sent through
aiosqlite's thread waits for a turn of the event loop to hand its result back, under
load longer than the statement's own work, a dozen trips a batch: so they run
on the loop's own thread, once the transaction holds the write lock (`Pipeline`). On
PostgreSQL asyncpg talks to the server itself: they run one by one.
"""

from __future__ import annotations

import asyncio
import re
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any, TypeVar

from sqlalchemy.engine import Dialect
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql import Delete, Insert, Select, Update
from sqlalchemy.types import Float, TypeEngine

from .sqlite_handle import sqlite3_of

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class _Compiled:
    sql: str
    names: tuple[str, ...]  # the parameters, in the order the driver takes them
    values: Callable[[Mapping[str, Any]], Any]  # a row's values in parameter order
    processors: tuple[tuple[int, Callable[[Any], Any]], ...]  # (position, bind processor)


class Bulk:
    """One INSERT, UPDATE or DELETE run for many rows. The rows are mappings holding at
    least the statement's parameters (a bind name, or a column name for an INSERT's
    `columns`)."""

    def __init__(self, stmt: Insert | Update | Delete, columns: Sequence[str] | None = None) -> None:
        self.stmt = stmt
        self.columns = list(columns) if columns is not None else None
        self._by_dialect: dict[str, _Compiled] = {}

    def _compiled(self, dialect: Dialect) -> _Compiled:
        key = f"{dialect.name}+{dialect.driver}"
        found = self._by_dialect.get(key)
        if found is None:
            c = self.stmt.compile(dialect=dialect, column_keys=self.columns, for_executemany=True)
            names = list(c.positiontup or ())
            if not names:
                raise ValueError(f"{dialect.name}: {self.stmt} has no positional parameters")
            processors = []
            for i, name in enumerate(names):
                process = _bind_processor(c.binds[name].type, dialect)
                if process is not None:
                    processors.append((i, process))
            get = itemgetter(*names)
            values = get if len(names) > 1 else (lambda row: (get(row),))
            found = self._by_dialect[key] = _Compiled(str(c), tuple(names), values, tuple(processors))
        return found

    def prepare(
        self, dialect: Dialect, rows: Sequence[Mapping[str, Any]]
    ) -> tuple[str, list[tuple[Any, ...]]]:
        """The statement's SQL and the rows as the driver takes them: tuples in parameter
        order, each value through its column type's bind processor."""
        c = self._compiled(dialect)
        values = c.values
        return c.sql, _processed(c, [values(r) for r in rows])

    def prepare_values(
        self, dialect: Dialect, names: tuple[str, ...], rows: Sequence[tuple[Any, ...]]
    ) -> tuple[str, list[tuple[Any, ...]]]:
        """`prepare` for rows given as tuples of the parameters `names`, which must be the
        statement's own order: for the rows of every changed pane, built in one C call
        each (a mapping a row costs more, built and then read back by name)."""
        c = self._compiled(dialect)
        if names != c.names:
            raise ValueError(f"{dialect.name}: the statement takes {c.names}, not {names}")
        return c.sql, _processed(c, rows)


def _bind_processor(type_: TypeEngine[Any], dialect: Dialect) -> Callable[[Any], Any] | None:
    """The column type's bind processor, or None where the driver does its work.

    On SQLite a Float column's processor only turns a value into a Python float, and the
    column's REAL affinity turns what is stored into one anyway (integers and numeric
    text alike); skipped, the history and ledger rows keep no processor at all and go to
    the driver as they were built, not copied value by value."""
    impl = type_.dialect_impl(dialect)
    if dialect.name == "sqlite" and isinstance(impl, Float) and not impl.asdecimal:
        return None
    return impl.bind_processor(dialect)


def _processed(c: _Compiled, rows: Sequence[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """Rows with each value passed through its column type's bind processor."""
    if not c.processors:
        return list(rows)
    out = []
    for r in rows:
        row = list(r)
        for i, process in c.processors:
            row[i] = process(row[i])
        out.append(tuple(row))
    return out


@dataclass(frozen=True, slots=True)
class _CompiledQuery:
    parts: tuple[str, ...]  # the SQL around each expanding parameter's list
    order: tuple[tuple[str, bool, Callable[[Any], Any] | None], ...]  # (name, expanding, processor)


class Query:
    """A SELECT run every batch with other values, compiled once per dialect: compiling
    the ledger's read, a few hundred pane ids in an IN list, every batch was a visible
    share of the writer's time (bench/writer.py). Its expanding parameters (`bindparam(..., expanding=True)`,
    a list for IN) are spread into the driver's `?` placeholders by `prepare`."""

    def __init__(self, stmt: Select[Any]) -> None:
        self.stmt = stmt
        self._by_dialect: dict[str, _CompiledQuery] = {}

    def _compiled(self, dialect: Dialect) -> _CompiledQuery:
        key = f"{dialect.name}+{dialect.driver}"
        found = self._by_dialect.get(key)
        if found is None:
            if dialect.paramstyle != "qmark":
                raise ValueError(f"{dialect.name}: Query.prepare spreads lists into ? placeholders only")
            c = self.stmt.compile(dialect=dialect)
            sql = str(c)
            order = []
            for name in c.positiontup or ():
                bind = c.binds[name]
                process = _bind_processor(bind.type, dialect)
                order.append((name, bool(bind.expanding), process))
            parts = re.split(r"__\[POSTCOMPILE_\w+\]", sql)
            if len(parts) != 1 + sum(1 for _, expanding, _ in order if expanding):
                raise ValueError(f"{dialect.name}: cannot find the expanding parameters in {sql!r}")
            found = self._by_dialect[key] = _CompiledQuery(tuple(parts), tuple(order))
        return found

    def prepare(self, dialect: Dialect, params: Mapping[str, Any]) -> tuple[str, tuple[Any, ...]]:
        """The SQL and its parameters in placeholder order, each list spread in place."""
        c = self._compiled(dialect)
        out: list[Any] = []
        sql = [c.parts[0]]
        lists = iter(c.parts[1:])
        for name, expanding, process in c.order:
            value = params[name]
            if not expanding:
                out.append(process(value) if process is not None else value)
                continue
            if not value:
                raise ValueError(f"{name}: an empty list has no IN (...) here")
            out.extend(map(process, value) if process is not None else value)
            sql.append(", ".join(["?"] * len(value)))
            sql.append(next(lists))
        return "".join(sql), tuple(out)


def _threaded(dialect: Dialect) -> bool:
    """Whether statements reach the database through a driver thread (aiosqlite)."""
    return dialect.driver == "aiosqlite"


async def _sqlite_holding_write_lock(conn: AsyncConnection) -> sqlite3.Connection | None:
    """The sqlite3 connection under aiosqlite's, once this transaction holds SQLite's
    write lock (taken here, on the driver's thread, if no statement has taken it yet);
    None for an engine that does not keep it (`sqlite_handle.py`).

    A statement that must wait for the lock waits up to the busy timeout (30 s), and on
    the event loop's thread that wait would stop the very loop another connection's
    transaction needs to finish: so the lock is taken on the driver's thread, and only
    once it is held do statements run on the loop's. In legacy transaction control (the
    sqlite3 module's default, which SQLAlchemy keeps) a transaction is open only after a
    write, so an open one already holds the lock."""
    raw = await sqlite3_of(conn)
    if raw is None:
        return None
    if not raw.in_transaction:
        await conn.exec_driver_sql("BEGIN IMMEDIATE")
    return raw


@dataclass(frozen=True, slots=True)
class _Job:
    """A write (`rows` None; `params` its row tuples) or a read (`rows` takes what it
    returned; `params` its values in placeholder order, or by name for a `query` that
    SQLAlchemy runs itself)."""

    sql: str
    params: Any
    rows: Callable[[list[Any]], None] | None = None
    query: Query | None = None


@dataclass
class Pipeline:
    """Statements for one connection, sent together by `send`, in the order added: writes
    (`add`) and reads (`fetch`, whose rows are there once `send` has returned).

    On SQLite they run on the event loop's own thread, once the transaction holds the
    write lock: a statement through aiosqlite's thread waits for a turn of the event loop
    to hand its result back, and under load that wait was most of a batch's time
    (bench/ingest.py: most of the writer's first send was waiting, not SQLite's work)
    and its thread's share of the GIL cost CPU besides. Run
    here, a batch's statements are CPU and page-cache writes only: no lock to wait for,
    and no fsync before the commit (synchronous=NORMAL; the commit, which may
    checkpoint, still goes through the driver's thread). On PostgreSQL asyncpg talks to
    the server itself: they run one by one."""

    conn: AsyncConnection
    _jobs: list[_Job] = field(default_factory=list)

    def add(self, stmt: Bulk, rows: Sequence[Mapping[str, Any]]) -> None:
        if rows:
            self._add(*stmt.prepare(self.conn.dialect, rows))

    def add_values(self, stmt: Bulk, names: tuple[str, ...], rows: Sequence[tuple[Any, ...]]) -> None:
        """`add` for rows given as tuples of the parameters `names` (`Bulk.prepare_values`)."""
        if rows:
            self._add(*stmt.prepare_values(self.conn.dialect, names, rows))

    def _add(self, sql: str, params: list[tuple[Any, ...]]) -> None:
        self._jobs.append(_Job(sql, params))

    def fetch(self, query: Query, make: Callable[[Sequence[Any]], T], params: Mapping[str, Any]) -> list[T]:
        """The rows of `query` with `params`, each made by `make` from its values in column
        order; the list is filled in by `send`."""
        out: list[T] = []

        def take(rows: list[Any]) -> None:
            out.extend(map(make, rows))

        dialect = self.conn.dialect
        if _threaded(dialect):
            self._jobs.append(_Job(*query.prepare(dialect, params), rows=take))
        else:  # run by SQLAlchemy itself (`_send_one_by_one`)
            self._jobs.append(_Job("", params, rows=take, query=query))
        return out

    async def send(self) -> None:
        jobs, self._jobs = self._jobs, []
        if not jobs:
            return
        if not _threaded(self.conn.dialect):
            await self._send_one_by_one(jobs)
            return
        raw = await _sqlite_holding_write_lock(self.conn)
        if raw is None:
            await self._send_through_thread(jobs)
            return
        for job in jobs:
            if job.rows is None:
                raw.executemany(job.sql, job.params)
            else:
                job.rows(raw.execute(job.sql, job.params).fetchall())

    async def _send_one_by_one(self, jobs: list[_Job]) -> None:
        for job in jobs:
            if job.rows is None:
                await self.conn.exec_driver_sql(job.sql, job.params)
            else:
                assert job.query is not None  # `fetch` gives every read here its query
                job.rows([tuple(r) for r in (await self.conn.execute(job.query.stmt, job.params)).all()])

    async def _send_through_thread(self, jobs: list[_Job]) -> None:
        driver = (await self.conn.get_raw_connection()).driver_connection
        assert driver is not None  # a connection in use has its driver's

        async def run(job: _Job) -> None:
            if job.rows is None:
                await driver.executemany(job.sql, job.params)
            else:
                job.rows(list(await driver.execute_fetchall(job.sql, job.params)))

        # queued to the driver's thread in this order (tasks start in the order made);
        # every one is awaited, so a failure is raised only once all have run
        results = await asyncio.gather(*(run(job) for job in jobs), return_exceptions=True)
        for r in results:
            if isinstance(r, BaseException):
                raise r
