"""The answer audit (answers/desk.py): every attempt is a row, listed newest first (a
burst of one credential's refusals one row with its count), and retention removes rows
by age with the history."""

from __future__ import annotations

import asyncio
import time

from ledger_helpers import T0, Clock, submit
from paneboard_server.answers.desk import audit
from paneboard_server.app import create_app
from paneboard_server.auth import accounts
from paneboard_server.auth.accounts import Principal
from paneboard_server.config import Config, parse_config
from paneboard_server.panes.core import Ingest
from paneboard_server.panes.retention import prune_once
from paneboard_server.services import services_of
from paneboard_server.store import schema as s
from paneboard_server.store.database import resolve_url
from pbserver import make_tokens, pane_update
from sqlalchemy import func, insert, select


def test_attempts_are_audited_and_pruned_by_age(db_url: str) -> None:
    cfg = parse_config({"retention": {"max_age_days": 1}})

    async def go() -> None:
        await make_tokens(db_url)
        app = create_app(cfg, resolve_url(db_url))
        async with app.router.lifespan_context(app):
            core = services_of(app).core
            done = asyncio.get_running_loop().create_future()
            up = pane_update("h", "%1", "blocked")
            core.submit(Ingest(1, "s", 1, panes=[up], on_commit=lambda: done.set_result(None)))
            await done
            [pid] = core.panes
            desk = services_of(app).answers
            ids = {}
            for name in ("nina", "olga"):
                await accounts.add_viewer(core.engine, name, "correct horse")
                async with core.engine.connect() as conn:
                    ids[name] = (
                        await conn.execute(select(s.viewers.c.id).where(s.viewers.c.name == name))
                    ).scalar()
            viewer = Principal("viewer", "nina", ids["nina"], readonly=False, operator=False)
            operator = Principal("viewer", "olga", ids["olga"], readonly=False, operator=True)
            assert (await desk.answer(viewer, pid, "a" * 64, "yes", None))[0] == "forbidden"
            # no collector connected to this process: nothing can be typed
            assert (await desk.answer(operator, pid, "a" * 64, None, "main"))[0] == "offline"
            replicas = services_of(app).replicas
            if replicas is not None:  # PostgreSQL: no process holds the collector, none was asked
                assert (replicas.stats["unheld"], replicas.stats["asks"]) == (1, 0)
            rows = await audit(core, pid)
            assert [(r["who"], r["outcome"], r["answer"], r["text"]) for r in rows] == [
                ("olga", "offline", None, "main"),
                ("nina", "forbidden", "yes", None),
            ]
            old = {**{k: rows[0][k] for k in ("who", "fingerprint", "outcome")}, "t": time.time() - 3 * 86400}
            async with core.engine.begin() as conn:
                await conn.execute(
                    insert(s.answers).values(pane_id=pid, host="h", tmux="default", pane="%1", **old)
                )
            assert len(await audit(core, pid)) == 3
            await prune_once(core)
            async with core.engine.connect() as conn:
                left = (await conn.execute(select(func.count()).select_from(s.answers))).scalar()
            assert left == 2

    asyncio.run(go())


def test_pane_page_is_newest_first_older_than_before_and_one_pane_only() -> None:
    """The paging /events and /answers share: a page, newest first, below `before`."""
    from paneboard_server.store import schema as s
    from sqlalchemy import create_engine, insert

    engine = create_engine("sqlite://")
    s.answers.create(engine)
    row = {"t": 1.0, "host": "h", "tmux": "t", "pane": "%0", "who": "olga"}
    row |= {"fingerprint": "f", "outcome": "typed"}
    with engine.begin() as conn:
        for i in range(1, 7):
            conn.execute(insert(s.answers).values(id=i, pane_id=1 if i != 5 else 2, **row))
        ids = lambda *a: [r.id for r in conn.execute(s.pane_page(s.answers, *a))]  # noqa: E731
        assert ids(1, 2) == [6, 4]
        assert ids(1, 2, 4) == [3, 2]
        assert ids(1, 10, 2) == [1]
        assert ids(2, 10) == [5]


def test_a_credentials_refusals_are_one_row_per_burst_with_its_count(db_url: str) -> None:
    """A read-only credential refused again and again (at once, with 1 KB of its own text
    each time) is one audit row per burst with its count, so the other attempts stay on
    the pane's first page; another credential, another pane or a later burst has its own."""
    clock = Clock(T0)

    async def go() -> None:
        await make_tokens(db_url)
        app = create_app(Config(), resolve_url(db_url), clock=clock)
        async with app.router.lifespan_context(app):
            core = services_of(app).core
            ups = [pane_update("h", "%1", "blocked"), pane_update("h", "%2", "blocked")]
            await submit(core, Ingest(1, "s", 1, panes=ups))
            one, two = sorted(core.panes)
            desk = services_of(app).answers
            await accounts.add_viewer(core.engine, "olga", "correct horse")
            operator = Principal("viewer", "olga", 1, readonly=False, operator=True)
            wall = Principal("viewer-token", "wall", 2, readonly=True, screens=True)
            other = Principal("viewer-token", "lobby", 3, readonly=True)
            assert (await desk.answer(operator, one, "a" * 64, None, "main"))[0] == "offline"
            junk = "x" * 1024
            got = await asyncio.gather(
                *[desk.answer(wall, one, "b" * 64, None, junk, refuse="read-only") for _ in range(50)]
            )
            assert {g[0] for g in got} == {"read-only"} and len({g[1]["id"] for g in got}) == 1
            clock.t += 30
            for _ in range(20):
                await desk.answer(wall, one, "b" * 64, None, junk, refuse="read-only")
            await desk.answer(other, one, "c" * 64, None, junk, refuse="read-only")
            await desk.answer(wall, two, "b" * 64, None, junk, refuse="read-only")
            assert (await desk.answer(operator, one, "a" * 64, None, "main"))[0] == "offline"
            clock.t += 31  # 61 s after the first: a new burst
            await desk.answer(wall, one, "b" * 64, None, junk, refuse="read-only")
            rows = await audit(core, one)
            assert [(r["who"], r["outcome"], r["count"]) for r in rows] == [
                ("wall", "read-only", 1),
                ("olga", "offline", 1),
                ("lobby", "read-only", 1),
                ("wall", "read-only", 70),
                ("olga", "offline", 1),
            ]
            assert rows[3]["done_at"] == T0 + 30  # the burst's last refusal
            assert [(r["who"], r["count"]) for r in await audit(core, two)] == [("wall", 1)]

    asyncio.run(go())
