"""`GET /api/offers`: what a blocked card offers on the board, by the push's rule, and
why not otherwise. Against a real `paneboard serve` with collectors speaking the wire
on its socket (one whose hello says its host types answers, one that types nothing)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
from paneboard_protocol import wire as pwire
from paneboard_protocol.pane import PaneKey
from paneboard_protocol.wire import AnswerChoice
from pbserver import bearer, collector_token, make_tokens, pane_update, wait_until

FP = "a" * 64
CLAUDE = [
    AnswerChoice("yes", "Yes", 1),
    AnswerChoice("always", "Yes, and don't ask again", 2),
    AnswerChoice("no", "No"),
]


def _screen(key: dict[str, str], pane: str) -> str:
    """What the collector shows of each pane: the permission prompt, a prompt no rule
    reads, a screen it may not show, a pane that is no longer blocked."""
    k = PaneKey(key["host"], key["tmux"], key["pane"])
    kw: dict[str, Any] = {"state": "blocked", "input": True}
    if pane == "%1":
        kw.update(answers=CLAUDE, prompt="Do you want to proceed?")
    elif pane == "%3":
        kw = {"error": "screens are switched off for this host"}
    return pwire.encode(
        pwire.screen(k, 1.7e9, ["row"], (80, 1), (0, 0), FP if "error" not in kw else "", **kw)
    )


async def _collector(
    url: str, token: str, stream: str, host: str, panes: dict[str, str | None], typing: bool
) -> Any:
    import websockets

    ws = await websockets.connect(url.replace("http", "ws") + "/api/ingest", additional_headers=bearer(token))
    hello = {
        "type": "hello",
        "protocol": 1,
        "stream": stream,
        "hosts": [host],
        "input": [host] if typing else [],
    }
    await ws.send(json.dumps(hello))
    assert json.loads(await ws.recv())["type"] == "welcome"
    updates = [pane_update(host, p, st).wire_json() for p, st in panes.items()]
    await ws.send(json.dumps({"type": "snapshot", "seq": 1, "t": 1.7e9, "panes": updates}))
    assert json.loads(await ws.recv()) == {"type": "ack", "seq": 1}

    async def answer_watches() -> None:
        async for raw in ws:
            m = json.loads(raw)
            if m["type"] == "watch":
                await ws.send(_screen(m["key"], m["key"]["pane"]))

    return ws, asyncio.create_task(answer_watches())


def test_a_card_offers_the_push_answers_or_says_why_not(db_url: str, server_factory: Any) -> None:
    from paneboard_server.auth import accounts
    from paneboard_server.store.database import create_engine, resolve_url

    tokens = asyncio.run(make_tokens(db_url))
    second = asyncio.run(collector_token(db_url, "c-plain"))

    async def viewer_tokens() -> tuple[str, str]:
        engine = create_engine(resolve_url(db_url))
        try:
            return (
                await accounts.create_token(engine, "wall-screens", "viewer", screens=True),
                await accounts.create_token(engine, "wall-plain", "viewer"),
            )
        finally:
            await engine.dispose()

    screens, plain = asyncio.run(viewer_tokens())
    srv = server_factory(db_url)

    async def go() -> None:
        typing = {"%1": "blocked", "%2": "blocked", "%3": "blocked", "%4": "working"}
        ws, task = await _collector(srv.url, tokens["collector"], "s1", "typing", typing, True)
        ws2, task2 = await _collector(srv.url, second, "s2", "plain", {"%1": "blocked"}, False)
        try:
            async with httpx.AsyncClient(headers=bearer(screens), timeout=30) as c:

                async def all_panes() -> Any:
                    got = (await c.get(srv.url + "/api/panes")).json()
                    return got if len(got) == 5 else None

                panes = await wait_until(all_panes, 10, "both collectors' panes")
                ids = {(p["host"], p["pane"]): p["id"] for p in panes}
                asked = [ids[("typing", p)] for p in ("%1", "%2", "%3", "%4")] + [ids[("plain", "%1")]]
                r = await c.get(srv.url + "/api/offers", params=[("pane", i) for i in asked])
                assert r.status_code == 200, r.text
                got = {o["pane_id"]: o for o in r.json()["offers"]}
                assert r.json()["operator"] is False
                # the push's rule: never "always"; the choice's number in front
                first = got[ids[("typing", "%1")]]
                assert first["why"] is None and first["fingerprint"] == FP
                assert first["answers"] == [{"id": "yes", "label": "1. Yes"}, {"id": "no", "label": "No"}]
                assert first["prompt"] == "Do you want to proceed?"
                assert got[ids[("typing", "%2")]]["why"] == "not-recognised"
                assert got[ids[("typing", "%2")]]["answers"] == []
                assert got[ids[("typing", "%3")]]["why"] == "no-screen"
                assert got[ids[("typing", "%4")]]["why"] == "not-blocked"
                assert got[ids[("plain", "%1")]]["why"] == "disabled"
                assert all(o["fingerprint"] is None for k, o in got.items() if k != ids[("typing", "%1")])
            async with httpx.AsyncClient(headers=bearer(plain), timeout=30) as c:
                r = await c.get(srv.url + "/api/offers", params={"pane": asked[0]})
                assert r.status_code == 403  # the labels are screen contents
        finally:
            task.cancel()
            task2.cancel()
            await ws.close()
            await ws2.close()

    asyncio.run(go())
