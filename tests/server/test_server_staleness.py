"""Staleness with an injected clock: the server re-runs the shared classifier at each
pane's deadline (TA-12/TA-13), records the change and publishes it; `idle` and
reports without `ts` are trusted indefinitely (TA-14)."""

from __future__ import annotations

import asyncio
from typing import Any

from paneboard_protocol.classifier import PaneClassifier
from paneboard_protocol.contract import MAX_AGE
from paneboard_protocol.events import AgentReport
from paneboard_protocol.pane import PaneKey, PaneUpdate
from paneboard_server.app import create_app
from paneboard_server.config import Config
from paneboard_server.panes.core import Ingest
from paneboard_server.services import services_of
from paneboard_server.store.database import resolve_url
from pbserver import make_tokens, wait_until

T0 = 1_900_000_000.0


class Clock:
    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def evidence_for(state: str, *, observable: bool, ts: int | None) -> tuple[dict[str, Any], Any]:
    c = PaneClassifier()
    if observable:
        c.set_process(T0, "mytool", 10, observable=True)
    else:
        c.set_process(T0, "ssh", 20, observable=False)  # the agent runs on the far side
    c.feed(T0, [AgentReport(0, "THINKTERM_AGENT", 1, "my-agent", state, None, ts, False)])
    return c.evidence(), c.classification(T0)


async def ingest(core: Any, pane: str, evidence: dict[str, Any], cls: Any) -> int:
    done = asyncio.get_running_loop().create_future()
    u = PaneUpdate(
        key=PaneKey("far", "default", pane),
        session="",
        window="",
        agent=cls.agent,
        state=cls.state,
        kind=cls.kind,
        msg=None,
        source=cls.source,
        observable=cls.observable,
        t=T0,
        since=cls.since,
        evidence=evidence,
    )
    core.submit(Ingest(1, "s", 1, panes=[u], on_commit=lambda: done.set_result(None)))
    await asyncio.wait_for(done, 10)
    return next(p.id for p in core.panes.values() if p.pane == pane)


def test_stale_blocked_contract_loses_authority_and_identity(db_url: str) -> None:
    clock = Clock(T0)

    async def go() -> None:
        await make_tokens(db_url)  # the collector the panes belong to
        app = create_app(Config(), resolve_url(db_url), clock=clock)
        async with app.router.lifespan_context(app):
            core = services_of(app).core
            ev_unobs, cls = evidence_for("blocked", observable=False, ts=int(T0))
            assert (cls.agent, cls.state) == ("my-agent", "blocked")
            unobs = await ingest(core, "%1", ev_unobs, cls)
            ev_obs, cls_obs = evidence_for("blocked", observable=True, ts=int(T0))
            obs = await ingest(core, "%2", ev_obs, cls_obs)
            ev_idle, cls_idle = evidence_for("idle", observable=False, ts=int(T0))
            idle = await ingest(core, "%3", ev_idle, cls_idle)
            ev_nots, cls_nots = evidence_for("blocked", observable=False, ts=None)
            nots = await ingest(core, "%4", ev_nots, cls_nots)
            assert core.panes[unobs].triple() == ("my-agent", "blocked", None)
            assert core.panes[idle].triple()[:2] == ("my-agent", "idle")
            # One heap entry per pane that can expire; not one per pane.
            assert core.deadlines.next_deadline() is not None
            assert core.deadlines.gen.keys() >= {unobs, obs}
            sub = core.hub.subscribe()

            clock.t = T0 + MAX_AGE  # exactly six hours: still fresh (RI-4)
            core.deadlines.poke()
            await asyncio.sleep(0.2)
            assert core.panes[unobs].state == "blocked"

            clock.t = T0 + MAX_AGE + 2
            core.deadlines.poke()
            await wait_until(lambda: core.panes[unobs].state != "blocked", what="staleness expiry")
            await wait_until(lambda: core.panes[obs].state != "blocked", what="staleness expiry")
            p = core.panes[unobs]
            assert (p.agent, p.state) == (None, None)  # TA-13: the identity went too
            assert p.since == T0 + MAX_AGE + 2
            q = core.panes[obs]
            assert q.agent == "my-agent" and q.state == "idle"  # observable: identity stays (RI-1)
            assert core.panes[idle].triple()[:2] == ("my-agent", "idle")  # TA-14
            assert core.panes[nots].triple()[:2] == ("my-agent", "blocked")  # no ts: trusted
            _rev, frame = await asyncio.wait_for(sub.queue.get(), 5)
            assert b'"state":null' in frame or b'"state":"idle"' in frame
            async with core.engine.connect() as conn:
                from paneboard_server.store import schema as s
                from sqlalchemy import select

                rows = (
                    await conn.execute(
                        select(s.history.c.pane_id, s.history.c.state, s.history.c.reason).where(
                            s.history.c.reason == "stale"
                        )
                    )
                ).all()
            assert sorted((r.pane_id, r.state) for r in rows) == [(unobs, None), (obs, "idle")]
        # A restart reloads panes and their deadlines from the table.
        app = create_app(Config(), resolve_url(db_url), clock=clock)
        async with app.router.lifespan_context(app):
            core = services_of(app).core
            assert core.panes[unobs].triple() == (None, None, None)
            assert core.panes[nots].state == "blocked"

    asyncio.run(go())
