"""`WS /api/ingest`: the route a collector's uplink connects to.

Everything about the socket (its token, hello, the messages and their acks) is
`uplink.handle`'s; the route only hands it the core and this process's registry of
connected collectors.
"""

from __future__ import annotations

from fastapi import APIRouter, WebSocket

from ..ingest import handle
from ..services import Svc


def make_router() -> APIRouter:
    r = APIRouter()

    @r.websocket("/api/ingest")
    async def ingest(ws: WebSocket, svc: Svc) -> None:
        await handle(ws, svc.core, svc.registry)

    return r
