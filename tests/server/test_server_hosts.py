"""`GET /api/hosts`: each host's reachability and its link's health as its collector
measured it (round trip, reconnects, last contact), and since when a lost host is
unreachable, against a real `paneboard serve` process (SQLite and PostgreSQL)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
from pbserver import bearer, make_tokens, pane_update
from test_server_ingest import raw


async def hosts(url: str, token: str) -> dict[str, dict[str, Any]]:
    async with httpx.AsyncClient() as c:
        r = await c.get(url + "/api/hosts", headers=bearer(token))
        r.raise_for_status()
        return {h["name"]: h for h in r.json()}


def test_hosts_carry_the_links_health_and_unreachable_since(db_url: str, server_factory: Any) -> None:
    tokens = asyncio.run(make_tokens(db_url))
    srv = server_factory(db_url)

    async def go() -> None:
        async with httpx.AsyncClient() as c:
            assert (await c.get(srv.url + "/api/hosts")).status_code == 401  # viewers only
        ws = await raw(srv.url, tokens["collector"])
        await ws.send(json.dumps({"type": "hello", "stream": "h1", "version": "t", "hosts": ["b1", "b2"]}))
        assert json.loads(await ws.recv())["type"] == "welcome"
        pane = pane_update("b1", "%1", "working").wire_json()
        snap = {
            "type": "snapshot",
            "seq": 1,
            "t": 1,
            "hosts": {
                "b1": {"reachable": True, "rtt": 0.041, "reconnects": 2, "contact": 1796219600.5},
                "b2": {"reachable": True},  # a collector that measures nothing
            },
            "panes": [pane],
        }
        await ws.send(json.dumps(snap))
        assert json.loads(await ws.recv()) == {"type": "ack", "seq": 1}
        got = await hosts(srv.url, tokens["viewer"])
        b1, b2 = got["b1"], got["b2"]
        assert (b1["rtt"], b1["reconnects"], b1["contact"], b1["reachable"]) == (0.041, 2, 1796219600.5, True)
        assert b1["collector"] == "col" and b1["unreachable_since"] is None
        assert (b2["rtt"], b2["reconnects"], b2["contact"]) == (None, 0, None)
        lost = {"op": "host", "host": "b1", "reachable": False, "error": "ssh: connection lost"}
        lost |= {"rtt": None, "reconnects": 2, "contact": 1796219601.0, "t": 2}
        await ws.send(json.dumps({"type": "delta", "seq": 2, "ops": [lost]}))
        assert json.loads(await ws.recv()) == {"type": "ack", "seq": 2}
        b1 = (await hosts(srv.url, tokens["viewer"]))["b1"]
        assert b1["reachable"] is False and b1["error"] == "ssh: connection lost"
        assert b1["rtt"] is None and b1["contact"] == 1796219601.0 and b1["unreachable_since"] > 0
        async with httpx.AsyncClient() as c:
            r = await c.get(srv.url + "/api/panes", headers=bearer(tokens["viewer"]))
        p = r.json()[0]
        assert p["reachable"] is False and p["unreachable_since"] == b1["unreachable_since"]
        # a round trip out of bounds is refused like any bad field, naming it
        bad = dict(lost, rtt=-1.0)
        await ws.send(json.dumps({"type": "delta", "seq": 3, "ops": [bad]}))
        refused = json.loads(await ws.recv())
        assert refused["type"] == "refused" and refused["at"] == "ops.0.rtt", refused
        await ws.close()

    asyncio.run(go())
