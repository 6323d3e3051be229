"""Scratch: a field added only in pane.FIELDS (+ migration) reaches API, stream and history."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import httpx
from paneboard_agent.uplink import UplinkSink
from pbserver import SSE, make_tokens, pane_update


def test_trial_field_travels(db_url: str, server_factory: Any) -> None:
    tokens = asyncio.run(make_tokens(db_url))
    srv = server_factory(db_url)
    h = {"Authorization": f"Bearer {tokens['viewer']}"}

    async def go() -> None:
        async with httpx.AsyncClient() as c, c.stream("GET", srv.url + "/api/stream", headers=h) as r:
            sse = SSE(r)
            await sse.next()
            up = UplinkSink(srv.url, tokens["collector"])
            await up.start()
            try:
                u = dataclasses.replace(pane_update("build1", "%1", "working"), trial="hello")
                await up.pane_changed(u)
                ev = await sse.until(lambda e: e["event"] == "change" and e["data"]["panes"])
                p = ev["data"]["panes"][0]
                print("stream:", p["trial"])
                assert p["trial"] == "hello"
                api = (await c.get(srv.url + "/api/panes", headers=h)).json()
                print("api:", api[0]["trial"])
                assert api[0]["trial"] == "hello"
                hist = (await c.get(srv.url + f"/api/panes/{p['id']}/events", headers=h)).json()["events"]
                print("history:", hist[0])
                assert hist[0]["trial"] == "hello"
            finally:
                await up.close()

    asyncio.run(go())
