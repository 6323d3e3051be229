"""Two `paneboard serve` processes on one PostgreSQL: a change ingested by one reaches
an SSE client of the other (LISTEN/NOTIFY carrying ids), and "seen" reaches a
collector connected to the other process."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from paneboard_agent.uplink import UplinkSink
from pbserver import SSE, make_tokens, pane_update, wait_until
from support.commands import SeenRecorder

pytestmark = pytest.mark.postgres


@pytest.mark.parametrize("db_url", ["postgres"], indirect=True)
def test_change_on_one_process_reaches_sse_client_of_the_other(db_url: str, server_factory: Any) -> None:
    password = "correct horse battery"
    tokens = asyncio.run(make_tokens(db_url, viewer_password=password))
    a = server_factory(db_url)
    b = server_factory(db_url)
    auth = {"Authorization": f"Bearer {tokens['viewer']}"}

    async def go() -> None:
        seen = SeenRecorder()
        up = UplinkSink(a.url, tokens["collector"])
        async with (
            httpx.AsyncClient() as c,
            c.stream("GET", b.url + "/api/stream", headers=auth, timeout=httpx.Timeout(30)) as r,
            c.stream("GET", a.url + "/api/stream", headers=auth, timeout=httpx.Timeout(30)) as ra,
        ):
            sse = SSE(r)
            assert (await sse.next())["event"] == "snapshot"
            sse_a = SSE(ra)  # A's own view: a change reaches it only once A has re-read the pane
            assert (await sse_a.next())["event"] == "snapshot"
            await up.start(commands=seen)
            try:
                await up.pane_changed(pane_update("h", "%1", "blocked", kind="question", msg="which?"))
                ev = await sse.until(lambda e: e["event"] == "change" and e["data"]["panes"])
                p = ev["data"]["panes"][0]
                assert (p["pane"], p["state"], p["kind"]) == ("%1", "blocked", "question")
                await up.pane_changed(pane_update("h", "%1", "done", msg="ok"))
                ev = await sse.until(
                    lambda e: e["event"] == "change" and e["data"]["panes"][0]["state"] == "done"
                )
                got = (await c.get(b.url + "/api/panes", headers=auth)).json()
                assert [x["state"] for x in got] == ["done"]
                # "seen" on B travels to the collector connected to A.
                async with httpx.AsyncClient(base_url=b.url) as browser:
                    csrf = (
                        await browser.post("/api/login", json={"name": "ana", "password": password})
                    ).json()["csrf"]
                    r2 = await browser.post(f"/api/panes/{p['id']}/seen", headers={"X-CSRF-Token": csrf})
                    assert r2.status_code == 200 and r2.json()["pane"]["state"] == "idle"
                await wait_until(lambda: seen.seen, what="seen forwarded across processes")
                ev = await sse.until(
                    lambda e: e["event"] == "change" and e["data"]["panes"][0]["state"] == "idle"
                )
                # And A's own readers agree, once A has re-read the pane B changed (its NOTIFY
                # reaches A after B's commit, on its own time).
                ev_a = await sse_a.until(
                    lambda e: e["event"] == "change" and e["data"]["panes"][0]["state"] == "idle"
                )
                assert ev_a["id"] == ev["id"]  # the same change (revs come from one sequence)
                got = (await c.get(a.url + "/api/panes", headers=auth)).json()
                assert [x["state"] for x in got] == ["idle"]
            finally:
                await up.close()

    asyncio.run(go())


@pytest.mark.parametrize("db_url", ["postgres"], indirect=True)
def test_a_burst_on_one_process_leaves_the_other_with_every_pane_current(
    db_url: str, server_factory: Any
) -> None:
    """Many commits on A in a row: B merges the notifications that arrive before its
    writer re-reads (one re-read per batch), and must still end with every pane's last
    state, none lost or stale."""
    tokens = asyncio.run(make_tokens(db_url))
    a = server_factory(db_url)
    b = server_factory(db_url)
    auth = {"Authorization": f"Bearer {tokens['viewer']}"}

    async def go() -> None:
        up = UplinkSink(a.url, tokens["collector"])
        await up.start()
        try:
            for round_, state in enumerate(("working", "blocked", "done")):
                for i in range(150):
                    await up.pane_changed(pane_update("h", f"%{i}", state, msg=f"{round_}-{i}"))
                    if i % 10 == 0:
                        await asyncio.sleep(0.005)  # several messages, so several commits on A

            async def b_current() -> bool:
                async with httpx.AsyncClient() as c:
                    got = (await c.get(b.url + "/api/panes", headers=auth)).json()
                return len(got) == 150 and all(p["msg"] == f"2-{p['pane'][1:]}" for p in got)

            await wait_until(b_current, timeout=30, what="B to show every pane's last state")
            async with httpx.AsyncClient() as c:
                got_a = (await c.get(a.url + "/api/panes", headers=auth)).json()
                got_b = (await c.get(b.url + "/api/panes", headers=auth)).json()
            key = lambda p: p["id"]  # noqa: E731
            assert [(p["id"], p["rev"], p["state"]) for p in sorted(got_a, key=key)] == [
                (p["id"], p["rev"], p["state"]) for p in sorted(got_b, key=key)
            ]
        finally:
            await up.close()

    asyncio.run(go())


@pytest.mark.parametrize("db_url", ["postgres"], indirect=True)
def test_notifications_before_the_writer_takes_a_refresh_join_it(db_url: str) -> None:
    """Notifications that arrive while a re-read is queued add their ids to it (one
    re-read per writer batch, not one per commit elsewhere); once the writer has begun
    it, the next notification queues a new one, so no id waits for a later change."""
    from paneboard_server.app import create_app
    from paneboard_server.config import Config
    from paneboard_server.services import services_of
    from paneboard_server.store.database import resolve_url

    async def go() -> None:
        await make_tokens(db_url)
        app = create_app(Config(), resolve_url(db_url))
        async with app.router.lifespan_context(app):
            fan = services_of(app).fanout
            await asyncio.wait_for(fan.ready.wait(), 10)
            # Without yielding, the writer cannot take the first before the others arrive.
            fan._on_change(None, 0, "paneboard_change", "peer:1,2")
            first = fan._open
            fan._on_change(None, 0, "paneboard_change", "peer:2,3")
            fan._on_change(None, 0, "paneboard_change", "peer:4")
            fan._on_change(None, 0, "paneboard_change", f"{services_of(app).core.instance}:9")  # our own
            assert fan._open is first and sorted(first.pane_ids) == [1, 2, 3, 4] and fan.merged == 2
            done = asyncio.get_running_loop().create_future()
            first.on_commit = lambda: done.set_result(None)
            await asyncio.wait_for(done, 10)
            assert first.taken
            fan._on_change(None, 0, "paneboard_change", "peer:5")
            assert fan._open is not first and fan._open.pane_ids == [5]

    asyncio.run(go())


@pytest.mark.parametrize("db_url", ["postgres"], indirect=True)
def test_the_process_holding_a_collector_says_so_in_the_database(db_url: str, server_factory: Any) -> None:
    """While a collector is connected to A, A's listening session holds its lock (so B
    asks A to answer, and answers `offline` at once when nobody holds it). A listening
    session that breaks takes its locks with it; A takes them again when it reconnects,
    and gives them up when the collector goes. A lock of the same key in another
    database of the cluster is another deployment's, not this one's."""
    import asyncpg
    from paneboard_server.panes import held_anywhere
    from paneboard_server.panes.fanout import HOLD_CLASS
    from paneboard_server.store.database import create_engine, resolve_url
    from sqlalchemy import text
    from sqlalchemy.engine import make_url
    from support.postgres import PG_ADMIN

    tokens = asyncio.run(make_tokens(db_url))
    a = server_factory(db_url)

    async def go() -> None:
        engine = create_engine(resolve_url(db_url))
        holders = text(
            "SELECT pid, objid FROM pg_locks WHERE locktype = 'advisory' AND granted AND classid = :c"
            " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
        )

        async def holding() -> list[tuple[int, int]]:
            async with engine.connect() as conn:
                return [(r[0], r[1]) for r in (await conn.execute(holders, {"c": HOLD_CLASS}))]

        async def held_by_other_than(pid: int) -> list[tuple[int, int]]:
            got = await holding()
            return got if got and pid not in [p for p, _ in got] else []

        async def none_held() -> bool:
            return await holding() == []

        admin = make_url(PG_ADMIN).set(drivername="postgresql").render_as_string(hide_password=False)
        elsewhere = await asyncpg.connect(admin)
        up = UplinkSink(a.url, tokens["collector"])
        try:
            assert await holding() == []
            await up.start(commands=SeenRecorder())
            await up.pane_changed(pane_update("h", "%1", "blocked"))
            [(first, cid)] = await wait_until(holding, what="A holding the collector")
            assert await held_anywhere(engine, cid)
            await elsewhere.execute("SELECT pg_advisory_lock_shared($1, $2)", HOLD_CLASS, cid)
            async with engine.begin() as conn:  # A's listening session breaks
                await conn.execute(text("SELECT pg_terminate_backend(:p)"), {"p": first})
            again = await wait_until(
                lambda: held_by_other_than(first), timeout=20, what="the hold taken again"
            )
            assert [c for _, c in again] == [cid]
            await up.close()
            await wait_until(none_held, what="the hold given up")
            assert not await held_anywhere(engine, cid)  # though the other database holds it
        finally:
            await up.close()
            await elsewhere.close()
            await engine.dispose()

    asyncio.run(go())
