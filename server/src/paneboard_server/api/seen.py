"""`POST /api/panes/{id}/seen`: the user has looked, so a done pane becomes idle.

The change goes through the writer (`Seen`), then to the pane's collector (`pwire.seen`),
so the program's own tracker forgets the done too. That collector may be connected to
another process sharing the database: then the message goes by NOTIFY (`Fanout`).
"""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, HTTPException, Response
from paneboard_protocol import wire as pwire
from paneboard_protocol.pane import PaneKey

from ..panes import Seen
from ..services import Services, Svc
from .access import Writer
from .errors import WRITE, responses
from .typed import answer, ok
from .views import SeenAnswer

STORE_WAIT = 10.0  # seconds the request waits for the writer to commit the change


def make_router() -> APIRouter:
    r = APIRouter()

    @r.post(
        "/api/panes/{pane_id}/seen",
        summary="The user has looked: done becomes idle",
        responses={**ok(SeenAnswer, "The pane, and whether it changed"), **responses(*WRITE, 404, 503)},
    )
    async def seen(svc: Svc, pane_id: int, _: Writer) -> Response:
        core = svc.core
        p = core.panes.get(pane_id)
        if p is None or p.gone_at is not None:
            raise HTTPException(404, "no such pane")
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[None] = loop.create_future()
        op = Seen(
            pane_id,
            on_commit=lambda: None if fut.done() else fut.set_result(None),
            on_fail=lambda e: None if fut.done() else fut.set_exception(e),
        )
        core.submit(op)
        try:
            await asyncio.wait_for(fut, STORE_WAIT)
        except Exception as exc:
            raise HTTPException(503, "could not store the change") from exc
        await forward_seen(svc, pane_id)
        return answer(SeenAnswer(core.view(core.panes[pane_id]), bool(op.result.get("changed"))))

    return r


async def forward_seen(svc: Services, pane_id: int) -> None:
    """Tell the pane's collector its user has looked, wherever that collector is connected."""
    core = svc.core
    target = core.collector_of(pane_id)
    if target is None:
        return
    cid, key = target
    send = core.seen_routes.get(cid)
    msg = pwire.seen(PaneKey(key.host, key.tmux, key.pane), core.clock())
    if send is not None:
        send(msg)
        return
    if svc.fanout is not None:
        await svc.fanout.notify_seen(pane_id)
