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

pytestmark = pytest.mark.postgres


@pytest.mark.parametrize("db_url", ["postgres"], indirect=True)
def test_change_on_one_process_reaches_sse_client_of_the_other(db_url: str, server_factory: Any) -> None:
    password = "correct horse battery"
    tokens = asyncio.run(make_tokens(db_url, viewer_password=password))
    a = server_factory(db_url)
    b = server_factory(db_url)
    auth = {"Authorization": f"Bearer {tokens['viewer']}"}

    async def go() -> None:
        seen: list[Any] = []
        up = UplinkSink(a.url, tokens["collector"], on_seen=lambda k, t: seen.append(k))
        async with (
            httpx.AsyncClient() as c,
            c.stream("GET", b.url + "/api/stream", headers=auth, timeout=httpx.Timeout(30)) as r,
        ):
            sse = SSE(r)
            assert (await sse.next())["event"] == "snapshot"
            await up.start()
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
                await wait_until(lambda: seen, what="seen forwarded across processes")
                ev = await sse.until(
                    lambda e: e["event"] == "change" and e["data"]["panes"][0]["state"] == "idle"
                )
                # And A's own readers agree.
                got = (await c.get(a.url + "/api/panes", headers=auth)).json()
                assert [x["state"] for x in got] == ["idle"]
            finally:
                await up.close()

    asyncio.run(go())
