"""Collectors against a real `paneboard serve` process: the uplink, the wire protocol's
acks/duplicates/gaps, malformed input, restarts and SSE resume, on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import json
import signal
import time
from typing import Any

import httpx
import pytest
import websockets
from paneboard_agent.uplink import PaneKey, UplinkSink
from pbserver import SSE, bearer, make_tokens, pane_update, wait_until
from support.commands import SeenRecorder


async def panes(url: str, token: str) -> list[dict[str, Any]]:
    async with httpx.AsyncClient() as c:
        r = await c.get(url + "/api/panes", headers=bearer(token))
        r.raise_for_status()
        return r.json()


def by_pane(items: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {p["pane"]: p for p in items}


def test_uplink_report_reaches_api_and_stream(db_url: str, server_factory: Any) -> None:
    tokens = asyncio.run(make_tokens(db_url))
    srv = server_factory(db_url)

    async def go() -> None:
        async with (
            httpx.AsyncClient() as c,
            c.stream(
                "GET", srv.url + "/api/stream", headers=bearer(tokens["viewer"]), timeout=httpx.Timeout(30)
            ) as r,
        ):
            assert r.status_code == 200
            assert r.headers["content-type"].startswith("text/event-stream")
            sse = SSE(r)
            first = await sse.next()
            assert first["event"] == "snapshot" and first["data"]["panes"] == []
            up = UplinkSink(srv.url, tokens["collector"])
            await up.start()
            try:
                await up.host_status("build1", True, time.time(), None)
                await up.pane_changed(
                    pane_update("build1", "%1", "blocked", kind="permission", msg="Run rm?")
                )
                ev = await sse.until(lambda e: e["event"] == "change" and e["data"]["panes"])
                p = ev["data"]["panes"][0]
                assert (p["host"], p["pane"], p["state"], p["kind"], p["msg"]) == (
                    "build1",
                    "%1",
                    "blocked",
                    "permission",
                    "Run rm?",
                )
                assert p["reachable"] is True and p["stale"] is False and int(ev["id"]) == p["rev"]
                api = by_pane(await panes(srv.url, tokens["viewer"]))
                assert api["%1"]["state"] == "blocked" and api["%1"]["id"] == p["id"]
                await up.pane_gone(PaneKey("build1", "default", "%1"), time.time())
                ev = await sse.until(lambda e: e["event"] == "change" and e["data"]["gone"])
                assert ev["data"]["gone"] == [p["id"]]
                assert await panes(srv.url, tokens["viewer"]) == []
            finally:
                await up.close()

    asyncio.run(go())


async def raw(url: str, token: str) -> Any:
    return await websockets.connect(
        url.replace("http", "ws") + "/api/ingest", additional_headers=bearer(token), max_size=1 << 22
    )


def pane_json(pane: str, state: str, msg: str | None = None) -> dict[str, Any]:
    return pane_update("h", pane, state, msg=msg).wire_json()


async def expect_close(ws: Any, code: int, words: str) -> None:
    with pytest.raises(websockets.ConnectionClosed) as info:
        for _ in range(10):
            await asyncio.wait_for(ws.recv(), 10)
    assert info.value.rcvd is not None
    assert info.value.rcvd.code == code, info.value.rcvd
    assert words in info.value.rcvd.reason, info.value.rcvd.reason


def test_malformed_and_unauthorised_ingest_changes_nothing(db_url: str, server_factory: Any) -> None:
    tokens = asyncio.run(make_tokens(db_url))
    srv = server_factory(db_url)

    async def go() -> None:
        ws = await raw(srv.url, "pbc_not-a-token")
        await expect_close(ws, 4401, "unauthorized")
        ws = await raw(srv.url, tokens["viewer"])  # a viewer token cannot ingest
        await expect_close(ws, 4401, "unauthorized")

        async def hello(ws: Any) -> dict[str, Any]:
            await ws.send(json.dumps({"type": "hello", "stream": "s1", "version": "t"}))
            return json.loads(await ws.recv())

        ws = await raw(srv.url, tokens["collector"])
        await ws.send("{not json")
        await expect_close(ws, 1007, "invalid message")
        ws = await raw(srv.url, tokens["collector"])
        assert (await hello(ws))["snapshot"] is True
        bad = pane_json("%1", "working")
        bad["state"] = "sleeping"
        await ws.send(
            json.dumps({"type": "snapshot", "seq": 1, "t": 1, "panes": [pane_json("%0", "idle"), bad]})
        )
        await expect_close(ws, 1007, "panes.1.state")
        ws = await raw(srv.url, tokens["collector"])
        await hello(ws)
        huge = pane_json("%1", "working", msg="x" * 5000)
        await ws.send(json.dumps({"type": "snapshot", "seq": 1, "t": 1, "panes": [huge]}))
        await expect_close(ws, 1007, "msg")
        ws = await raw(srv.url, tokens["collector"])
        await hello(ws)
        await ws.send(
            json.dumps(
                {
                    "type": "delta",
                    "seq": 1,
                    "ops": [{"op": "pane", "update": pane_json("%1", "idle")}],
                    "pad": "z" * (2 << 20),
                }
            )
        )
        await expect_close(ws, 1009, "")
        ws = await raw(srv.url, tokens["collector"])
        await ws.send(
            json.dumps(
                {"type": "delta", "seq": 1, "ops": [{"op": "pane", "update": pane_json("%1", "idle")}]}
            )
        )
        await expect_close(ws, 1008, "hello")
        assert await panes(srv.url, tokens["viewer"]) == []

    asyncio.run(go())


def test_acks_duplicates_and_gaps(db_url: str, server_factory: Any) -> None:
    tokens = asyncio.run(make_tokens(db_url))
    srv = server_factory(db_url)

    async def go() -> None:
        ws = await raw(srv.url, tokens["collector"])
        await ws.send(json.dumps({"type": "hello", "stream": "s1"}))
        welcome = json.loads(await ws.recv())
        assert welcome["type"] == "welcome" and welcome["acked"] is None and welcome["snapshot"] is True
        # Deltas before the asked-for snapshot are not applied.
        await ws.send(
            json.dumps(
                {"type": "delta", "seq": 1, "ops": [{"op": "pane", "update": pane_json("%9", "idle")}]}
            )
        )
        await ws.send(
            json.dumps(
                {
                    "type": "snapshot",
                    "seq": 2,
                    "t": 1,
                    "hosts": {"h": {"reachable": True}},
                    "panes": [pane_json("%1", "working", "one")],
                }
            )
        )
        assert json.loads(await ws.recv()) == {"type": "ack", "seq": 2}
        await ws.send(
            json.dumps(
                {"type": "delta", "seq": 3, "ops": [{"op": "pane", "update": pane_json("%1", "done", "two")}]}
            )
        )
        assert json.loads(await ws.recv()) == {"type": "ack", "seq": 3}
        # A resend of seq 3 with other content is a duplicate: acked again, not applied.
        await ws.send(
            json.dumps(
                {
                    "type": "delta",
                    "seq": 3,
                    "ops": [{"op": "pane", "update": pane_json("%1", "error", "dup")}],
                }
            )
        )
        assert json.loads(await ws.recv()) == {"type": "ack", "seq": 3}
        got = by_pane(await panes(srv.url, tokens["viewer"]))
        assert set(got) == {"%1"} and (got["%1"]["state"], got["%1"]["msg"]) == ("done", "two")
        # A gap: the server asks for a snapshot and ignores deltas until it has one.
        await ws.send(
            json.dumps(
                {"type": "delta", "seq": 7, "ops": [{"op": "pane", "update": pane_json("%1", "idle")}]}
            )
        )
        msg = json.loads(await ws.recv())
        assert msg["type"] == "resync" and "expected seq 4" in msg["reason"]
        await ws.send(
            json.dumps(
                {
                    "type": "snapshot",
                    "seq": 8,
                    "t": 2,
                    "hosts": {"h": {"reachable": True}},
                    "panes": [pane_json("%2", "blocked")],
                }
            )
        )
        assert json.loads(await ws.recv()) == {"type": "ack", "seq": 8}
        got = by_pane(await panes(srv.url, tokens["viewer"]))
        assert set(got) == {"%2"}  # the snapshot is the collector's whole view: %1 is gone
        await ws.close()
        # Same stream again: the server remembers what it has (persisted with the data).
        ws = await raw(srv.url, tokens["collector"])
        await ws.send(json.dumps({"type": "hello", "stream": "s1"}))
        welcome = json.loads(await ws.recv())
        assert welcome["acked"] == 8 and welcome["snapshot"] is False
        await ws.close()

    asyncio.run(go())


def test_restart_loses_nothing_and_stream_resumes(db_url: str, server_factory: Any) -> None:
    tokens = asyncio.run(make_tokens(db_url))
    srv = server_factory(db_url)

    async def go() -> None:
        up = UplinkSink(srv.url, tokens["collector"], backoff=(0.05, 0.3))
        await up.start()
        try:
            for i in range(20):
                await up.pane_changed(pane_update("h", f"%{i}", "working", msg=f"v{i}"))
            await wait_until(lambda: up.connected.is_set() and up.buffer.idle, what="acks")
            async with (
                httpx.AsyncClient() as c,
                c.stream(
                    "GET",
                    srv.url + "/api/stream",
                    headers=bearer(tokens["viewer"]),
                    timeout=httpx.Timeout(30),
                ) as r,
            ):
                sse = SSE(r)
                snap = await sse.next()
                assert snap["event"] == "snapshot" and len(snap["data"]["panes"]) == 20
                last_id = snap["id"]
            # Kill without warning: what was acknowledged must be in the database.
            srv.stop(signal.SIGKILL)
            for i in range(10):
                await up.pane_changed(pane_update("h", f"%{i}", "blocked", msg=f"while down {i}"))
            await up.pane_gone(PaneKey("h", "default", "%19"), time.time())
            await wait_until(lambda: not up.connected.is_set(), what="uplink to notice")
            assert up.buffered >= 11
            srv.start()
            await wait_until(lambda: up.connected.is_set() and up.buffer.idle, 20, "resend")
            got = by_pane(await panes(srv.url, tokens["viewer"]))
            assert len(got) == 19 and "%19" not in got
            assert all(got[f"%{i}"]["state"] == "blocked" for i in range(10))
            assert all(got[f"%{i}"]["msg"] == f"v{i}" for i in range(10, 19))
            async with (
                httpx.AsyncClient() as c,
                c.stream(
                    "GET",
                    srv.url + "/api/stream",
                    headers={**bearer(tokens["viewer"]), "Last-Event-ID": last_id},
                    timeout=httpx.Timeout(30),
                ) as r,
            ):
                sse = SSE(r)
                ev = await sse.next()
                assert ev["event"] == "change" and ev["data"]["resumed"] is True
                assert {p["pane"] for p in ev["data"]["panes"]} == {f"%{i}" for i in range(10)}
                assert len(ev["data"]["gone"]) == 1
                assert int(ev["id"]) > int(last_id)
        finally:
            await up.close()

    asyncio.run(go())


def test_seen_goes_back_to_the_collector_and_unreachable_after_grace(
    db_url: str, server_factory: Any
) -> None:
    password = "correct horse battery"
    tokens = asyncio.run(make_tokens(db_url, viewer_password=password))
    srv = server_factory(db_url, config="[server]\ngrace_period = 0.5\n")

    async def go() -> None:
        seen = SeenRecorder()
        up = UplinkSink(srv.url, tokens["collector"])
        await up.start(commands=seen)
        try:
            await up.pane_changed(pane_update("h", "%1", "done", msg="finished"))
            await wait_until(lambda: up.connected.is_set() and up.buffer.idle, what="ack")
            pid = by_pane(await panes(srv.url, tokens["viewer"]))["%1"]["id"]
            async with httpx.AsyncClient(base_url=srv.url) as c:
                r = await c.post("/api/login", json={"name": "ana", "password": password})
                csrf = r.json()["csrf"]
                r = await c.post(f"/api/panes/{pid}/seen", headers={"X-CSRF-Token": csrf})
                assert r.status_code == 200 and r.json()["pane"]["state"] == "idle"
            await wait_until(lambda: seen.seen, what="seen forwarded")
            assert seen.seen[0][0] == PaneKey("h", "default", "%1")
        finally:
            await up.close()
        got = await wait_until(lambda: _unreachable(srv.url, tokens["viewer"]), 10, "host marked unreachable")
        assert got["state"] == "idle" and got["stale"] is True and got["last_seen"] > 0
        # The collector comes back: the host is reachable again.
        up = UplinkSink(srv.url, tokens["collector"])
        await up.start()
        try:
            await up.pane_changed(pane_update("h", "%1", "idle"))
            await wait_until(lambda: _reachable(srv.url, tokens["viewer"]), 10, "host reachable again")
        finally:
            await up.close()

    asyncio.run(go())


async def _reachable(url: str, token: str) -> bool:
    return by_pane(await panes(url, token))["%1"]["reachable"]


async def _unreachable(url: str, token: str) -> dict[str, Any] | None:
    p = by_pane(await panes(url, token))["%1"]
    return p if not p["reachable"] else None
