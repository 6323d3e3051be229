"""Revocation bites at once: `paneboard token revoke` and `paneboard user remove`, run
as a user runs them (another process, writing the database), end the open streams and
collector sockets of that credential while they stay connected, on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import json
from contextlib import AsyncExitStack
from typing import Any

import httpx
import pytest
import websockets
from pbserver import SSE, make_tokens, paneboard

PASSWORD = "correct horse battery"


async def _stream(stack: AsyncExitStack, client: httpx.AsyncClient, headers: dict[str, str]) -> SSE:
    r = await stack.enter_async_context(
        client.stream("GET", "/api/stream", headers=headers, timeout=httpx.Timeout(30, read=60))
    )
    assert r.status_code == 200
    sse = SSE(r)
    assert (await sse.next())["event"] == "snapshot"
    return sse


async def _ends(sse: SSE) -> str:
    """Read until the stream ends; the last event's name (or "eof")."""
    last = "eof"
    try:
        while True:
            ev = await sse.next(timeout=15)
            last = ev.get("event", "")
    except EOFError:
        return last


def test_revoking_ends_open_streams_and_collectors(db_url: str, server_factory: Any) -> None:
    async def go() -> None:
        tokens = await make_tokens(db_url, viewer_password=PASSWORD)
        sp = server_factory(db_url, config="[limits]\nsse_ping = 600\n")
        async with AsyncExitStack() as stack:
            bearer = await stack.enter_async_context(httpx.AsyncClient(base_url=sp.url))
            by_token = await _stream(stack, bearer, {"Authorization": f"Bearer {tokens['viewer']}"})

            wall = await stack.enter_async_context(httpx.AsyncClient(base_url=sp.url))
            assert (await wall.get("/", params={"token": tokens["viewer"]})).status_code == 303
            wall_session = await _stream(stack, wall, {})

            ana = await stack.enter_async_context(httpx.AsyncClient(base_url=sp.url))
            r = await ana.post("/api/login", json={"name": "ana", "password": PASSWORD})
            assert r.status_code == 200
            ana_session = await _stream(stack, ana, {})

            ws = await websockets.connect(
                sp.url.replace("http", "ws") + "/api/ingest",
                additional_headers={"Authorization": f"Bearer {tokens['collector']}"},
            )
            await ws.send(json.dumps({"type": "hello", "stream": "s1", "version": "t"}))
            assert json.loads(await ws.recv())["type"] == "welcome"

            await asyncio.to_thread(paneboard, "token", "revoke", "wall", "--viewer", db=db_url)
            assert await asyncio.wait_for(_ends(by_token), 15) == "revoked"
            assert await asyncio.wait_for(_ends(wall_session), 15) == "revoked"
            metrics = (await ana.get("/metrics")).text  # another credential: its stream stays
            assert "paneboard_sse_clients 1" in metrics, metrics

            await asyncio.to_thread(paneboard, "token", "revoke", "col", "--collector", db=db_url)
            with pytest.raises(websockets.ConnectionClosed) as closed:
                while True:
                    await asyncio.wait_for(ws.recv(), 15)
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 4401

            await asyncio.to_thread(paneboard, "user", "remove", "ana", db=db_url)
            assert await asyncio.wait_for(_ends(ana_session), 15) == "revoked"
            assert (await ana.get("/api/me")).status_code == 401  # the session itself is gone

    asyncio.run(go())


def test_a_name_revoked_and_made_again_at_once_still_ends_the_old_tokens_connections(
    db_url: str, server_factory: Any
) -> None:
    """Revoke and re-create one name between two revocation checks: the row (and its id)
    is reused, but the connections made with the old token end all the same."""
    from paneboard_server.auth import accounts
    from paneboard_server.store.database import create_engine, resolve_url

    async def go() -> None:
        tokens = await make_tokens(db_url)
        sp = server_factory(db_url, config="[limits]\nsse_ping = 600\nrevocation_check = 2\n")
        engine = create_engine(resolve_url(db_url))
        async with AsyncExitStack() as stack:
            stack.push_async_callback(engine.dispose)
            bearer = await stack.enter_async_context(httpx.AsyncClient(base_url=sp.url))
            by_token = await _stream(stack, bearer, {"Authorization": f"Bearer {tokens['viewer']}"})
            ws = await websockets.connect(
                sp.url.replace("http", "ws") + "/api/ingest",
                additional_headers={"Authorization": f"Bearer {tokens['collector']}"},
            )
            await ws.send(json.dumps({"type": "hello", "stream": "s1", "version": "t"}))
            assert json.loads(await ws.recv())["type"] == "welcome"

            for name, kind in (("wall", "viewer"), ("col", "collector")):  # a few ms, not 2 s
                assert await accounts.revoke_token(engine, name, kind) == 1
                await accounts.create_token(engine, name, kind)

            assert await asyncio.wait_for(_ends(by_token), 15) == "revoked"
            with pytest.raises(websockets.ConnectionClosed) as closed:
                while True:
                    await asyncio.wait_for(ws.recv(), 15)
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 4401

    asyncio.run(go())
