"""A page's screen requests change the collector's `watch` only when what is watched
changes: pages (or one client) alternating `?scrollback=` share one watch, captured
with the largest scroll-back asked for lately, and each gets the lines it asked for.
Against a real `paneboard serve` with a collector speaking the wire on its socket."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
from paneboard_protocol import wire as pwire
from paneboard_protocol.pane import PaneKey
from pbserver import bearer, connect_collector, make_tokens, pane_update, wait_until

HEIGHT = 3


def screen_for(key: dict[str, str], scrollback: int) -> str:
    """What a collector captures for `watch(scrollback)`: that much history, then the rows."""
    lines = [f"history {i}" for i in range(scrollback)] + [f"row {i}" for i in range(HEIGHT)]
    k = PaneKey(key["host"], key["tmux"], key["pane"])
    return pwire.encode(pwire.screen(k, 1.7e9, lines, (80, HEIGHT), (0, 0), "f" * 64))


def test_alternating_scrollback_sends_watch_only_when_the_watch_changes(
    db_url: str, server_factory: Any
) -> None:
    from paneboard_server.auth import accounts
    from paneboard_server.store.database import create_engine, resolve_url

    tokens = asyncio.run(make_tokens(db_url))

    async def screens_token() -> str:
        engine = create_engine(resolve_url(db_url))
        try:
            return await accounts.create_token(engine, "wall2", "viewer", screens=True)
        finally:
            await engine.dispose()

    viewer = asyncio.run(screens_token())
    srv = server_factory(db_url)

    async def go() -> None:
        ws = await connect_collector(srv.url, tokens["collector"], "s")
        update = pane_update("h", "%1", "blocked").wire_json()
        await ws.send(json.dumps({"type": "snapshot", "seq": 1, "t": 1.7e9, "panes": [update]}))
        assert json.loads(await ws.recv()) == {"type": "ack", "seq": 1}
        watches: list[int] = []

        async def collector() -> None:
            async for raw in ws:
                m = json.loads(raw)
                if m["type"] == "watch":
                    watches.append(m["scrollback"])
                    await ws.send(screen_for(m["key"], m["scrollback"]))

        task = asyncio.create_task(collector())
        try:
            async with httpx.AsyncClient(headers=bearer(viewer), timeout=30) as c:
                panes = (await c.get(srv.url + "/api/panes")).json()
                url = f"{srv.url}/api/panes/{panes[0]['id']}/screen"
                first = (await c.get(url)).json()  # waits for the first capture
                assert first["lines"] == [f"row {i}" for i in range(HEIGHT)]
                for i in range(20):
                    asked = 200 if i % 2 == 0 else 0
                    got = (await c.get(url, params={"scrollback": asked})).json()
                    assert got["online"], got

                # once the capture with history has arrived, each page gets what it asked for
                async def full() -> bool:
                    got = (await c.get(url, params={"scrollback": 200})).json()
                    return len(got["lines"]) == HEIGHT + 200

                await wait_until(full, 10, "the capture with history")
                for asked in (200, 0, 150):
                    got = (await c.get(url, params={"scrollback": asked})).json()
                    assert len(got["lines"]) == HEIGHT + asked, (asked, len(got["lines"]))
                    assert got["lines"][-HEIGHT:] == [f"row {i}" for i in range(HEIGHT)]
            # a watch for the pane, and one when a page first asked for history: not one a request
            assert watches == [0, 200], watches
        finally:
            task.cancel()
            await ws.close()

    asyncio.run(go())
