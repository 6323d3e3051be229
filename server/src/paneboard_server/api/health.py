"""`GET /healthz`: is this server well, for monitors and load balancers (no login).

Unhealthy (503, with `since` where known) when the database does not answer, when the
writer's last batch failed (reads work but nothing is stored: a full disk, ...), or
when one batch has run longer than `limits.writer_stall` (a lock held elsewhere). A
database failure is said as "database error": anyone may ask, so the database's own
text, which names files, tables and statements, stays in the log.
"""

from __future__ import annotations

import logging
import time

from fastapi import APIRouter
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field
from sqlalchemy import select

from .. import __version__
from ..services import Svc
from ..store import describe
from .errors import ErrorBody

log = logging.getLogger("paneboard.server")
#: What /healthz says of a database failure: it needs no login, so not the failure's text.
DB_ERROR = "database error"


class Health(BaseModel):
    ok: bool
    version: str
    db: str
    panes: int
    collectors: int


class Unhealthy(ErrorBody):
    ok: bool = False
    error: str = Field(description="the same as `detail` (older monitors read it)")
    since: float | None = Field(default=None, description="when the writer started failing or stalled")


def make_router() -> APIRouter:
    r = APIRouter()

    @r.get(
        "/healthz",
        summary="Liveness: the database answers",
        responses={200: {"model": Health}, 503: {"model": Unhealthy, "description": "Not healthy"}},
    )
    async def healthz(svc: Svc) -> JSONResponse:
        core = svc.core
        started = core.batch_started
        limit = svc.cfg.limits.writer_stall
        if started is not None and (ran := time.monotonic() - started) > limit:
            # Reads work but the writer waits (a lock held elsewhere): nothing commits.
            why = f"writer: one batch has run for {ran:.0f} s (limits.writer_stall {limit:g} s)"
            return JSONResponse({"ok": False, "detail": why, "error": why, "since": core.clock() - ran}, 503)
        try:
            async with core.engine.connect() as conn:
                await conn.execute(select(1))
        except Exception as exc:
            log.error("/healthz: the database does not answer: %s", describe(exc))
            return JSONResponse({"ok": False, "detail": DB_ERROR, "error": DB_ERROR}, 503)
        if core.writer_error is not None:  # reads work but writes fail (disk full, ...)
            # The database's own words (paths, table names, the statement) are the
            # operator's, in the log where the writer put them, not anyone's who asks.
            since, _ = core.writer_error
            why = f"writer: {DB_ERROR}"
            return JSONResponse({"ok": False, "detail": why, "error": why, "since": since}, 503)
        return JSONResponse(
            {
                "ok": True,
                "version": __version__,
                "db": "sqlite" if not core.is_pg else "postgresql",
                "panes": sum(1 for p in core.panes.values() if p.gone_at is None),
                "collectors": len(svc.registry.connections),
            }
        )

    return r
