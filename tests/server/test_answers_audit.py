"""The answer audit (answering.py): every attempt is one inserted row, listed newest
first, and retention removes rows by age with the history."""

from __future__ import annotations

import asyncio
import time

from paneboard_server.answers.desk import audit
from paneboard_server.app import create_app
from paneboard_server.auth import accounts
from paneboard_server.auth.accounts import Principal
from paneboard_server.config import Config
from paneboard_server.panes.core import Ingest
from paneboard_server.panes.retention import prune_once
from paneboard_server.services import services_of
from paneboard_server.store import schema as s
from paneboard_server.store.database import resolve_url
from pbserver import make_tokens, pane_update
from sqlalchemy import func, insert, select


def test_attempts_are_audited_and_pruned_by_age(db_url: str) -> None:
    cfg = Config.model_validate({"retention": {"max_age_days": 1}})

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
