"""The writer's many-row statements, compiled once per dialect and run through the driver.

SQLAlchemy's `execute(stmt, rows)` builds each row's parameters in Python (a dict per
row, looked up and processed by name), which cost 6.6-9.7 us a row against 3.5-4.2
through the driver with a tuple per row (bench: 1,000 history rows a batch, SQLite). At
10,000 reports a second a history row per report, that difference is a third of a core.
So the statements the writer runs for every report keep SQLAlchemy's compiler (one SQL
text per dialect, its placeholders and its type processors, e.g. the engine's JSON
serializer) and skip only its per-row work: the rows go to `exec_driver_sql` as tuples,
in the compiled statement's parameter order, each value passed through its column
type's bind processor where the type has one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

from sqlalchemy.engine import Dialect
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql import Insert, Update


@dataclass(frozen=True, slots=True)
class _Compiled:
    sql: str
    values: Callable[[Mapping[str, Any]], Any]  # a row's values in parameter order
    processors: tuple[tuple[int, Callable[[Any], Any]], ...]  # (position, bind processor)
    width: int


class Bulk:
    """One INSERT or UPDATE run for many rows. The rows are mappings holding at least the
    statement's parameters (a bind name, or a column name for an INSERT's `columns`)."""

    def __init__(self, stmt: Insert | Update, columns: Sequence[str] | None = None) -> None:
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
                process = c.binds[name].type.dialect_impl(dialect).bind_processor(dialect)
                if process is not None:
                    processors.append((i, process))
            get = itemgetter(*names)
            values = get if len(names) > 1 else (lambda row: (get(row),))
            found = self._by_dialect[key] = _Compiled(str(c), values, tuple(processors), len(names))
        return found

    def params(self, dialect: Dialect, rows: Sequence[Mapping[str, Any]]) -> list[tuple[Any, ...]]:
        """The rows as the driver takes them: tuples in parameter order, values processed."""
        c = self._compiled(dialect)
        values = c.values
        if not c.processors:
            return [values(r) for r in rows]
        out = []
        for r in rows:
            row = list(values(r))
            for i, process in c.processors:
                row[i] = process(row[i])
            out.append(tuple(row))
        return out

    async def run(self, conn: AsyncConnection, rows: Sequence[Mapping[str, Any]]) -> None:
        """Run the statement once per row, in one `executemany` (nothing for no rows).

        On SQLite the rows go straight to aiosqlite's `executemany`: one trip to its
        thread, where SQLAlchemy's cursor takes three (open, execute, close), each a wait
        for a turn of an event loop that is busy with the next batch's messages and the
        live streams. The statement runs in the same connection and transaction."""
        if not rows:
            return
        dialect = conn.dialect
        sql, params = self._compiled(dialect).sql, self.params(dialect, rows)
        if dialect.driver == "aiosqlite":
            driver = (await conn.get_raw_connection()).driver_connection
            assert driver is not None  # a connection inside its transaction is open
            await driver.executemany(sql, params)
        else:
            await conn.exec_driver_sql(sql, params)
