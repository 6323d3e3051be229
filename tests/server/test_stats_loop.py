"""`GET /api/stats` leaves the event loop free: its figures are worked out by the
database, not on the loop's thread, so `/healthz` (and acks, and streams) answer while a
year of stats is being added up; answers are cached per range."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import httpx
import pytest
from ledger_helpers import Clock
from paneboard_server.app import create_app
from paneboard_server.config import Config
from paneboard_server.ledger import stats as ledger_stats
from paneboard_server.ledger.intervals import normalise
from paneboard_server.services import services_of
from paneboard_server.store import schema as s
from paneboard_server.store.database import resolve_url
from pbserver import make_tokens
from sqlalchemy import insert

NOW = 1_900_000_000.0


def waits(n: int) -> list[dict[str, Any]]:
    return [
        {"host": f"h{i % 3}", "tmux": "default", "pane": f"%{i % 7}", "session": "s", "agent": "claude",
         "state": "blocked", "kind": "permission", "msg": f"Allow edit of 'f{i}.py'?",
         "start_t": NOW - 3600 * (i + 1), "end_t": NOW - 3600 * (i + 1) + 60, "ended": "answered"}
        for i in range(n)
    ]  # fmt: skip


async def serving(db_url: str, body: Any) -> None:
    tokens = await make_tokens(db_url)
    app = create_app(Config(), resolve_url(db_url), clock=Clock(NOW))
    async with app.router.lifespan_context(app):
        core = services_of(app).core
        async with core.engine.begin() as conn:
            await conn.execute(insert(s.waits), waits(200))
        transport = httpx.ASGITransport(app=app)
        headers = {"Authorization": f"Bearer {tokens['viewer']}"}
        async with httpx.AsyncClient(transport=transport, base_url="http://t", headers=headers) as c:
            await body(c, app)


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_healthz_answers_while_a_stats_request_is_being_worked_out(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The prompts' text is normalised as the figures are worked out; here the first
    normalisation waits until `/healthz` has answered. Worked out on the loop's thread,
    `/healthz` could not answer: the loop would be stuck in the stats request."""
    entered, release = threading.Event(), threading.Event()
    seen: dict[str, Any] = {}

    def held(msg: str | None) -> str:
        if not entered.is_set():
            seen["thread"] = threading.get_ident()
            entered.set()
            seen["released"] = release.wait(20)
        return normalise(msg)

    # the server's normaliser: the one the database calls, and the one Python called before
    monkeypatch.setattr(ledger_stats, "_normalise", held)
    try:
        from paneboard_server.ledger import aggregate
    except ImportError:  # the server before the database did the adding
        pass
    else:
        monkeypatch.setattr(aggregate, "_normalise", held)

    async def body(c: httpx.AsyncClient, app: Any) -> None:
        loop_thread = threading.get_ident()
        stats = asyncio.create_task(c.get("/api/stats", params={"from": NOW - 366 * 86400, "to": NOW}))
        assert await asyncio.to_thread(entered.wait, 30)
        health = await c.get("/healthz")
        release.set()
        assert health.status_code == 200, health.text
        r = await stats
        assert r.status_code == 200, r.text
        assert r.json()["totals"]["count"] == 200
        assert seen["released"], "/healthz did not answer while the stats request was in flight"
        assert seen["thread"] != loop_thread

    asyncio.run(serving(db_url, body))


def test_stats_answers_are_cached_per_range_and_shared_while_under_way(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from paneboard_server.ledger import aggregate

    worked: list[Any] = []
    real = aggregate.aggregate

    async def counted(conn: Any, q: Any, now: float, pg: bool) -> dict[str, Any]:
        worked.append(q)
        return await real(conn, q, now, pg)

    monkeypatch.setattr(aggregate, "aggregate", counted)

    async def body(c: httpx.AsyncClient, app: Any) -> None:
        year = {"from": NOW - 366 * 86400, "to": NOW}
        rs = await asyncio.gather(*(c.get("/api/stats", params=year) for _ in range(4)))
        assert [r.status_code for r in rs] == [200] * 4
        assert len({r.text for r in rs}) == 1
        again = await c.get("/api/stats", params=year)
        week = await c.get("/api/stats", params={"from": NOW - 7 * 86400, "to": NOW})
        assert again.text == rs[0].text
        assert week.json()["totals"]["count"] == 168 != rs[0].json()["totals"]["count"]
        assert len(worked) == 2  # the year once, the week once

    asyncio.run(serving(db_url, body))
