"""A collector's ledger rows of a day are capped (`retention.max_waits_per_day`), the
ones nobody answered going first, then the shortest a person ended; one answered from
paneboard, an open one and another collector's are never touched. In process, with an
injected clock, on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

from ledger_helpers import T0, Clock, submit, update
from paneboard_server.app import create_app
from paneboard_server.config import parse_config
from paneboard_server.ledger import mark_answered
from paneboard_server.panes.core import Ingest
from paneboard_server.services import services_of
from paneboard_server.store import schema as s
from paneboard_server.store.database import resolve_url
from pbserver import collector_token, make_tokens
from sqlalchemy import select

CAP = 20


def test_a_collectors_waits_of_a_day_are_capped_person_answered_kept(db_url: str) -> None:
    cfg = parse_config({"retention": {"max_waits_per_day": CAP}})
    clock = Clock(T0)

    async def go() -> list[Any]:
        await make_tokens(db_url)
        await collector_token(db_url, "other")  # token 3
        app = create_app(cfg, resolve_url(db_url), clock=clock)
        seq = itertools.count(1)
        async with app.router.lifespan_context(app):
            core = services_of(app).core

            async def say(cid: int, *ups: Any, snapshot: bool = False) -> None:
                hosts: dict[str, Any] | None = {} if snapshot else None
                await submit(core, Ingest(cid, "s", next(seq), snapshot_hosts=hosts, panes=list(ups)))

            # The other collector: 5 waits nobody answered (its panes went).
            await say(3, *[update("g", f"%g{i}", "blocked") for i in range(5)])
            clock.t += 1
            await say(3, update("g", "%g-live", "working"), snapshot=True)
            # This one: a person answers one in its terminal after 30 s, one from paneboard.
            await say(1, update("h", "%typed", "blocked"), update("h", "%board", "blocked"))
            clock.t += 30
            async with core.engine.begin() as conn:
                board = core.pane_ids[(core.host_ids[(1, "h")], "default", "%board")]
                assert await mark_answered(conn, board, "alice") == 1
            await say(1, update("h", "%typed", "working"), update("h", "%board", "working"))
            # Then 20 blocked panes that go, and a pane "answered" 20 times within 0.1 s each.
            await say(1, *[update("h", f"%n{i}", "blocked") for i in range(20)])
            clock.t += 1
            await say(1, update("h", "%typed", "working"), update("h", "%board", "working"), snapshot=True)
            for _ in range(20):
                await say(1, update("h", "%flip", "blocked"))
                clock.t += 0.1
                await say(1, update("h", "%flip", "working"))
                clock.t += 0.1
            await say(1, update("h", "%open", "blocked"))
            assert core.stats["waits_capped"] > 0
            w = s.waits.c
            async with core.engine.connect() as conn:
                rows = await conn.execute(
                    select(w.host, w.pane, w.ended, w.answered_by, w.end_t - w.start_t).order_by(w.id)
                )
                return [tuple(r) for r in rows.all()]

    rows = asyncio.run(go())
    mine = [r for r in rows if r[0] == "h"]
    closed = [r for r in mine if r[2] is not None]
    assert len(closed) <= CAP + CAP // 10, closed
    assert not [r for r in mine if r[2] == "gone"]  # nobody's answer: went first
    assert ("h", "%typed", "answered", None) in [r[:4] for r in mine]
    assert ("h", "%board", "answered", "alice") in [r[:4] for r in mine]
    assert [r[:3] for r in mine if r[2] is None] == [("h", "%open", None)]
    flips = [r for r in mine if r[1] == "%flip"]
    assert 0 < len(flips) < 20  # the shortest a person ended went next, as many as needed
    assert len([r for r in rows if r[0] == "g" and r[2] == "gone"]) == 5  # another collector's stay
