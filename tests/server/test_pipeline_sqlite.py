"""On SQLite the writer's statements run on the event loop's thread, and only once the
transaction holds the write lock, taken on the driver's thread: a statement that waited
for the lock on the loop's thread would stop the loop that the lock's holder needs to
finish (a real file, the server's own engine)."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from pathlib import Path

import pytest
from paneboard_server.store import Bulk, Pipeline, Query, bulk
from paneboard_server.store.database import create_engine
from paneboard_server.store.sqlite_handle import sqlite3_of
from sqlalchemy import Column, Integer, MetaData, String, Table, bindparam, insert, select
from sqlalchemy.ext.asyncio import AsyncEngine

_md = MetaData()
_t = Table("t", _md, Column("id", Integer, primary_key=True), Column("who", String))
_INSERT = Bulk(insert(_t), ["id", "who"])
_READ = Query(select(_t.c.id, _t.c.who).where(_t.c.id.in_(bindparam("ids", expanding=True))))


async def _engine(tmp_path: Path) -> AsyncEngine:
    engine = create_engine(f"sqlite+aiosqlite:///{tmp_path / 'p.db'}")
    async with engine.begin() as conn:
        await conn.run_sync(_md.create_all)
    return engine


def test_statements_run_on_the_loops_thread_once_the_write_lock_is_held(tmp_path: Path) -> None:
    async def main() -> tuple[list[tuple[str, int]], list[tuple[int, str]], int]:
        engine = await _engine(tmp_path)
        seen: list[tuple[str, int]] = []
        async with engine.begin() as conn:
            raw = await sqlite3_of(conn)
            assert raw is not None
            raw.set_trace_callback(lambda sql: seen.append((sql.split()[0].upper(), threading.get_ident())))
            pipe = Pipeline(conn)
            pipe.add(_INSERT, [{"id": 1, "who": "a"}, {"id": 2, "who": "b"}])
            found = pipe.fetch(_READ, tuple, {"ids": [1, 2]})
            await pipe.send()
            raw.set_trace_callback(None)
        await engine.dispose()
        return seen, found, threading.get_ident()

    seen, found, loop_thread = asyncio.run(main())
    assert sorted(found) == [(1, "a"), (2, "b")]
    kinds = [k for k, _ in seen]
    assert kinds[0] == "BEGIN" and "INSERT" in kinds and "SELECT" in kinds
    assert seen[0][1] != loop_thread  # the lock is taken on the driver's thread
    assert {t for k, t in seen if k in ("INSERT", "SELECT")} == {loop_thread}


def test_a_batch_waiting_for_another_writers_lock_leaves_the_loop_running(tmp_path: Path) -> None:
    """Another transaction of the same process holds the write lock and can only let go
    through the event loop; the batch must wait for it without stopping the loop."""

    async def main() -> list[tuple[int, str]]:
        engine = await _engine(tmp_path)
        holding, release = asyncio.Event(), asyncio.Event()

        async def other() -> None:
            async with engine.begin() as conn:
                await conn.execute(insert(_t).values(id=1, who="other"))  # takes the lock
                holding.set()
                await release.wait()  # let go only when the loop gets here

        async def batch() -> None:
            async with engine.begin() as conn:
                pipe = Pipeline(conn)
                pipe.add(_INSERT, [{"id": 2, "who": "batch"}])
                await pipe.send()

        held = asyncio.create_task(other())
        await holding.wait()
        writing = asyncio.create_task(batch())
        await asyncio.sleep(0.2)  # the batch reaches the lock, and the loop must still turn
        assert not writing.done()
        release.set()
        await asyncio.wait_for(asyncio.gather(held, writing), 20)
        rows = await _rows(engine)
        await engine.dispose()
        return rows

    assert asyncio.run(main()) == [(1, "other"), (2, "batch")]


def test_without_aiosqlites_handle_the_statements_go_through_its_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An aiosqlite that keeps its sqlite3 connection elsewhere: the same statements, in
    order, through the driver's thread, and the reads filled in."""

    async def no_handle(_conn: object) -> None:
        return None

    monkeypatch.setattr(bulk, "_sqlite_holding_write_lock", no_handle)

    async def main() -> tuple[list[tuple[int, str]], list[tuple[int, str]]]:
        engine = await _engine(tmp_path)
        async with engine.begin() as conn:
            pipe = Pipeline(conn)
            pipe.add(_INSERT, [{"id": 1, "who": "a"}])
            found = pipe.fetch(_READ, tuple, {"ids": [1, 2]})
            pipe.add(_INSERT, [{"id": 2, "who": "b"}])
            await pipe.send()
        rows = await _rows(engine)
        await engine.dispose()
        return found, rows

    found, rows = asyncio.run(main())
    assert found == [(1, "a")]  # read after the first insert, before the second
    assert rows == [(1, "a"), (2, "b")]


async def _rows(engine: AsyncEngine) -> list[tuple[int, str]]:
    async with engine.connect() as conn:
        result = await conn.execute(select(_t.c.id, _t.c.who).order_by(_t.c.id))
        return [(int(r[0]), str(r[1])) for r in result.all()]


def test_each_connection_keeps_its_own_sqlite3_handle_also_when_opened_together(tmp_path: Path) -> None:
    """The handle the engine keeps is the connection the driver runs statements on: a
    TEMP table (one connection's own) made through SQLAlchemy is seen through it, for
    connections opened at the same time and for one opened again after invalidation."""

    async def mark_and_read(engine: AsyncEngine, n: int) -> tuple[sqlite3.Connection, list[tuple[int]]]:
        async with engine.connect() as conn:
            await conn.exec_driver_sql("CREATE TEMP TABLE IF NOT EXISTS mine (n INTEGER)")
            await conn.exec_driver_sql("DELETE FROM mine")
            await conn.exec_driver_sql(f"INSERT INTO mine VALUES ({n})")
            raw = await sqlite3_of(conn)
            assert raw is not None
            seen = raw.execute("SELECT n FROM mine").fetchall()
            await conn.rollback()
            return raw, seen

    async def main() -> tuple[
        list[tuple[sqlite3.Connection, list[tuple[int]]]], tuple[sqlite3.Connection, list[tuple[int]]], object
    ]:
        engine = await _engine(tmp_path)
        together = await asyncio.gather(*(mark_and_read(engine, n) for n in range(4)))
        async with engine.connect() as conn:
            before = await sqlite3_of(conn)  # held here, so no later handle can reuse its id
            await conn.invalidate()
        again = await mark_and_read(engine, 9)
        await engine.dispose()
        return together, again, before

    together, again, before = asyncio.run(main())
    assert [seen for _, seen in together] == [[(n,)] for n in range(4)]
    assert len({id(handle) for handle, _ in together}) == 4
    assert again[1] == [(9,)] and again[0] is not before
