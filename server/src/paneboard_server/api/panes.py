"""The read API over the pane mirror and its history.

    GET /api/panes                 every live pane
    GET /api/hosts                 every host, its reachability and link health
    GET /api/panes/{id}            one pane
    GET /api/panes/{id}/events     a pane's state history, newest first (paged by `before`)

Any viewer (cookie or viewer token) may read. Panes and hosts come from the writer's
committed mirror (`Core`); the history from the database.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Query
from paneboard_protocol.pane import HISTORY_FIELDS

from ..services import Svc
from ..store import schema as s
from .access import Viewer
from .errors import ID_MAX, READ, responses


def make_router() -> APIRouter:
    r = APIRouter()

    @r.get("/api/panes", summary="Every live pane", responses=responses(*READ))
    async def panes(svc: Svc, _: Viewer) -> list[dict[str, Any]]:
        return svc.core.live_panes()

    @r.get("/api/hosts", summary="Every host: reachability and the link's health", responses=responses(*READ))
    async def hosts(svc: Svc, _: Viewer) -> list[dict[str, Any]]:
        core = svc.core
        return [
            h.api(core.collector_names.get(h.collector_id))
            for h in sorted(core.hosts.values(), key=lambda h: (h.name, h.id))
        ]

    @r.get("/api/panes/{pane_id}", summary="One pane", responses=responses(*READ, 404))
    async def pane(svc: Svc, pane_id: int, _: Viewer) -> dict[str, Any]:
        core = svc.core
        p = core.panes.get(pane_id)
        if p is None or p.gone_at is not None:
            raise HTTPException(404, "no such pane")
        return core.api(p)

    @r.get(
        "/api/panes/{pane_id}/events",
        summary="A pane's state history, newest first",
        responses=responses(*READ, 404),
    )
    async def events(
        svc: Svc,
        pane_id: int,
        _: Viewer,
        limit: Annotated[int, Query(ge=1, le=1000)] = 200,
        before: Annotated[int | None, Query(ge=1, le=ID_MAX)] = None,
    ) -> dict[str, Any]:
        core = svc.core
        if pane_id not in core.panes:
            raise HTTPException(404, "no such pane")
        q = s.pane_page(s.history, pane_id, limit, before)
        async with core.engine.connect() as conn:
            rows = (await conn.execute(q)).all()
        keys = ("id", "t", *HISTORY_FIELDS, "prev_state", "reason")
        # (Row.t is SQLAlchemy's tuple accessor, so columns are read through the mapping.)
        return {
            "pane_id": pane_id,
            "events": [{k: r._mapping[k] for k in keys} for r in rows],
        }

    return r
