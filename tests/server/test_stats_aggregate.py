"""The stats figures added up by the database (`ledger/aggregate.py`) are the ones the
page showed before, when the server read every interval of the range and added them up
itself (`ledger.stats.fetch` + `compute`, kept as the reference): same seeded ledger,
both ways, on SQLite and PostgreSQL. And what reaches Python is bounded by the figures'
size, however many waits the range holds."""

from __future__ import annotations

import asyncio
import math
import random
from typing import Any

import pytest
from paneboard_server.ledger import Query, compute, fetch
from paneboard_server.ledger.aggregate import GROUPS_MAX, aggregate
from paneboard_server.ledger.intervals import normalise
from paneboard_server.ledger.stats import MAX_SERIES, TOP
from paneboard_server.store import schema as s
from paneboard_server.store.database import create_engine, resolve_url
from sqlalchemy import insert
from sqlalchemy.ext.asyncio import AsyncConnection

D = 1_899_936_000.0  # 2030-03-17 00:00 UTC
DAY = 86400.0
NOW = D + 40 * DAY + 5000.5
PROMPTS = (
    "Allow edit of 'src/{f}.py' ({n} lines)?",
    "Run `pytest -q tests/{f}`?",
    "Run ./build.sh -j{n} now?",
    "Which  branch\tshould I use for {f}?",
    "Löschen: Datei {n} ÜBERSCHREIBEN?",
    "   Log in to continue   ",
    "",
)


def agent(host: str, pane: str) -> str | None:
    """Ten agents and panes of none: more stacks than a day's bars show."""
    return None if pane == "%5" else f"agent{int(pane[1:]) + 6 * (host in ('h0', 'h1'))}"


def ledger(n: int, seed: int = 7) -> list[dict[str, Any]]:
    """`n` waits over 40 days: short and multi-day ones, some still open, some from
    before any range asked, twelve hosts and ten agents (more stacks than a day shows)."""
    rng = random.Random(seed)
    rows = []
    for _ in range(n):
        host = f"h{rng.randrange(12)}"
        pane = f"%{rng.randrange(6)}"
        start = D - 3 * DAY + rng.random() * 43 * DAY
        long = rng.random() < 0.05
        length = rng.random() * (5 * DAY if long else 1800) + 0.25
        end: float | None = start + length
        if end > NOW or rng.random() < 0.01:
            end = None
        if start > NOW - 1:
            start = NOW - 1 - rng.random() * 100
        ended = (
            None if end is None else rng.choice(("answered", "answered", "cancelled", "gone", "stale", None))
        )
        kind = rng.choice(("permission", "question", "auth", None))
        msg = rng.choice(PROMPTS).format(f=rng.choice("abcde"), n=rng.randrange(100))
        rows.append({
            "host": host, "tmux": "default", "pane": pane,
            # one session and agent per pane: the reference takes whichever row it met first
            "session": f"s-{host}{pane}", "agent": agent(host, pane),
            "state": "blocked" if rng.random() < 0.8 else "done", "kind": kind, "msg": msg or None,
            "start_t": start, "end_t": end, "ended": ended,
        })  # fmt: skip
    return rows


async def seeded(db_url: str, rows: list[dict[str, Any]]) -> Any:
    engine = create_engine(resolve_url(db_url))
    async with engine.begin() as conn:
        await conn.execute(insert(s.waits), rows)
    return engine


QUERIES = [
    Query(D, D + 30 * DAY),
    Query(D, D + 30 * DAY, by="host"),
    Query(D + 0.5 * DAY, D + 7.25 * DAY, tz=330),
    Query(D - 2 * DAY, NOW + 3 * DAY, tz=-480, state="done"),
    Query(D, NOW, host="h3"),
    Query(D, NOW, agent="agent2", kind="permission", tz=60),
    Query(NOW - DAY, NOW),
    Query(NOW - 366 * DAY, NOW, by="host", tz=-720),
]


def same(new: Any, old: Any, where: str = "") -> None:
    if isinstance(old, float) or isinstance(new, float):
        assert new == pytest.approx(old, rel=1e-9, abs=1e-6), where
    elif isinstance(old, dict):
        assert new.keys() == old.keys(), where
        for k in old:
            same(new[k], old[k], f"{where}.{k}")
    elif isinstance(old, list):
        assert len(new) == len(old), where
        for i, (a, b) in enumerate(zip(new, old, strict=True)):
            same(a, b, f"{where}[{i}]")
    else:
        assert new == old, where


def test_the_database_adds_up_what_python_added_up(db_url: str) -> None:
    async def go() -> None:
        engine = await seeded(db_url, ledger(4000))
        pg = engine.dialect.name == "postgresql"
        try:
            for q in QUERIES:
                async with engine.connect() as conn:
                    new = await aggregate(conn, q, NOW, pg)
                rows, groups = await fetch(engine, q, NOW)
                old = compute(rows, q, NOW, groups)
                assert old["totals"]["count"] > 0, q
                # The reference's example is whichever text it met first; any of the group's will do.
                for p in new["prompts"]:
                    assert normalise(p.pop("example")) == p["text"], q
                for p in old["prompts"]:
                    p.pop("example")
                same(new, old, repr(q))
            # more stacks than a day's bars show: the rest is "other"
            async with engine.connect() as conn:
                out = await aggregate(conn, QUERIES[1], NOW, pg)
            assert [x["name"] for x in out["per_day"]["series"]][-1] == "other"
            assert len(out["per_day"]["series"]) == MAX_SERIES
        finally:
            await engine.dispose()

    asyncio.run(go())


class Counting:
    """A connection that counts the rows each statement hands to Python."""

    def __init__(self, conn: AsyncConnection) -> None:
        self.conn = conn
        self.rows = 0

    async def execute(self, stmt: Any) -> Any:
        result = await self.conn.execute(stmt)
        rows = result.all() if result.returns_rows else []
        self.rows += len(rows)
        return Rows(rows)

    async def get_raw_connection(self) -> Any:
        """The connection under it (the ledger registers its SQL function there)."""
        return await self.conn.get_raw_connection()


class Rows:
    def __init__(self, rows: list[Any]) -> None:
        self.rows = rows

    def all(self) -> list[Any]:
        return self.rows


def test_rows_reaching_python_are_bounded_by_the_figures_not_the_ledger(db_url: str) -> None:
    async def go() -> None:
        many = ledger(6000, seed=3)
        for i, r in enumerate(many):  # every prompt its own text: nothing groups them
            r["msg"] = f"prompt {'abcdefghij'[i % 10]}{'klmnopqrst'[i // 10 % 10]}{'uvwxyz'[i // 100 % 6]} ?"
        engine = await seeded(db_url, many)
        q = Query(D - 3 * DAY, NOW)
        try:
            async with engine.connect() as conn:
                counting = Counting(conn)
                out = await aggregate(counting, q, NOW, engine.dialect.name == "postgresql")  # type: ignore[arg-type]
        finally:
            await engine.dispose()
        assert out["totals"]["count"] > 4000
        ndays = len(out["per_day"]["days"])
        # totals by ending, stacks, (stack, day) cells, three time-to-answer lists,
        # panes and their labels, prompts
        bound = 8 + (MAX_SERIES + 1) + MAX_SERIES * ndays + 3 * GROUPS_MAX + 2 * TOP + TOP
        assert counting.rows <= bound < out["totals"]["count"]
        assert math.isclose(sum(sum(x["values"]) for x in out["per_day"]["series"]), out["totals"]["waited"])

    asyncio.run(go())
