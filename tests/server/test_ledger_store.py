"""The `waits` table kept by a real server (SQLite and PostgreSQL) as history is written:
blocks and dones that end every way a live server sees, rows that arrive late (a clock
behind), a server restart in the middle of a block, and retention."""

from __future__ import annotations

import asyncio
import re
import sqlite3
from typing import Any

import pytest
from ledger_helpers import T0, Clock, gone, report, reports, seen, update, waits
from paneboard_server.app import create_app
from paneboard_server.config import Config
from paneboard_server.ledger import store as ledger_store
from paneboard_server.panes.waits import _READ as waits_read
from paneboard_server.panes.waits import rebuild
from paneboard_server.services import services_of
from paneboard_server.store import schema as s
from paneboard_server.store.database import resolve_url
from pbserver import make_tokens
from sqlalchemy import event, select


def run(db_url: str, clock: Clock, body: Any) -> None:
    async def go() -> None:
        app = create_app(Config(), resolve_url(db_url), clock=clock)
        async with app.router.lifespan_context(app):
            await body(services_of(app).core)

    asyncio.run(go())


def summary(rows: list[Any]) -> list[tuple[Any, ...]]:
    return [
        (r.host, r.pane, r.state, r.kind, r.start_t - T0, None if r.end_t is None else r.end_t - T0, r.ended)
        for r in rows
    ]


def test_blocks_and_dones_end_every_way_a_server_sees(db_url: str) -> None:
    asyncio.run(make_tokens(db_url))
    clock = Clock(T0)

    async def body(core: Any) -> None:
        async def at(dt: float, *steps: Any) -> None:
            clock.t = T0 + dt
            for fn in steps:
                await fn

        await at(
            0,
            report(core, "h1", "%1", "blocked", kind="permission", msg="Allow rm?"),
            report(core, "h1", "%2", "blocked", kind="question", msg="Which one?"),
            report(core, "h2", "%3", "done"),
            report(core, "h2", "%4", "blocked", kind="auth"),
        )
        await at(60, report(core, "h1", "%1", "working"))  # answered
        await at(90, report(core, "h1", "%2", "idle"))  # cancelled
        await at(120, seen(core, "h2", "%3"))  # done, then seen
        await at(150, gone(core, "h2", "%4"))  # the pane closed
        await at(
            200,
            report(core, "h1", "%1", "blocked", kind="permission", msg="Allow push?"),
            report(core, "h1", "%2", "blocked", kind="question"),
        )
        await at(260, report(core, "h1", "%1", None, agent=None))  # the program ended
        await at(300, report(core, "h1", "%2", "blocked", kind="question"))  # the same block: no new row
        rows = await waits(core)
        assert summary(rows) == [
            ("h1", "%1", "blocked", "permission", 0, 60, "answered"),
            ("h1", "%2", "blocked", "question", 0, 90, "cancelled"),
            ("h2", "%3", "done", None, 0, 120, "seen"),
            ("h2", "%4", "blocked", "auth", 0, 150, "gone"),
            ("h1", "%1", "blocked", "permission", 200, 260, "exited"),
            ("h1", "%2", "blocked", "question", 200, None, None),
        ]
        assert rows[0].msg == "Allow rm?" and rows[0].session == "main" and rows[0].agent == "claude"
        assert all(r.answered_by is None for r in rows)  # nobody answered from paneboard

    run(db_url, clock, body)


def test_a_row_that_arrives_late_rebuilds_the_pane_and_keeps_answered_by(db_url: str) -> None:
    asyncio.run(make_tokens(db_url))
    clock = Clock(T0)

    async def body(core: Any) -> None:
        await report(core, "h", "%1", "blocked", kind="question")
        async with core.engine.begin() as conn:  # the answer feature's mark, on the open block
            assert await ledger_store.mark_answered(conn, (await waits(core))[0].pane_id, "ana") == 1
        clock.t = T0 + 100
        await report(core, "h", "%1", "working")
        clock.t = T0 + 200
        await report(core, "h", "%1", "blocked", kind="permission")
        async with core.engine.begin() as conn:  # a pane with no open block: nothing to mark
            assert await ledger_store.mark_answered(conn, 10_000, "ana") == 0
        # Another replica whose clock is behind writes a row into the past (t=150, idle),
        # then one that is current: both are placed in time, not by arrival.
        clock.t = T0 + 150
        await report(core, "h", "%1", "idle")
        clock.t = T0 + 400
        await report(core, "h", "%1", "working")
        rows = await waits(core)
        assert summary(rows) == [
            ("h", "%1", "blocked", "question", 0, 100, "answered"),
            ("h", "%1", "blocked", "permission", 200, 400, "answered"),
        ]
        assert [r.answered_by for r in rows] == ["ana", None]
        # The history the ledger was derived from, derived afresh, gives the same.
        async with core.engine.begin() as conn:
            before = summary(await waits(core))
            pid = rows[0].pane_id
            ident = {k: getattr(rows[0], k) for k in ("pane_id", "host", "tmux", "pane", "session")}
            assert len(await rebuild(conn, pid, ident)) == 2
        assert summary(await waits(core)) == before

    run(db_url, clock, body)


def test_a_server_restart_in_the_middle_of_a_block(db_url: str) -> None:
    asyncio.run(make_tokens(db_url))
    clock = Clock(T0)

    async def first(core: Any) -> None:
        await reports(
            core, [update("h", "%1", "blocked", kind="permission", msg="Allow?"), update("h", "%2", "done")]
        )

    async def second(core: Any) -> None:
        # The collector's snapshot after the restart repeats the block: still one interval.
        clock.t = T0 + 500
        await reports(
            core, [update("h", "%1", "blocked", kind="permission", msg="Allow?"), update("h", "%2", "done")]
        )
        assert summary(await waits(core)) == [
            ("h", "%1", "blocked", "permission", 0, None, None),
            ("h", "%2", "done", None, 0, None, None),
        ]
        clock.t = T0 + 600
        await report(core, "h", "%1", "working")

    run(db_url, clock, first)
    run(db_url, clock, second)
    clock.t = T0 + 700

    async def third(core: Any) -> None:
        assert summary(await waits(core)) == [
            ("h", "%1", "blocked", "permission", 0, 600, "answered"),
            ("h", "%2", "done", None, 0, None, None),
        ]

    run(db_url, clock, third)


def test_retention_prunes_ended_intervals_by_age_and_keeps_open_ones(db_url: str) -> None:
    from paneboard_server.panes.retention import prune_once

    asyncio.run(make_tokens(db_url))
    clock = Clock(T0)

    async def body(core: Any) -> None:
        await report(core, "h", "%1", "blocked", kind="question")
        await report(core, "h", "%2", "blocked", kind="question")
        clock.t = T0 + 60
        await report(core, "h", "%1", "working")
        clock.t = T0 + 40 * 86400  # past the default 30 days
        await prune_once(core)
        rows = await waits(core)
        assert summary(rows) == [("h", "%2", "blocked", "question", 0, None, None)]
        async with core.engine.connect() as conn:
            assert (await conn.execute(select(s.history.c.id))).all() == []

    run(db_url, clock, body)


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_the_ledgers_queries_of_one_pane_seek_an_index(db_url: str) -> None:
    """`waits` has one index keyed by pane (ledger_0005): every query the ledger makes for
    given panes (the writer's read, an answer's mark with and without its time, a
    rebuild) must seek it, not walk the table, which holds every wait ever retained."""
    asyncio.run(make_tokens(db_url))
    clock = Clock(T0)
    issued: list[tuple[str, Any]] = []

    def capture(_conn: Any, _cursor: Any, statement: str, params: Any, _ctx: Any, _many: bool) -> None:
        if re.search(r"\bwaits\.pane_id (=|IN)", statement):  # a query of given panes' waits
            issued.append((statement, params))

    async def body(core: Any) -> None:
        for i in range(6):  # panes with waits of their own, so the table is not one pane's
            clock.t = T0 + 10 * i
            await report(core, "h", f"%{i}", "blocked", kind="question")
            clock.t = T0 + 10 * i + 5
            await report(core, "h", f"%{i}", "working")
        clock.t = T0 + 100
        await report(core, "h", "%1", "blocked", kind="permission")
        rows = await waits(core)
        pid = next(r.pane_id for r in rows if r.pane == "%1")
        ident = {k: getattr(rows[0], k) for k in ("pane_id", "host", "tmux", "pane", "session")}
        event.listen(core.engine.sync_engine, "before_cursor_execute", capture)
        # The writer's read goes to the driver directly (store/bulk.py), not through
        # SQLAlchemy's cursor: its SQL is taken from the same compiled query.
        pids = sorted({r.pane_id for r in rows})
        issued.append(waits_read.prepare(core.engine.dialect, {"pids": pids, "lowest": T0 + 30}))
        async with core.engine.begin() as conn:
            assert await ledger_store.mark_answered(conn, pid, "ana") == 1
            assert await ledger_store.mark_answered(conn, pid, "ana", at=T0 + 12) == 1
            await rebuild(conn, rows[0].pane_id, ident)
        event.remove(core.engine.sync_engine, "before_cursor_execute", capture)

    run(db_url, clock, body)
    plans = {}
    with sqlite3.connect(db_url.removeprefix("sqlite:///")) as raw:
        for statement, params in issued:
            plan = [r[3] for r in raw.execute(f"EXPLAIN QUERY PLAN {statement}", params)]
            plans[statement] = plan
            assert any("USING" in step and "ix_waits_pane_end" in step for step in plan), (statement, plan)
            assert not any(step.startswith("SCAN waits") for step in plan), (statement, plan)
    # the writer's read, the two marks, and the rebuild's read and delete
    assert len(plans) == 5, list(plans)
