"""Stats benchmark: `GET /api/stats` on a SQLite store holding 1 million history rows.

Builds a throw-away database: 10 hosts x 50 panes, a month of state changes (1,000,000
history rows by default), and the ledger (`waits`) derived from them with the same
`ledger.derive` the server uses. Then times, through the real app in-process, the
stats API for the last 24 hours, 7 days and 30 days (and 7 days of one host), median of
`--repeat` runs, and prints the query plan SQLite chose for the stats query.

Baseline in the same run: the same 7-day figures computed without the ledger, by
reading the history of the range and deriving the intervals at query time (what the
`waits` table saves each request).

    uv run python bench/stats.py                 # 1,000,000 history rows
    uv run python bench/stats.py --rows 200000 --repeat 3
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from collections import namedtuple
from pathlib import Path
from typing import Any

HOSTS = 10
PANES_PER_HOST = 50
AGENTS = ("claude", "codex", "gemini", "aider", "opencode")
DAYS = 30
Row = namedtuple("Row", "host tmux pane session agent kind msg start_t end_t ended")


def build(path: Path, rows: int, now: float) -> tuple[int, float]:
    """Schema, panes, `rows` history rows and the derived waits; returns (waits, seconds)."""
    from paneboard_server.ledger.intervals import Event, derive
    from paneboard_server.store.migrate import upgrade

    upgrade(f"sqlite+aiosqlite:///{path}")
    db = sqlite3.connect(path)
    db.execute(
        "INSERT INTO tokens (id, name, kind, token_hash, created_at) VALUES (1, 'c', 'collector', 'x', 0)"
    )
    pane_ids = []
    for h in range(HOSTS):
        db.execute(
            "INSERT INTO hosts (id, collector_id, name, reachable) VALUES (?, 1, ?, 1)", (h + 1, f"host{h}")
        )
        for p in range(PANES_PER_HOST):
            pid = h * PANES_PER_HOST + p + 1
            db.execute(
                "INSERT INTO panes (id, host_id, tmux, pane, session, window, observable, rev, evidence)"
                " VALUES (?, ?, 'default', ?, 'work', '0', 1, 0, '{}')",
                (pid, h + 1, f"%{p}"),
            )
            pane_ids.append(pid)
    rng = random.Random(1)
    per_pane = rows // len(pane_ids)
    start = now - DAYS * 86400
    gap = DAYS * 86400 / per_pane
    history: list[tuple[Any, ...]] = []
    waits_rows: list[tuple[Any, ...]] = []
    t_derive = 0.0
    for pid in pane_ids:
        agent = AGENTS[pid % len(AGENTS)]
        host, pane = f"host{(pid - 1) // PANES_PER_HOST}", f"%{(pid - 1) % PANES_PER_HOST}"
        t = start + rng.uniform(0, gap)
        events = []
        state = "working"
        for _ in range(per_pane):
            if state == "working":
                r = rng.random()
                if r < 0.6:
                    kind = rng.choice(("permission", "question", "auth"))
                    ev = Event(t, agent, "blocked", kind, f"Allow edit of 'f{rng.randint(1, 99)}.py'?")
                else:
                    ev = Event(t, agent, "done", None, "finished")
            else:
                ev = Event(t, agent, rng.choice(("working", "working", "idle")), reason="report")
            events.append(ev)
            state = "working" if ev.state in ("blocked", "done") else ev.state
            state = "waiting" if ev.state in ("blocked", "done") else "working"
            t += rng.expovariate(1 / gap)
        for ev in events:
            history.append((pid, ev.t, ev.agent, ev.state, ev.kind, ev.msg, "protocol", None, ev.reason))
        t0 = time.perf_counter()
        ivs = derive(events)
        t_derive += time.perf_counter() - t0
        for iv in ivs:
            where = (pid, host, "default", pane, "work")
            waits_rows.append(
                (*where, iv.agent, iv.state, iv.kind, iv.msg, iv.start_t, iv.end_t, iv.ended, iv.end_state)
            )
    db.executemany(
        "INSERT INTO history (pane_id, t, agent, state, kind, msg, source, prev_state, reason)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        history,
    )
    db.executemany(
        "INSERT INTO waits (pane_id, host, tmux, pane, session, agent, state, kind, msg, start_t, end_t,"
        " ended, end_state) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        waits_rows,
    )
    db.commit()
    db.execute("ANALYZE")
    db.close()
    return len(waits_rows), t_derive


async def measure(path: Path, now: float, repeat: int) -> dict[str, Any]:
    import httpx
    from paneboard_server.app import create_app
    from paneboard_server.auth import accounts
    from paneboard_server.config import Config
    from paneboard_server.ledger.intervals import Event, derive
    from paneboard_server.ledger.stats import COLUMNS, Query, compute, overlapping
    from paneboard_server.services import services_of
    from paneboard_server.store import schema as s
    from sqlalchemy import select

    url = f"sqlite+aiosqlite:///{path}"
    app = create_app(Config(), url, clock=lambda: now)
    out: dict[str, Any] = {}
    async with app.router.lifespan_context(app):
        core = services_of(app).core
        token = await accounts.create_token(core.engine, "bench", "viewer")
        transport = httpx.ASGITransport(app=app)
        headers = {"Authorization": f"Bearer {token}"}
        async with httpx.AsyncClient(transport=transport, base_url="http://b", headers=headers) as c:
            await c.get("/api/stats")  # warm-up: first-request costs are not the figure
            for name, params in (
                ("24 h", {"from": now - 86400, "to": now}),
                ("7 days", {"from": now - 7 * 86400, "to": now}),
                ("30 days", {"from": now - 30 * 86400, "to": now}),
                ("7 days, one host", {"from": now - 7 * 86400, "to": now, "host": "host3"}),
            ):
                times = []
                for _ in range(repeat):
                    t0 = time.perf_counter()
                    r = await c.get("/api/stats", params=params)
                    times.append(time.perf_counter() - t0)
                    assert r.status_code == 200, r.text
                out[name] = (statistics.median(times), r.json()["totals"]["count"])

        # Baseline: no ledger, the intervals derived from the history of the range per request.
        async def from_history() -> int:
            q = Query(now - 7 * 86400, now)
            h = s.history
            async with core.engine.connect() as conn:
                rows = (
                    await conn.execute(
                        select(
                            *(
                                h.c[k]
                                for k in ("pane_id", "id", "t", "agent", "state", "kind", "msg", "reason")
                            )
                        )
                        .add_columns(s.panes.c.pane, s.hosts.c.name.label("host"), s.panes.c.session)
                        .join(s.panes, s.panes.c.id == h.c.pane_id)
                        .join(s.hosts, s.hosts.c.id == s.panes.c.host_id)
                        .where(h.c.t >= q.start - 86400, h.c.t < q.end)  # from a day before: waits open then
                        .order_by(h.c.pane_id, h.c.t, h.c.id)
                    )
                ).all()
            by: dict[int, list[Any]] = {}
            for r in rows:
                by.setdefault(r.pane_id, []).append(r)
            ivs = []
            for pane_rows in by.values():
                first = pane_rows[0]
                for iv in derive([Event.from_row(r) for r in pane_rows]):
                    if iv.state == "blocked" and iv.start_t < q.end and (iv.end_t or now) > q.start:
                        ivs.append(Row(first.host, "default", first.pane, first.session, iv.agent, iv.kind,
                                       iv.msg, iv.start_t, iv.end_t, iv.ended))  # fmt: skip
            return compute(ivs, q, now)["totals"]["count"]

        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            n = await from_history()
            times.append(time.perf_counter() - t0)
        out["baseline: 7 days derived from history per request"] = (statistics.median(times), n)

        async with core.engine.connect() as conn:
            stmt = overlapping(Query(now - 7 * 86400, now), select(*COLUMNS))
            sql = str(stmt.compile(core.engine.sync_engine, compile_kwargs={"literal_binds": True}))
            plan = (await conn.exec_driver_sql("EXPLAIN QUERY PLAN " + sql)).all()
            out["plan"] = [r[-1] for r in plan]
            out["sql"] = " ".join(sql.split())
            counts = {}
            for table in ("history", "waits"):
                counts[table] = (await conn.exec_driver_sql(f"SELECT count(*) FROM {table}")).scalar()
            out["counts"] = counts
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=1_000_000, help="history rows (default 1,000,000)")
    ap.add_argument("--repeat", type=int, default=5, help="runs per figure; the median is printed")
    args = ap.parse_args(argv)
    now = time.time()
    with tempfile.TemporaryDirectory(prefix="pb-bench-stats-") as d:
        path = Path(d) / "bench.db"
        t0 = time.perf_counter()
        n_waits, t_derive = build(path, args.rows, now)
        print(f"built {args.rows:,} history rows, {n_waits:,} waits in {time.perf_counter() - t0:.1f} s "
              f"(ledger.derive: {args.rows / t_derive:,.0f} history rows/s)")  # fmt: skip
        out = asyncio.run(measure(path, now, args.repeat))
        print(f"rows: {out.pop('counts')}")
        plan, sql = out.pop("plan"), out.pop("sql")
        for name, (secs, count) in out.items():
            print(f"GET /api/stats {name:52s} {secs * 1000:8.1f} ms  ({count:,} waits)")
        print("query:", sql)
        print("plan (SQLite EXPLAIN QUERY PLAN):")
        for line in plan:
            print("   ", line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
