"""A pane that loses its state while it cannot be observed (an agent behind ssh whose
report went stale) keeps its last known classification in the API, and gets it back
from history after a restart, so the board can say "last known: blocked, 2 min ago"."""

from __future__ import annotations

import asyncio

from paneboard_protocol.contract import MAX_AGE
from paneboard_protocol.pane import LastKnown
from paneboard_server.app import create_app
from paneboard_server.config import Config
from paneboard_server.services import services_of
from paneboard_server.store.database import resolve_url
from pbserver import make_tokens, wait_until
from test_server_staleness import T0, Clock, evidence_for, ingest


def test_stale_report_behind_ssh_leaves_its_last_known_state(db_url: str) -> None:
    clock = Clock(T0)
    stale_at = T0 + MAX_AGE + 2

    async def go() -> None:
        await make_tokens(db_url)
        app = create_app(Config(), resolve_url(db_url), clock=clock)
        async with app.router.lifespan_context(app):
            core = services_of(app).core
            ev, cls = evidence_for("blocked", observable=False, ts=int(T0))
            unobs = await ingest(core, "%1", ev, cls)
            ev, cls = evidence_for("blocked", observable=True, ts=int(T0))
            obs = await ingest(core, "%2", ev, cls)
            assert core.view(core.panes[unobs]).last_known is None  # it has a state now
            clock.t = stale_at
            core.deadlines.poke()
            await wait_until(lambda: core.panes[unobs].state is None, what="staleness expiry")
            await wait_until(lambda: core.panes[obs].state == "idle", what="staleness expiry")
            got = core.view(core.panes[unobs]).last_known
            assert got == LastKnown(
                agent="my-agent",
                state="blocked",
                kind=None,
                msg=None,
                since=T0,
                at=stale_at,
                reason="stale",  # its report outlived its ts: the board shows it as possibly waiting
            )
            assert core.view(core.panes[obs]).last_known is None  # observable and idle: nothing to tell
        clock.t = stale_at + 120
        app = create_app(Config(), resolve_url(db_url), clock=clock)
        async with app.router.lifespan_context(app):
            core = services_of(app).core
            assert core.view(core.panes[unobs]).last_known == got  # rebuilt from history
            ev, cls = evidence_for("idle", observable=True, ts=None)
            await ingest(core, "%1", ev, cls)  # ssh has ended: the pane can be seen again
            assert core.view(core.panes[unobs]).last_known is None
            assert core.panes[unobs].last_known is None

    asyncio.run(go())
