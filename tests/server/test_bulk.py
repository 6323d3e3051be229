"""The writer's statements compiled once: rows given as tuples go to the driver exactly as
the same rows given by name (tuples in any order but the statement's own are refused),
and a compiled query with a list for IN finds what SQLAlchemy's own compilation finds."""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest
from paneboard_protocol.pane import ROW_FIELDS
from paneboard_server.panes import flush
from paneboard_server.panes.model import Pane
from paneboard_server.store import Bulk, Query, database
from sqlalchemy import Column, Float, Integer, MetaData, Table, bindparam, create_engine, insert, select
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.schema import CreateTable


@pytest.mark.parametrize("url", ["sqlite+aiosqlite://", "postgresql+asyncpg://u@localhost/db"])
def test_tuples_in_the_statements_order_prepare_as_the_named_rows(url: str) -> None:
    dialect = create_async_engine(url).dialect  # made, never connected
    panes = [Pane.heard_of(7, 1, "default", "%1", state="working", evidence={"records": [{"id": "a"}]})]
    panes.append(Pane.heard_of(9, 1, "default", "%2", observable=False, msg="Allow?"))
    named = flush._UPDATE_PANES.prepare(dialect, [{"pid": p.id, **p.row()} for p in panes])
    values = flush._UPDATE_PANES.prepare_values(
        dialect, flush._UPDATE_PANES_ORDER, [(*p.row_values(), p.id) for p in panes]
    )
    assert values == named
    evidence = values[1][0][ROW_FIELDS.index("evidence")]
    assert isinstance(evidence, str) and '"records"' in evidence  # through the column's JSON processor
    assert values[1][1][-1] == 9  # the pane's id last, for WHERE


def test_tuples_in_another_order_are_refused() -> None:
    dialect = create_engine("sqlite://").dialect
    wrong = ("pid", *ROW_FIELDS)
    row = (1, *Pane.heard_of(1, 1, "t", "%1").row_values())
    with pytest.raises(ValueError, match="takes"):
        flush._UPDATE_PANES.prepare_values(dialect, wrong, [row])


def _query_fixture() -> tuple[Any, Query, sqlite3.Connection]:
    md = MetaData()
    t = Table("t", md, Column("id", Integer, primary_key=True), Column("k", Integer), Column("x", Float))
    q = Query(select(t.c.id).where(t.c.k.in_(bindparam("ks", expanding=True)), t.c.x > bindparam("lo")))
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, k INTEGER, x FLOAT)")
    db.executemany("INSERT INTO t VALUES (?, ?, ?)", [(i, i % 7, i / 10) for i in range(100)])
    return t, q, db


def test_a_compiled_query_spreads_its_list_and_finds_what_sqlalchemy_finds() -> None:
    t, q, db = _query_fixture()
    dialect = create_async_engine("sqlite+aiosqlite://").dialect
    for ks, lo in (([3], 0.0), ([1, 5, 6], 4.5), (list(range(7)), 9.0)):
        sql, args = q.prepare(dialect, {"ks": ks, "lo": lo})
        assert sql.count("?") == len(args) == len(ks) + 1
        literal = (
            select(t.c.id)
            .where(t.c.k.in_(ks), t.c.x > lo)
            .compile(dialect=dialect, compile_kwargs={"literal_binds": True})
        )
        expected = sorted(r[0] for r in db.execute(str(literal)))
        assert expected and sorted(r[0] for r in db.execute(sql, args)) == expected


def test_a_compiled_query_refuses_an_empty_list_and_a_named_paramstyle() -> None:
    _, q, _ = _query_fixture()
    with pytest.raises(ValueError, match="empty"):
        q.prepare(create_async_engine("sqlite+aiosqlite://").dialect, {"ks": [], "lo": 0.0})
    with pytest.raises(ValueError, match="placeholders"):
        q.prepare(create_async_engine("postgresql+asyncpg://u@localhost/db").dialect, {"ks": [1], "lo": 0.0})


def test_a_float_column_goes_to_sqlite_unconverted_and_is_stored_as_real() -> None:
    """SQLite's REAL affinity does what the Float processor did: an integer (or numeric
    text) bound as it is comes back a float, so the rows go to the driver uncopied."""
    md = MetaData()
    t = Table("t", md, Column("id", Integer, primary_key=True), Column("x", Float))
    stmt = Bulk(insert(t), ["id", "x"])
    dialect = create_async_engine("sqlite+aiosqlite://").dialect
    sql, rows = stmt.prepare(dialect, [{"id": 1, "x": 5}, {"id": 2, "x": 2.5}, {"id": 3, "x": None}])
    assert rows == [(1, 5), (2, 2.5), (3, None)]
    assert type(rows[0][1]) is int  # as given: no processor made it a float
    db = sqlite3.connect(":memory:")
    db.execute(str(CreateTable(t).compile(dialect=dialect)))
    db.executemany(sql, rows)
    got = db.execute("SELECT x, typeof(x) FROM t ORDER BY id").fetchall()
    assert got == [(5.0, "real"), (2.5, "real"), (None, "null")]
    assert isinstance(got[0][0], float)


def test_none_is_bound_through_the_adapter_the_engine_registers(tmp_path: Any) -> None:
    """`create_engine` gives sqlite3 a direct adapter for None (the default path looks up
    two attributes per None); NULL is what gets stored either way."""
    database.create_engine(f"sqlite+aiosqlite:///{tmp_path / 'x.db'}")
    assert sqlite3.adapters[(type(None), sqlite3.PrepareProtocol)] is database._NULL_ADAPTER
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE t (a, b)")
    db.executemany("INSERT INTO t VALUES (?, ?)", [(None, 1), (2, None)])
    assert db.execute("SELECT typeof(a), typeof(b) FROM t ORDER BY rowid").fetchall() == [
        ("null", "integer"),
        ("integer", "null"),
    ]
