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
from paneboard_server.store import Query
from sqlalchemy import Column, Float, Integer, MetaData, Table, bindparam, create_engine, select
from sqlalchemy.ext.asyncio import create_async_engine


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
