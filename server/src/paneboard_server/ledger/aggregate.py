"""The stats page's figures, aggregated by the database.

`stats.compute` reads every interval of the range into Python and adds them up there:
at a year of a busy ledger that is hundreds of thousands of rows fetched and summed on
the server's event loop, which then answers nothing else (`/healthz`, acks and streams
wait with it). Here the database does the adding, and what comes back is bounded by the
figures' size, not the ledger's: a few rows of totals, one row per (stack, local day),
one per time-to-answer group (at most `GROUPS_MAX` each), `stats.TOP` panes and prompts.

The figures are `compute`'s, read the same way (its docstring says how), on SQLite and
PostgreSQL alike:

- per day: each interval's clipped stretch [a, b) is split at local midnights by its
  first and last day (`i_a`, `i_b`): the first gets up to its midnight, the last from
  its midnight, and the whole days between are counted with a difference array (+1 at
  `i_a + 1`, -1 at `i_b`), so a wait over many days is still one row's work;
- time-to-answer: nearest-rank percentiles by window functions (`row_number` against
  the group's `count`), with the integer ranks `(n + 1) / 2` and `(9n + 9) / 10`;
- prompts: grouped by kind and normalised text. SQLite runs `intervals.normalise`
  itself (a function this module registers on each connection it aggregates on, once:
  `_normalise_on`); PostgreSQL
  runs the same regular expressions (`normalise_pg`).

Ties are broken by name, where `compute` kept the order rows came in; a pane's session
and agent are those of its latest wait in the range.
"""

from __future__ import annotations

import sqlite3
import weakref
from collections import defaultdict
from functools import lru_cache
from typing import Any

from paneboard_protocol.pane import TEXT_MAX
from sqlalchemy import (
    Boolean,
    Column,
    Float,
    Integer,
    MetaData,
    Table,
    Text,
    case,
    func,
    insert,
    literal,
    select,
    tuple_,
    union_all,
)
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.schema import CreateTable, DropTable
from sqlalchemy.sql.elements import ColumnElement
from sqlalchemy.sql.functions import FunctionElement

from ..store import schema as s
from ..store import sqlite3_of
from .intervals import NORMAL_MAX, normalise
from .stats import MAX_SERIES, TOP, Query, body, days, overlapping

W = s.waits
_COLS = ("host", "tmux", "pane", "session", "agent", "kind", "msg", "start_t", "end_t", "ended")
DAY = 86400
GROUPS_MAX = 100  # time-to-answer groups listed per dimension (agents, hosts, kinds)
SQLITE_NORMALISE = "pb_normalise"


class _floor(FunctionElement[int]):
    """floor(x) as an integer, for x >= 0 (day indexes from the range's first midnight).
    SQLite's floor() exists only when it was built with its math functions; its CAST
    truncates, which is floor for the non-negative values this is used on."""

    type = Integer()
    inherit_cache = True


@compiles(_floor)
def _floor_default(element: Any, compiler: Any, **kw: Any) -> str:
    return f"CAST(floor({compiler.process(element.clauses, **kw)}) AS INTEGER)"


@compiles(_floor, "sqlite")
def _floor_sqlite(element: Any, compiler: Any, **kw: Any) -> str:
    return f"CAST({compiler.process(element.clauses, **kw)} AS INTEGER)"


_normalise = lru_cache(maxsize=8192)(normalise)


#: The SQLite connections `intervals.normalise` is registered on (a pooled connection
#: serves many aggregates; one gone from the pool is forgotten with it).
_registered: weakref.WeakSet[sqlite3.Connection] = weakref.WeakSet()


async def _normalise_on(conn: AsyncConnection) -> None:
    """Make `intervals.normalise` callable from SQL on `conn`'s SQLite connection. The
    ledger registers its own function (the store below it knows nothing of it), on the
    connection it is about to use, so no connection can miss it."""
    raw = await sqlite3_of(conn)
    if raw is None:
        raise RuntimeError("the stats need an engine made by store.create_engine")
    if raw not in _registered:
        raw.create_function(SQLITE_NORMALISE, 1, _normalise, deterministic=True)
        _registered.add(raw)


# intervals.normalise's expressions in PostgreSQL's regular-expression dialect.
_PG_STEPS = (
    (r"(\"[^\"]*\"|'[^']*'|`[^`]*`)", "…"),
    (r"(~|\.{1,2})?/[\w./-]+", "…"),
    (r"\d+", "#"),
    (r"\s+", " "),
)


def normalise_pg(msg: ColumnElement[Any]) -> ColumnElement[str]:
    text: ColumnElement[Any] = msg
    for pattern, repl in _PG_STEPS:
        text = func.regexp_replace(text, pattern, repl, "g")
    return func.coalesce(func.left(func.lower(func.btrim(text)), NORMAL_MAX), "")


#: The range's waits as the figures read them: a TEMPORARY table of one connection, for
#: the length of one `aggregate`.
RANGE = Table(
    "pb_stats_range",
    MetaData(),
    *(Column(col.name, col.type) for col in W.c if col.name in _COLS),
    *(Column(name, Float) for name in ("a", "b", "waited")),
    *(Column(name, Text) for name in ("stack", "agent_name", "kind_name", "kind_key", "ended_key")),
    Column("began", Boolean),
    Column("ia", Integer),
    Column("ib", Integer),
    prefixes=["TEMPORARY"],
)


def _num(x: float) -> ColumnElement[float]:
    return literal(x, Float())


async def aggregate(conn: AsyncConnection, q: Query, now: float, pg: bool) -> dict[str, Any]:
    """Every figure `compute` gives (but `options`), from the database's sums."""
    if not pg:
        await _normalise_on(conn)
    day_list = days(q)
    ndays = len(day_list)
    day0 = (q.start + q.tz * 60) // DAY * DAY - q.tz * 60  # stats._midnight
    cap = min(q.end, now)
    o = overlapping(q, select(*(W.c[name] for name in _COLS))).subquery("o")
    a = case((o.c.start_t > _num(q.start), o.c.start_t), else_=_num(q.start))
    b = case((o.c.end_t.is_(None) | (o.c.end_t > _num(cap)), _num(cap)), else_=o.c.end_t)
    # The range's waits with every value the figures need, read once into a table of
    # this connection's own (TEMPORARY: no other connection sees it, nothing of the
    # ledger is written): each figure below is then a pass over it, not over the ledger
    # and its indexes again. A column for each derived value also lets GROUP BY and
    # PARTITION BY name a column: PostgreSQL cannot tell that two bound parameters are
    # the same expression.
    x_a = (a - _num(day0)) / _num(DAY)
    x_b = (b - _num(day0)) / _num(DAY)
    fill = select(
        o,
        a.label("a"),
        b.label("b"),
        case((b > a, b - a), else_=_num(0.0)).label("waited"),
        (func.coalesce(o.c.agent, "unknown") if q.by == "agent" else o.c.host).label("stack"),
        func.coalesce(o.c.agent, "unknown").label("agent_name"),
        func.coalesce(o.c.kind, "none").label("kind_name"),
        func.coalesce(o.c.kind, "").label("kind_key"),
        case((o.c.end_t.is_(None), None), else_=func.coalesce(o.c.ended, "cancelled")).label("ended_key"),
        # the prompts count the waits that began in the range
        (o.c.start_t >= _num(q.start)).label("began"),
        # first and last local day of [a, b); the last holds b unless b is its first instant
        _floor(x_a).label("ia"),
        case((_floor(x_b) == x_b, _floor(x_b) - 1), else_=_floor(x_b)).label("ib"),
    )
    await conn.execute(DropTable(RANGE, if_exists=True))
    await conn.execute(CreateTable(RANGE))
    try:
        await conn.execute(insert(RANGE).from_select([col.name for col in RANGE.c], fill))
        return await _figures(conn, q, now, day0, ndays, day_list, pg)
    finally:
        await conn.execute(DropTable(RANGE, if_exists=True))


async def _figures(conn: AsyncConnection, q: Query, now: float, day0: float, ndays: int,
                   day_list: list[Any], pg: bool) -> dict[str, Any]:  # fmt: skip
    c = RANGE
    waited = c.c.waited

    # Totals: open, and closed by how they ended.
    totals = (await conn.execute(
        select(c.c.ended_key, func.count(), func.sum(waited)).group_by(c.c.ended_key)
    )).all()  # fmt: skip
    count = open_ = 0
    total = 0.0
    ended: dict[str, int] = {}
    for how, n, secs in totals:
        count += n
        total += float(secs or 0.0)
        if how is None:
            open_ += n
        else:
            ended[how] = ended.get(how, 0) + n

    series = await _per_day(conn, c, waited, day0, ndays) if ndays else []
    tta = {dim: await _ttas(conn, c, q, dim) for dim in ("agent", "host", "kind")}
    return body(
        q,
        now,
        totals=(count, total, open_, ended),
        day_list=day_list,
        series=series,
        tta=tta,
        panes=await _panes(conn, c, waited),
        prompts=await _prompts(conn, c, pg),
    )


async def _per_day(
    conn: AsyncConnection, c: Any, waited: Any, day0: float, ndays: int
) -> list[dict[str, Any]]:
    # The stacks, most waited first: all of them when they fit, else the first
    # MAX_SERIES - 1 and "other" for the rest (NULL in SQL: a stack may be named "other").
    ranked = (await conn.execute(
        select(c.c.stack, func.sum(waited)).where(c.c.b > c.c.a).group_by(c.c.stack)
        .order_by(func.sum(waited).desc(), c.c.stack).limit(MAX_SERIES + 1)
    )).all()  # fmt: skip
    names = [r[0] for r in ranked]
    other = len(names) > MAX_SERIES
    if other:
        names = names[: MAX_SERIES - 1]
        stack: Any = case((c.c.stack.in_(names), c.c.stack), else_=None)
    else:
        stack = c.c.stack
    d = select(stack.label("stack"), c.c.ia, c.c.ib, c.c.a, c.c.b).where(c.c.b > c.c.a).subquery("d")
    first_end = _num(day0) + (d.c.ia + 1) * _num(DAY)
    zero, one = literal(0, Integer()), literal(1, Integer())
    parts = union_all(
        # the first day: all of [a, b) when it ends that day, else up to its midnight
        select(d.c.stack, d.c.ia.label("day"),
               case((d.c.ib == d.c.ia, d.c.b - d.c.a), else_=first_end - d.c.a).label("secs"),
               zero.label("whole")),
        # the last day, from its midnight
        select(d.c.stack, d.c.ib, d.c.b - (_num(day0) + d.c.ib * _num(DAY)), zero).where(d.c.ib > d.c.ia),
        # the whole days between: a difference array, summed below
        select(d.c.stack, d.c.ia + 1, _num(0.0), one).where(d.c.ib > d.c.ia + 1),
        select(d.c.stack, d.c.ib, _num(0.0), -one).where(d.c.ib > d.c.ia + 1),
    ).subquery("parts")  # fmt: skip
    rows = (await conn.execute(
        select(parts.c.stack, parts.c.day, func.sum(parts.c.secs), func.sum(parts.c.whole))
        .group_by(parts.c.stack, parts.c.day)
    )).all()  # fmt: skip
    values: dict[str | None, list[float]] = {}
    whole: dict[str | None, list[int]] = defaultdict(lambda: [0] * (ndays + 1))
    for name, day, secs, n in rows:
        v = values.setdefault(name, [0.0] * ndays)
        if 0 <= day < ndays:
            v[day] += float(secs or 0.0)
        if n:
            whole[name][min(max(day, 0), ndays)] += int(n)
    for name, deltas in whole.items():
        running = 0
        v = values.setdefault(name, [0.0] * ndays)
        for i in range(ndays):
            running += deltas[i]
            v[i] += running * DAY
    order = {n: i for i, n in enumerate(names)}
    out = [
        {"name": n, "values": values[n]}
        for n in sorted((n for n in values if n is not None), key=order.__getitem__)
    ]
    if other:
        out.append({"name": "other", "values": values.get(None, [0.0] * ndays)})
    return out


async def _ttas(conn: AsyncConnection, c: Any, q: Query, dim: str) -> list[dict[str, Any]]:
    g = {"agent": c.c.agent_name, "host": c.c.host, "kind": c.c.kind_name}[dim]
    secs = c.c.end_t - c.c.start_t
    ranked = (
        select(
            g.label("name"),
            secs.label("secs"),
            func.row_number().over(partition_by=g, order_by=secs).label("rn"),
            func.count().over(partition_by=g).label("n"),
        )
        .where(c.c.start_t >= _num(q.start), c.c.ended == "answered", c.c.end_t.is_not(None))
        .subquery("r")
    )
    r = ranked.c
    n = func.max(r.n)
    rows = (await conn.execute(
        select(r.name, n, func.max(case((r.rn == (r.n + 1) // 2, r.secs))),
               func.max(case((r.rn == (r.n * 9 + 9) // 10, r.secs))), func.max(r.secs))
        .group_by(r.name).order_by(n.desc(), r.name).limit(GROUPS_MAX)
    )).all()  # fmt: skip
    return [{"name": nm, "count": int(k), "p50": float(p50), "p90": float(p90), "max": float(mx)}
            for nm, k, p50, p90, mx in rows]  # fmt: skip


async def _panes(conn: AsyncConnection, c: Any, waited: Any) -> list[dict[str, Any]]:
    key = (c.c.host, c.c.tmux, c.c.pane)
    total = func.sum(waited)
    top = (await conn.execute(
        select(*key, func.count(), total).group_by(*key).order_by(total.desc(), c.c.host, c.c.pane, c.c.tmux)
        .limit(TOP)
    )).all()  # fmt: skip
    if not top:
        return []
    latest = select(*key, c.c.session, c.c.agent, func.row_number().over(
        partition_by=key, order_by=(c.c.start_t.desc(), c.c.end_t.desc())).label("rn")
    ).where(tuple_(*key).in_([tuple(r[:3]) for r in top])).subquery("l")  # fmt: skip
    labels = {
        (h, t, p): (sess, agent)
        for h, t, p, sess, agent in (
            await conn.execute(
                select(latest.c.host, latest.c.tmux, latest.c.pane, latest.c.session, latest.c.agent).where(
                    latest.c.rn == 1
                )
            )
        ).all()
    }
    out = []
    for h, t, p, n, secs in top:
        sess, agent = labels.get((h, t, p), (None, None))
        out.append({"host": h, "tmux": t, "pane": p, "session": sess, "agent": agent, "count": int(n),
                    "waited": float(secs or 0.0)})  # fmt: skip
    return out


async def _prompts(conn: AsyncConnection, c: Any, pg: bool) -> list[dict[str, Any]]:
    # Each distinct text is normalised once (the same prompt recurs: that is the point),
    # then the texts that normalise alike are added together.
    by_msg = (
        select(c.c.kind_key, c.c.msg, func.max(c.c.kind).label("kind"), func.min(c.c.msg).label("example"),
               func.count().label("n"), func.sum(c.c.waited).label("secs"))
        .where(c.c.began).group_by(c.c.kind_key, c.c.msg).subquery("m")
    )  # fmt: skip
    norm = normalise_pg(by_msg.c.msg) if pg else getattr(func, SQLITE_NORMALISE)(by_msg.c.msg)
    texts = select(by_msg, norm.label("text")).subquery("t")
    n, secs = func.sum(texts.c.n), func.sum(texts.c.secs)
    rows = (await conn.execute(
        select(func.max(texts.c.kind), texts.c.text, func.min(texts.c.example), n, secs)
        .group_by(texts.c.kind_key, texts.c.text).order_by(n.desc(), secs.desc(), texts.c.text).limit(TOP)
    )).all()  # fmt: skip
    return [{"kind": k, "text": t or "", "example": (m or "")[:TEXT_MAX], "count": int(cnt),
             "waited": max(0.0, float(w or 0.0))} for k, t, m, cnt, w in rows]  # fmt: skip
