"""The figures of the stats page, computed from the ledger (`waits`).

One pass over the intervals that overlap the asked time range gives every figure the
page draws, so the numbers and the plots cannot disagree:

- time waited per day (local days, `tz` minutes east of UTC), stacked by agent or host:
  each interval clipped to the range and split at midnight; an open one counts to now;
- time-to-answer per agent, host and kind: p50/p90/max of the intervals that *started*
  in the range and ended `answered` (nearest-rank percentiles, so each is a real wait);
- the panes that waited most (clipped seconds, as above);
- the prompts that recur most: same kind and same normalised text (`ledger.normalise`),
  over the intervals that started in the range;
- the totals: every interval overlapping the range, by how it ended (`ended`: answered,
  cancelled, …) plus those still open, so `count` is `open` + the sum of `ended`.

`fetch` + `compute` are the reading in Python, over the range's rows: the reference the
server's answer (`aggregate.py`, the same figures added up by the database, so that the
rows of a year never reach the event loop) is tested against, and what the benchmark's
baseline derives from history with.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from typing import Any

from paneboard_protocol.pane import TEXT_MAX
from sqlalchemy import CompoundSelect, Select, case, func, or_, select, union, union_all
from sqlalchemy.ext.asyncio import AsyncEngine

from ..store import schema as s
from .intervals import Waiting, normalise

W = s.waits
TOP = 10  # panes and prompts listed
_normalise = lru_cache(maxsize=8192)(normalise)  # prompts recur: that is the point
MAX_SERIES = 8  # stacks per day before the rest become "other"


@dataclass(frozen=True, slots=True)
class Query:
    """What a stats or blocks request asks for (validated by the API)."""

    start: float
    end: float
    state: Waiting = "blocked"
    host: str | None = None
    agent: str | None = None
    kind: str | None = None
    tz: int = 0  # minutes east of UTC, for day boundaries
    by: str = "agent"  # what the daily stacks are: "agent" or "host"


def where(q: Query, stmt: Select[Any], filters: bool = True) -> Select[Any]:
    """The filters (and the range's start) on `stmt`; `overlapping` adds the range's end."""
    stmt = stmt.where(W.c.start_t < q.end, W.c.state == q.state)
    if not filters:
        return stmt
    if q.host:
        stmt = stmt.where(W.c.host == q.host)
    if q.agent:
        stmt = stmt.where(W.c.agent == q.agent)
    if q.kind:
        stmt = stmt.where(W.c.kind == q.kind)
    return stmt


def overlapping(q: Query, stmt: Select[Any], filters: bool = True, distinct: bool = False) -> CompoundSelect:
    """The intervals overlapping [start, end) that match the filters: those that ended
    after the range began, and those still open, each found by the `end_t` index (the
    selective side; `start_t < end` holds for nearly every row when a range ends now)."""
    closed = where(q, stmt, filters).where(W.c.end_t > q.start)
    still = where(q, stmt, filters).where(W.c.end_t.is_(None))
    return union(closed, still) if distinct else union_all(closed, still)


COLUMNS = (W.c.host, W.c.tmux, W.c.pane, W.c.session, W.c.agent, W.c.kind, W.c.start_t, W.c.end_t, W.c.ended)


async def fetch(engine: AsyncEngine, q: Query, now: float) -> tuple[list[Any], list[Any]]:
    """The range's intervals (without their text), and their prompts counted by the
    database: (kind, msg, count, seconds waited) of the waits that began in the range.
    The text is most of a row's bytes and recurs: grouped in SQL, each distinct text
    is read and normalised once, not once per wait."""
    cap = min(q.end, now)
    waited = case((or_(W.c.end_t.is_(None), W.c.end_t > cap), cap), else_=W.c.end_t) - W.c.start_t
    prompts = (
        where(q, select(W.c.kind, W.c.msg, func.count(), func.sum(waited)))
        .where(W.c.start_t >= q.start)
        .group_by(W.c.kind, W.c.msg)
    )
    async with engine.connect() as conn:
        rows = list((await conn.execute(overlapping(q, select(*COLUMNS)))).all())
        groups = list((await conn.execute(prompts)).all())
    return rows, groups


async def options(engine: AsyncEngine, q: Query) -> dict[str, list[str]]:
    """The hosts and agents that waited in the range (whatever host or agent is picked),
    for the page's filters."""
    async with engine.connect() as conn:
        pairs = (await conn.execute(overlapping(q, select(W.c.host, W.c.agent), False, distinct=True))).all()
    return {
        "hosts": sorted({h for h, _ in pairs}),
        "agents": sorted({a for _, a in pairs if a is not None}),
    }


def percentile(sorted_values: list[float], q: float) -> float:
    """Nearest rank: the smallest value with at least `q` of the values at or below it."""
    if not sorted_values:
        return 0.0
    rank = max(1, math.ceil(q * len(sorted_values)))
    return sorted_values[rank - 1]


def _day_of(t: float, tz: int) -> datetime:
    local = datetime.fromtimestamp(t, UTC) + timedelta(minutes=tz)
    return local.replace(hour=0, minute=0, second=0, microsecond=0)


def _midnight(t: float, tz: int) -> float:
    """The instant (epoch seconds) the local day of `t` began, `tz` minutes east."""
    off = tz * 60
    return (t + off) // 86400 * 86400 - off


def days(q: Query) -> list[datetime]:
    """The local days the range touches (as naive-local midnights in UTC objects)."""
    out = []
    d = _day_of(q.start, q.tz)
    last = _day_of(max(q.start, q.end - 1e-6), q.tz)
    while d <= last:
        out.append(d)
        d += timedelta(days=1)
    return out


def _split(a: float, b: float, day0: float) -> list[tuple[int, float]]:
    """[a, b) as (index of the local day from the one starting at `day0`, seconds in it)."""
    out = []
    while a < b:
        i = int((a - day0) // 86400)
        cut = min(b, day0 + (i + 1) * 86400)
        out.append((i, cut - a))
        a = cut
    return out


def _ttas(groups: dict[str, list[float]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for name, vals in groups.items():
        vals.sort()
        out.append(
            {
                "name": name,
                "count": len(vals),
                "p50": percentile(vals, 0.5),
                "p90": percentile(vals, 0.9),
                "max": vals[-1],
            }
        )
    out.sort(key=lambda g: (-g["count"], g["name"]))
    return out


def _prompt(prompts: dict[tuple[str, str], dict[str, Any]], kind: str | None, msg: str | None, n: int,
            waited: float) -> None:  # fmt: skip
    text = _normalise(msg)
    pr = prompts.get((kind or "", text))
    if pr is None:
        pr = {"kind": kind, "text": text, "example": (msg or "")[:TEXT_MAX], "count": 0, "waited": 0.0}
        prompts[(kind or "", text)] = pr
    pr["count"] += n
    pr["waited"] += waited


def compute(rows: list[Any], q: Query, now: float, groups: list[Any] | None = None) -> dict[str, Any]:
    """Every figure of the page from the ledger rows of `fetch` and its prompt
    `groups` (None: the rows carry `msg`, and the prompts are counted from them)."""
    day_list = days(q)
    day0 = _midnight(q.start, q.tz)
    ndays = len(day_list)
    per_day: dict[str, list[float]] = defaultdict(lambda: [0.0] * len(day_list))
    tta: dict[str, dict[str, list[float]]] = {"agent": defaultdict(list), "host": defaultdict(list),
                                              "kind": defaultdict(list)}  # fmt: skip
    panes: dict[tuple[str, str, str], dict[str, Any]] = {}
    prompts: dict[tuple[str, str], dict[str, Any]] = {}
    total = 0.0
    count = open_ = 0
    ended: dict[str, int] = defaultdict(int)
    for r in rows:
        start_t, end_t = r.start_t, r.end_t
        a = max(start_t, q.start)
        b = min(end_t if end_t is not None else now, q.end, now)
        waited = max(0.0, b - a)
        total += waited
        count += 1
        if end_t is None:
            open_ += 1
        else:
            ended[r.ended or "cancelled"] += 1
        stack = (r.agent or "unknown") if q.by == "agent" else r.host
        i = int((a - day0) // 86400)
        if b <= day0 + (i + 1) * 86400:  # the usual wait: within one day
            if 0 <= i < ndays and b > a:
                per_day[stack][i] += b - a
        else:
            for i, secs in _split(a, b, day0):
                if 0 <= i < ndays:
                    per_day[stack][i] += secs
        key = (r.host, r.tmux, r.pane)
        p = panes.get(key)
        if p is None:
            p = panes[key] = {"host": r.host, "tmux": r.tmux, "pane": r.pane, "session": r.session,
                              "agent": r.agent, "count": 0, "waited": 0.0}  # fmt: skip
        p["count"] += 1
        p["waited"] += waited
        if start_t < q.start:
            continue  # the rest is about waits that began in the range
        if r.ended == "answered" and end_t is not None:
            secs = end_t - start_t
            tta["agent"][r.agent or "unknown"].append(secs)
            tta["host"][r.host].append(secs)
            tta["kind"][r.kind or "none"].append(secs)
        if groups is None:
            _prompt(prompts, r.kind, r.msg, 1, waited)
    for kind, msg, n, secs in groups or ():
        _prompt(prompts, kind, msg, int(n), max(0.0, float(secs or 0.0)))
    series: list[dict[str, Any]] = sorted(
        ({"name": k, "values": v} for k, v in per_day.items()), key=lambda x: -sum(x["values"])
    )
    if len(series) > MAX_SERIES:
        rest = series[MAX_SERIES - 1 :]
        other = [sum(x["values"][i] for x in rest) for i in range(len(day_list))]
        series = [*series[: MAX_SERIES - 1], {"name": "other", "values": other}]
    top_panes = sorted(panes.values(), key=lambda p: (-p["waited"], p["host"], p["pane"]))[:TOP]
    top_prompts = sorted(prompts.values(), key=lambda p: (-p["count"], -p["waited"], p["text"]))[:TOP]
    return body(
        q,
        now,
        totals=(count, total, open_, ended),
        day_list=day_list,
        series=series,
        tta={k: _ttas(v) for k, v in tta.items()},
        panes=top_panes,
        prompts=top_prompts,
    )


def body(
    q: Query,
    now: float,
    *,
    totals: tuple[int, float, int, dict[str, int]],
    day_list: list[Any],
    series: list[Any],
    tta: dict[str, Any],
    panes: list[Any],
    prompts: list[Any],
) -> dict[str, Any]:
    """`GET /api/stats`'s answer, one shape whether Python (`compute`) or the database
    (`aggregate`) added the figures up."""
    count, waited, open_, ended = totals
    return {
        "from": q.start,
        "to": q.end,
        "now": now,
        "state": q.state,
        "by": q.by,
        "tz": q.tz,
        "filters": {"host": q.host, "agent": q.agent, "kind": q.kind},
        "totals": {
            "count": count,
            "waited": waited,
            "open": open_,
            "answered": ended.get("answered", 0),
            "ended": dict(sorted(ended.items(), key=lambda e: (-e[1], e[0]))),
        },
        "per_day": {"days": [d.strftime("%Y-%m-%d") for d in day_list], "series": series},
        "time_to_answer": tta,
        "panes": panes,
        "prompts": prompts,
    }
