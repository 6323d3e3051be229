"""Several messages about the same pane in one writer batch read as one pane's story.

A collector's messages queue while a batch commits, so the next batch often holds two
deltas about one pane; when the pane (and its host) are new, the first creates them
inside the batch, before the in-memory mirror knows either. The second must find the
pane the first made, not make it again: made again, it would start from nothing, and
its history row would say the pane came from nowhere rather than from the first
message's state.
"""

from __future__ import annotations

import asyncio
from typing import Any

from ledger_helpers import T0, Clock, update
from paneboard_server.app import create_app
from paneboard_server.config import Config
from paneboard_server.panes import writer
from paneboard_server.panes.core import Ingest
from paneboard_server.services import services_of
from paneboard_server.store import schema as s
from paneboard_server.store.database import resolve_url
from pbserver import make_tokens
from sqlalchemy import select


def test_two_deltas_about_a_new_pane_in_one_batch(db_url: str) -> None:
    asyncio.run(make_tokens(db_url))

    async def go() -> list[Any]:
        app = create_app(Config(), resolve_url(db_url), clock=Clock(T0))
        async with app.router.lifespan_context(app):
            core = services_of(app).core
            blocked = update("new-host", "%1", "blocked", kind="permission", msg="Allow?")
            first = Ingest(1, "s", 1, panes=[blocked])
            second = Ingest(1, "s", 2, panes=[update("new-host", "%1", "working")])
            await writer.write(core, [first, second])  # one transaction, both messages
            (pane,) = core.panes.values()
            assert (pane.state, pane.gone_at) == ("working", None)
            async with core.engine.connect() as c:
                h = s.history
                rows = await c.execute(select(h.c.state, h.c.prev_state, h.c.reason).order_by(h.c.id))
                return [tuple(r) for r in rows]

    assert asyncio.run(go()) == [("blocked", None, "report"), ("working", "blocked", "report")]
