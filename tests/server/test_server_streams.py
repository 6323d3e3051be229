"""Live-stream connections: a client that stops reading is dropped with one log line,
and new connections share one encoded snapshot (real server / real app)."""

from __future__ import annotations

import asyncio
import json
import shutil
import socket
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
import websockets
from pbserver import SSE, make_tokens, pane_update, wait_until


@pytest.fixture
def sqlite_db(sqlite_template: Path, tmp_path: Path) -> str:
    path = tmp_path / "paneboard.db"
    shutil.copy(sqlite_template, path)
    return f"sqlite:///{path}"


async def _collector(url: str, token: str) -> Any:
    ws = await websockets.connect(
        url.replace("http", "ws") + "/api/ingest",
        additional_headers={"Authorization": f"Bearer {token}"},
        max_size=1 << 24,
    )
    await ws.send(json.dumps({"type": "hello", "stream": "s1", "version": "t"}))
    assert json.loads(await ws.recv())["type"] == "welcome"
    return ws


async def _snapshot(ws: Any, seq: int, panes: int, fill: str) -> None:
    body = [pane_update("h", f"%{i}", "working", msg=fill * 4000).wire_json() for i in range(panes)]
    await ws.send(json.dumps({"type": "snapshot", "seq": seq, "t": time.time(), "panes": body}))
    while True:
        m = json.loads(await asyncio.wait_for(ws.recv(), 30))
        if m.get("type") == "ack" and m["seq"] >= seq:
            return


def test_a_client_that_stops_reading_is_dropped_with_one_log_line(
    sqlite_db: str, server_factory: Any
) -> None:
    config = "[limits]\nsse_send_timeout = 1\nsse_queue = 100000\nmax_message_bytes = 8388608\n"

    async def go() -> None:
        tokens = await make_tokens(sqlite_db)
        sp = server_factory(sqlite_db, config=config)
        stalled = socket.socket()
        stalled.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        stalled.connect(("127.0.0.1", sp.port))
        auth = f"Authorization: Bearer {tokens['viewer']}"
        stalled.sendall(f"GET /api/stream HTTP/1.1\r\nHost: x\r\n{auth}\r\n\r\n".encode())
        try:
            async with httpx.AsyncClient(base_url=sp.url) as c:
                await wait_until(
                    lambda: (
                        "paneboard_sse_clients 1"
                        in httpx.get(
                            sp.url + "/metrics", headers={"Authorization": f"Bearer {tokens['viewer']}"}
                        ).text
                    ),
                    what="the stalled stream to be subscribed",
                )
                ws = await _collector(sp.url, tokens["collector"])
                for seq, fill in enumerate("abcdefgh", start=1):  # ~1 MB of change frames each
                    await _snapshot(ws, seq, 250, fill)
                await ws.close()
                await wait_until(lambda: "dropped: not reading" in sp.log.read_text(), 30, "the drop")
                assert (await c.get("/healthz")).status_code == 200
        finally:
            stalled.close()
        log = sp.log.read_text()
        assert log.count("dropped: not reading") == 1, log[-3000:]
        assert "Traceback" not in log and "SendTimeoutError" not in log, log[-3000:]

    asyncio.run(go())


def test_new_streams_share_one_encoded_snapshot_and_catch_up(sqlite_db: str, server_factory: Any) -> None:
    async def go() -> None:
        tokens = await make_tokens(sqlite_db)
        sp = server_factory(sqlite_db)
        h = {"Authorization": f"Bearer {tokens['viewer']}"}
        ws = await _collector(sp.url, tokens["collector"])
        await _snapshot(ws, 1, 3, "a")
        async with httpx.AsyncClient(base_url=sp.url, timeout=httpx.Timeout(30, read=60)) as c:
            async with c.stream("GET", "/api/stream", headers=h) as r1:
                first = await SSE(r1).next()
                assert first["event"] == "snapshot" and len(first["data"]["panes"]) == 3
            # The board moves on within the cache's refresh: the next stream gets the
            # cached snapshot plus one change that brings it to the current rev.
            await _snapshot(ws, 2, 4, "b")
            async with c.stream("GET", "/api/stream", headers=h) as r2:
                sse = SSE(r2)
                snap = await sse.next()
                assert snap["event"] == "snapshot"
                state = {p["id"]: p for p in snap["data"]["panes"]}
                rev = snap["data"]["rev"]
                if len(state) != 4 or any(p["msg"][0] != "b" for p in state.values()):
                    change = await sse.next()
                    assert change["event"] == "change" and change["data"]["rev"] > rev
                    state.update({p["id"]: p for p in change["data"]["panes"]})
                    for g in change["data"]["gone"]:
                        state.pop(g, None)
                api = (await c.get("/api/panes", headers=h)).json()
                assert {p["id"]: p["msg"] for p in api} == {i: p["msg"] for i, p in state.items()}
        await ws.close()

    asyncio.run(go())
