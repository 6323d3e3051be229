"""The read API over the pane mirror and its history.

    GET /api/panes                 every live pane
    GET /api/hosts                 every host, its reachability and link health
    GET /api/panes/{id}            one pane, and what decided its state (`why`)
    GET /api/panes/{id}/events     a pane's state history, newest first (paged by `before`)

Any viewer (cookie or viewer token) may read. Panes and hosts come from the writer's
committed mirror (`Core`); the history from the database.
"""

from __future__ import annotations

from typing import Annotated

import msgspec
from fastapi import APIRouter, HTTPException, Query, Response
from paneboard_protocol.views import PaneDetail, PaneView

from ..services import Svc
from ..store import schema as s
from .access import Viewer
from .errors import ID_MAX, READ, responses
from .typed import answer, ok
from .views import HistoryEvent, HostView, PaneEvents


def make_router() -> APIRouter:
    r = APIRouter()

    @r.get(
        "/api/panes",
        summary="Every live pane",
        responses={**ok(list[PaneView], "Every live pane, by id"), **responses(*READ)},
    )
    async def panes(svc: Svc, _: Viewer) -> Response:
        return answer(svc.core.live_views())

    @r.get(
        "/api/hosts",
        summary="Every host: reachability and the link's health",
        responses={**ok(list[HostView], "Every host, by name"), **responses(*READ)},
    )
    async def hosts(svc: Svc, _: Viewer) -> Response:
        core = svc.core
        return answer([
            HostView(h.name, core.collector_names.get(h.collector_id), h.reachable, h.error, h.last_seen,
                     h.unreachable_since, h.rtt, h.reconnects, h.contact)
            for h in sorted(core.hosts.values(), key=lambda h: (h.name, h.id))
        ])  # fmt: skip

    @r.get(
        "/api/panes/{pane_id}",
        summary="One pane",
        responses={**ok(PaneDetail, "The pane, and what decided its state"), **responses(*READ, 404)},
    )
    async def pane(svc: Svc, pane_id: int, _: Viewer) -> Response:
        core = svc.core
        p = core.panes.get(pane_id)
        if p is None or p.gone_at is not None:
            raise HTTPException(404, "no such pane")
        # `why` only here, for the pane's page: the board's list and stream go without it
        return answer(core.detail(p))

    @r.get(
        "/api/panes/{pane_id}/events",
        summary="A pane's state history, newest first",
        responses={**ok(PaneEvents, "A page of its history"), **responses(*READ, 404)},
    )
    async def events(
        svc: Svc,
        pane_id: int,
        _: Viewer,
        limit: Annotated[int, Query(ge=1, le=1000)] = 200,
        before: Annotated[int | None, Query(ge=1, le=ID_MAX)] = None,
    ) -> Response:
        core = svc.core
        if pane_id not in core.panes:
            raise HTTPException(404, "no such pane")
        q = s.pane_page(s.history, pane_id, limit, before)
        async with core.engine.connect() as conn:
            rows = (await conn.execute(q)).all()
        # (Row.t is SQLAlchemy's tuple accessor, so columns are read through the mapping.)
        return answer(PaneEvents(pane_id, [HistoryEvent(**{k: r._mapping[k] for k in _EVENT}) for r in rows]))

    return r


_EVENT = tuple(f.name for f in msgspec.structs.fields(HistoryEvent))
