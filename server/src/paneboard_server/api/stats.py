"""`GET /api/stats` (every figure of the stats page) and `GET /api/blocks` (the ledger's
intervals, JSON or CSV). Both read-only: any viewer (cookie or viewer token) may ask.

Query parameters, shared: `from`/`to` (seconds since the epoch; default the last 7
days; a range longer than 366 days is cut to the 366 days before `to`, and one whose
`to` is not after `from` is empty: the answer's own `from` and `to` say which range it
covers), `state` (`blocked`, the default, or `done`), `host`,
`agent`, `kind`. `/api/stats` adds `tz` (minutes east of UTC, for day boundaries) and
`by` (`agent` or `host`: what the daily stacks are); `/api/blocks` adds `limit` and
`format=csv`.
"""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

import msgspec
from fastapi import APIRouter, Depends, Query, Response
from paneboard_protocol.pane import KIND_MAX, NAME_MAX
from sqlalchemy import select

from ..auth import Principal
from ..ledger import AnswerCache, Waiting, aggregate, compute, options, overlapping
from ..ledger import Query as StatsQuery
from ..services import Services, Svc
from ..store import schema as s
from .access import require_viewer
from .errors import READ, responses
from .typed import answer, ok, schema
from .views import Block, Blocks, Stats

Reader = Annotated[Principal, Depends(require_viewer)]
DEFAULT_SPAN = 7 * 86400
MAX_SPAN = 366 * 86400
BLOCKS_MAX = 10_000


def _query(
    svc: Services,
    start: float | None,
    end: float | None,
    state: Waiting,
    host: str | None,
    agent: str | None,
    kind: str | None,
    tz: int = 0,
    by: str = "agent",
) -> StatsQuery:
    now = svc.core.clock()
    end = now if end is None else end
    start = end - DEFAULT_SPAN if start is None else start
    # Every request the schema allows is answered (the OpenAPI contract): no 422 for a
    # relation between two parameters that the schema cannot state.
    if end < start:
        start = end  # an empty range: nothing in it
    if end - start > MAX_SPAN:
        start = end - MAX_SPAN
    return StatsQuery(start, end, state, host or None, agent or None, kind or None, tz, by)


Start = Annotated[float | None, Query(alias="from", ge=0, le=1e11)]
End = Annotated[float | None, Query(alias="to", ge=0, le=1e11)]
State = Annotated[Waiting, Query()]
Host = Annotated[str | None, Query(max_length=NAME_MAX)]
Agent = Annotated[str | None, Query(max_length=NAME_MAX)]
Kind = Annotated[str | None, Query(max_length=KIND_MAX)]


def make_router() -> APIRouter:
    r = APIRouter(tags=["stats"], responses=responses(*READ))
    answers = AnswerCache()

    @r.get("/api/stats", responses=ok(Stats, "Every figure of the stats page"))
    async def stats(
        svc: Svc,
        _: Reader,
        start: Start = None,
        end: End = None,
        state: State = "blocked",
        host: Host = None,
        agent: Agent = None,
        kind: Kind = None,
        tz: Annotated[int, Query(ge=-16 * 60, le=16 * 60)] = 0,
        by: Annotated[Literal["agent", "host"], Query()] = "agent",
    ) -> Response:
        q = _query(svc, start, end, state, host, agent, kind, tz, by)
        core = svc.core

        async def make() -> dict[str, Any]:
            # The database adds the range up (ledger/aggregate.py): what reaches the
            # event loop is the figures, never the range's rows.
            now = core.clock()
            async with core.engine.connect() as conn:
                if q.end > q.start:
                    out = await aggregate.aggregate(conn, q, now, core.is_pg)
                else:
                    out = compute([], q, now)
            out["options"] = await options(core.engine, q)
            return out

        return answer(await answers.get(q, make))

    @r.get(
        "/api/blocks",
        response_model=None,
        responses={
            200: {
                "description": "The intervals: JSON, or CSV with `format=csv`",
                "content": {
                    "application/json": {"schema": schema(Blocks)},
                    "text/csv": {"schema": {"type": "string"}},
                },
            }
        },
    )
    async def blocks(
        svc: Svc,
        _: Reader,
        start: Start = None,
        end: End = None,
        state: State = "blocked",
        host: Host = None,
        agent: Agent = None,
        kind: Kind = None,
        limit: Annotated[int, Query(ge=1, le=BLOCKS_MAX)] = 1000,
        format: Annotated[Literal["json", "csv"], Query()] = "json",
    ) -> Response:
        q = _query(svc, start, end, state, host, agent, kind)
        core = svc.core
        now = core.clock()
        both = overlapping(q, select(s.waits)).subquery()
        stmt = select(both).order_by(both.c.start_t.desc(), both.c.id.desc()).limit(limit)
        rows: list[Block] = []
        if q.end > q.start:
            async with core.engine.connect() as conn:
                rows = [_block(r, now) for r in (await conn.execute(stmt)).all()]
        if format == "csv":
            return Response(
                to_csv(rows),
                media_type="text/csv; charset=utf-8",
                headers={"Content-Disposition": 'attachment; filename="paneboard-blocks.csv"'},
            )
        return answer(Blocks(start=q.start, end=q.end, now=now, blocks=rows))

    return r


FIELDS = tuple(f.name for f in msgspec.structs.fields(Block))
_STORED = FIELDS[: FIELDS.index("waited")] + FIELDS[FIELDS.index("waited") + 1 :]


def _block(r: Any, now: float) -> Block:
    m = r._mapping
    end = m["end_t"] if m["end_t"] is not None else now
    return Block(**{k: m[k] for k in _STORED}, waited=max(0.0, end - m["start_t"]))


def _cell(v: Any) -> Any:
    """A spreadsheet must not run what an agent wrote: text that would start a formula
    is quoted (OWASP CSV injection)."""
    if isinstance(v, str) and v[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + v
    return "" if v is None else v


def _iso(t: float | None) -> str:
    return "" if t is None else datetime.fromtimestamp(t, UTC).isoformat(timespec="seconds")


def to_csv(rows: list[Block]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow([*FIELDS, "start", "end"])
    for b in rows:
        w.writerow([*(_cell(v) for v in msgspec.structs.astuple(b)), _iso(b.start_t), _iso(b.end_t)])
    return buf.getvalue()
