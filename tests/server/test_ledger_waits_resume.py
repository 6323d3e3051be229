"""A wait is one wait (issue 24): a collector that restarts mid-wait first sends a
snapshot in which its host is not connected yet, then one with the pane as it still is.
Neither may end the wait, make the pane gone, or restart its `since`; and a wait whose
question text arrives after the row that opened it keeps that text in the ledger."""

from __future__ import annotations

import asyncio
from typing import Any

import msgspec
from ledger_helpers import T0, Clock, pane_id, report, submit, update, waits
from paneboard_protocol.pane import PaneUpdate
from paneboard_protocol.wire import HostState
from paneboard_server.app import create_app
from paneboard_server.config import Config
from paneboard_server.panes.core import Ingest
from paneboard_server.services import services_of
from paneboard_server.store.database import resolve_url
from pbserver import make_tokens


def run(db_url: str, clock: Clock, body: Any) -> None:
    async def go() -> None:
        app = create_app(Config(), resolve_url(db_url), clock=clock)
        async with app.router.lifespan_context(app):
            await body(services_of(app).core)

    asyncio.run(go())


def seen_at(u: PaneUpdate, since: float) -> PaneUpdate:
    """The update as a collector sends it: with its own `since` (when *it* saw the state begin)."""
    return msgspec.structs.replace(u, since=since)


async def snapshot(core: Any, stream: str, seq: int, reachable: bool, panes: list[PaneUpdate]) -> None:
    hosts = {"h1": HostState(reachable=reachable, error=None if reachable else "not connected yet")}
    await submit(core, Ingest(1, stream, seq, snapshot_hosts=hosts, panes=panes))


def test_a_collector_restarted_mid_wait_keeps_the_wait_its_since_and_its_pane(db_url: str) -> None:
    asyncio.run(make_tokens(db_url))
    clock = Clock(T0)
    ask = dict(kind="permission", msg="Approve the deploy?")

    async def body(core: Any) -> None:
        await snapshot(core, "run1", 1, True, [seen_at(update("h1", "%1", "blocked", **ask), T0)])
        pid = pane_id(core, "h1", "%1")
        assert core.panes[pid].since == T0
        # The collector restarts 27 s into the wait: its first snapshot cannot see the host yet.
        clock.t = T0 + 27
        await snapshot(core, "run2", 1, False, [])
        p = core.panes[pid]
        assert p.gone_at is None and p.state == "blocked" and p.since == T0
        # Then it has the pane back, exactly as it was; its own `since` is its start.
        clock.t = T0 + 30
        await snapshot(core, "run2", 2, True, [seen_at(update("h1", "%1", "blocked", **ask), T0 + 29)])
        p = core.panes[pid]
        assert p.since == T0 and p.state == "blocked"
        history = await core_history(core, pid)
        assert history == [("blocked", "report")], history  # nothing in between
        rows = await waits(core)
        assert [(r.state, r.start_t, r.end_t, r.msg) for r in rows] == [("blocked", T0, None, ask["msg"])]
        # A pane the snapshot that reaches the host no longer lists is gone, as always.
        clock.t = T0 + 40
        await snapshot(core, "run2", 3, True, [])
        assert core.panes[pid].gone_at is not None

    run(db_url, clock, body)


def test_a_different_prompt_after_a_restart_is_a_new_wait(db_url: str) -> None:
    asyncio.run(make_tokens(db_url))
    clock = Clock(T0)

    async def body(core: Any) -> None:
        await snapshot(core, "run1", 1, True, [seen_at(update("h1", "%1", "blocked", msg="First?"), T0)])
        pid = pane_id(core, "h1", "%1")
        clock.t = T0 + 30
        again = seen_at(update("h1", "%1", "blocked", msg="Second?"), T0 + 29)
        await snapshot(core, "run2", 1, True, [again])
        assert core.panes[pid].since == T0 + 29  # another question: its own start

    run(db_url, clock, body)


def test_the_question_read_after_the_wait_opened_is_the_ledger_rows_text(db_url: str) -> None:
    asyncio.run(make_tokens(db_url))
    clock = Clock(T0)

    async def body(core: Any) -> None:
        # A THINKTERM contract says `blocked` without text; the question comes off the screen.
        await report(core, "h1", "%1", "blocked", agent="remote-agent")
        clock.t = T0 + 1
        await report(core, "h1", "%1", "blocked", agent="remote-agent", msg="Approve the deploy? [y/N]")
        [row] = await waits(core)
        assert row.msg == "Approve the deploy? [y/N]" and row.end_t is None
        # A repaint without the question keeps the text; the wait's end keeps it too.
        clock.t = T0 + 2
        await report(core, "h1", "%1", "blocked", agent="remote-agent")
        clock.t = T0 + 3
        await report(core, "h1", "%1", "working", agent="remote-agent")
        [row] = await waits(core)
        assert (row.msg, row.ended) == ("Approve the deploy? [y/N]", "answered")

    run(db_url, clock, body)


async def core_history(core: Any, pid: int) -> list[tuple[Any, ...]]:
    from paneboard_server.store import schema as s
    from sqlalchemy import select

    h = s.history.c
    async with core.engine.connect() as conn:
        rows = (await conn.execute(select(h.state, h.reason).where(h.pane_id == pid).order_by(h.id))).all()
    return [tuple(r) for r in rows]
