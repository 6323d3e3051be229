"""Limits that keep one collector from growing the server: every integer and string of a
message bounded to what the database stores, the cap on a collector's live panes, and
gone panes leaving memory (not the database) beyond `limits.gone_in_memory`. Run in
process against real SQLite and PostgreSQL databases."""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from typing import Any

import pytest
from ledger_helpers import T0, Clock, update
from paneboard_protocol.pane import PaneKey, PaneUpdate
from paneboard_server.app import create_app
from paneboard_server.config import Config, parse_config
from paneboard_server.ingest.wire import MAX_INT, WireError, parse
from paneboard_server.ledger import mark_answered
from paneboard_server.panes.core import Ingest, Refused
from paneboard_server.services import services_of
from paneboard_server.store import schema as s
from paneboard_server.store.database import resolve_url
from pbserver import make_tokens, pane_update
from sqlalchemy import func, select

U = pane_update("h", "%1", "blocked", msg="ok?").wire_json()


@pytest.mark.parametrize(
    ("msg", "at"),
    [
        ({"type": "snapshot", "seq": MAX_INT + 1, "t": 1}, "seq"),
        ({"type": "snapshot", "seq": 2**64, "t": 1}, "seq"),
        ({"type": "hello", "stream": "s", "protocol": 2**64}, "protocol"),
        ({"type": "hello", "stream": "s\x00"}, "stream"),
        (
            {"type": "snapshot", "seq": 1, "t": 1, "panes": [{**U, "key": {**U["key"], "pane": "%\x001"}}]},
            "pane",
        ),
        (
            {"type": "snapshot", "seq": 1, "t": 1, "panes": [{**U, "key": {**U["key"], "host": "a\u202eb"}}]},
            "host",
        ),
        ({"type": "snapshot", "seq": 1, "t": 1, "panes": [{**U, "evidence": {"x": "\x00"}}]}, "evidence"),
        ({"type": "snapshot", "seq": 1, "t": 1, "panes": [{**U, "evidence": {"x": 2**63}}]}, "evidence"),
        (
            {"type": "snapshot", "seq": 1, "t": 1, "panes": [{**U, "evidence": {"x": float("inf")}}]},
            "evidence",
        ),
        ({"type": "snapshot", "seq": 1, "t": 1, "panes": [{**U, "records": [{"n": 2**64}]}]}, "records"),
        ({"type": "snapshot", "seq": 1, "t": 1, "hosts": {"h\x00": {"reachable": True}}}, "hosts"),
    ],
)
def test_wire_refuses_what_a_backend_cannot_store(msg: dict[str, Any], at: str) -> None:
    with pytest.raises(WireError) as info:
        parse(json.dumps(msg), 1 << 20, 10)
    assert at in str(info.value) and info.value.at is not None and at in info.value.at


def test_wire_cleans_display_text_and_keeps_the_seq_of_a_refused_message() -> None:
    snap = parse(
        json.dumps({"type": "snapshot", "seq": 4, "t": 1, "panes": [{**U, "msg": "a\x00\x1b\u202e\u200bb"}]}),
        1 << 20,
        10,
    )
    assert snap.panes[0].msg == "ab"  # type: ignore[union-attr]
    with pytest.raises(WireError) as info:
        parse(
            json.dumps({"type": "delta", "seq": 9, "ops": [{"op": "gone", "key": {}, "t": 1}]}), 1 << 20, 10
        )
    assert info.value.seq == 9


def _ups(prefix: str, n: int) -> list[PaneUpdate]:
    return [pane_update("h", f"%{prefix}{i}", "working") for i in range(n)]


async def _run(core: Any, op: Ingest) -> BaseException | None:
    fut = asyncio.get_running_loop().create_future()
    op.on_commit = lambda: fut.done() or fut.set_result(None)
    op.on_fail = lambda e: fut.done() or fut.set_result(e)
    core.submit(op)
    return await asyncio.wait_for(fut, 30)


def test_live_pane_cap_and_gone_panes_leave_memory_not_the_database(db_url: str) -> None:
    cfg = parse_config({"limits": {"max_live_panes_per_collector": 30, "gone_in_memory": 10}})

    async def go() -> None:
        await make_tokens(db_url)
        app = create_app(cfg, resolve_url(db_url))
        async with app.router.lifespan_context(app):
            core = services_of(app).core
            assert await _run(core, Ingest(1, "s", 1, snapshot_hosts={}, panes=_ups("a", 20))) is None
            # a delta bringing 11 more (31 live) is refused and changes nothing
            got = await _run(core, Ingest(1, "s", 2, panes=_ups("b", 11)))
            assert isinstance(got, Refused) and "limit 30" in str(got)
            assert len(core.panes) == 20 and core.stats["refused_cap"] == 1
            assert await _run(core, Ingest(1, "s", 3, panes=_ups("b", 10))) is None  # 30: fine
            first = {p.pane: p.id for p in core.panes.values()}
            # Five snapshots of new ids: 90 panes go; at most 10 gone ones stay in memory.
            for round_ in range(5):
                op = Ingest(1, "s", 4 + round_, snapshot_hosts={}, panes=_ups(f"r{round_}", 18))
                assert await _run(core, op) is None
            live = [p for p in core.panes.values() if p.gone_at is None]
            gone = [p for p in core.panes.values() if p.gone_at is not None]
            assert len(live) == 18 and len(gone) == 10
            async with core.engine.connect() as conn:
                rows = (await conn.execute(select(func.count()).select_from(s.panes))).scalar_one()
            assert rows == 30 + 4 * 18 + 18  # the database keeps them all, with their history
            # An evicted pane that comes back keeps its id (its row and history are found again).
            assert await _run(core, Ingest(1, "s", 9, panes=_ups("a", 1))) is None
            back = next(p for p in core.panes.values() if p.pane == "%a0")
            assert back.id == first["%a0"] and back.gone_at is None
            async with core.engine.connect() as conn:
                hist = (
                    await conn.execute(select(s.history.c.reason).where(s.history.c.pane_id == back.id))
                ).all()
            assert [r[0] for r in hist] == ["report", "gone", "report"]
            # A restart loads no more than the cap of gone panes either.
        app2 = create_app(cfg, resolve_url(db_url))
        async with app2.router.lifespan_context(app2):
            core2 = services_of(app2).core
            assert sum(1 for p in core2.panes.values() if p.gone_at is not None) == 10
            gone = PaneKey(host="h", tmux="default", pane="%a0")
            assert await _run(core2, Ingest(1, "s", 10, gone=[(gone, time.time())])) is None

    asyncio.run(go())


def test_gone_panes_are_capped_on_disk_per_collector(db_url: str) -> None:
    """A collector announcing new panes and letting them go keeps at most
    `retention.max_gone_panes` gone rows (plus the batch in flight), the oldest removed
    first with their history; another collector's gone panes are not touched."""
    cfg = parse_config({"retention": {"max_gone_panes": 25}, "limits": {"gone_in_memory": 10}})

    async def gone_rows(core: Any, collector: int) -> list[int]:
        p, h = s.panes.c, s.hosts.c
        async with core.engine.connect() as conn:
            rows = await conn.execute(
                select(p.id)
                .select_from(s.panes.join(s.hosts, p.host_id == h.id))
                .where(h.collector_id == collector, p.gone_at.is_not(None))
            )
            return sorted(i for (i,) in rows.all())

    async def go() -> None:
        await make_tokens(db_url)
        app = create_app(cfg, resolve_url(db_url))
        async with app.router.lifespan_context(app):
            core = services_of(app).core
            rounds: list[set[int]] = []
            for r in range(8):  # 18 new panes a round: 7 x 18 = 126 go
                assert (
                    await _run(core, Ingest(1, "s", 1 + r, snapshot_hosts={}, panes=_ups(f"r{r}", 18)))
                    is None
                )
                rounds.append({p.id for p in core.panes.values() if p.gone_at is None})
            kept = await gone_rows(core, 1)
            assert 18 <= len(kept) <= 25 + 18, len(kept)
            assert set(kept) >= rounds[6]  # the newest gone stay
            assert not set(kept) & rounds[0]  # the oldest went first
            async with core.engine.connect() as conn:
                orphans = (
                    await conn.execute(
                        select(func.count()).select_from(s.history).where(s.history.c.pane_id.in_(rounds[0]))
                    )
                ).scalar_one()
                panes = (await conn.execute(select(func.count()).select_from(s.panes))).scalar_one()
            assert orphans == 0  # their history went with them
            assert panes == len(kept) + 18
            assert core.stats["gone_capped"] == 7 * 18 - len(kept)
            assert not any(pid in core.panes for pid in rounds[0])

    asyncio.run(go())


FLOOD_KEYS = 3000  # new pane keys a snapshot, each blocked, each gone at the next
FLOOD_SECONDS = 60
FLOOD_EVERY = 5  # seconds between snapshots: 12 of them, 36,000 panes


def test_caps_hold_against_thousands_of_new_keys_a_snapshot(db_url: str) -> None:
    """A collector sending 3,000 new blocked panes a snapshot for a minute (each gone
    at the next snapshot) keeps at most `max_gone_panes` gone panes on disk (or the one
    batch's worth just gone, when that is more), their history with them, and at most
    `max_waits_per_day` closed ledger rows (and a tenth of it between checks); the waits
    a person answered before the flood stay, the one answered from paneboard and the one
    answered in its terminal. Driven in process with an injected clock."""
    cfg = Config()
    clock = Clock(T0)

    async def count(core: Any, q: Any) -> int:
        async with core.engine.connect() as conn:
            return int((await conn.execute(q)).scalar_one())

    async def go() -> None:
        await make_tokens(db_url)
        app = create_app(cfg, resolve_url(db_url), clock=clock)
        async with app.router.lifespan_context(app):
            core = services_of(app).core
            seq = itertools.count(1)
            # Before the flood: two waits a person answered on the same collector.
            asked = [
                update("h", "%typed", "blocked", msg="Allow?"),
                update("h", "%board", "blocked", msg="Go?"),
            ]
            assert await _run(core, Ingest(1, "s", next(seq), panes=asked)) is None
            clock.t += 20
            async with core.engine.begin() as conn:
                board_id = core.pane_ids[(core.host_ids[(1, "h")], "default", "%board")]
                assert await mark_answered(conn, board_id, "alice") == 1
            went_on = [update("h", "%typed", "working"), update("h", "%board", "working")]
            assert await _run(core, Ingest(1, "s", next(seq), panes=went_on)) is None
            for r in range(FLOOD_SECONDS // FLOOD_EVERY):
                clock.t += FLOOD_EVERY
                ups = [update("h", f"%f{r}x{i}", "blocked", msg="?") for i in range(FLOOD_KEYS)]
                assert await _run(core, Ingest(1, "s", next(seq), snapshot_hosts={}, panes=ups)) is None
            p, w = s.panes.c, s.waits.c
            gone = await count(core, select(func.count()).select_from(s.panes).where(p.gone_at.is_not(None)))
            live = await count(core, select(func.count()).select_from(s.panes).where(p.gone_at.is_(None)))
            history = await count(core, select(func.count()).select_from(s.history))
            closed = await count(core, select(func.count()).select_from(s.waits).where(w.end_t.is_not(None)))
            opened = await count(core, select(func.count()).select_from(s.waits).where(w.end_t.is_(None)))
            assert live == FLOOD_KEYS
            assert gone <= max(cfg.retention.max_gone_panes, FLOOD_KEYS), gone
            assert history <= 2 * (gone + live) + 4, history  # a report and a gone row each
            cap = cfg.retention.max_waits_per_day
            assert closed <= cap + cap // 10, closed
            assert opened == FLOOD_KEYS
            async with core.engine.connect() as conn:
                kept = (
                    await conn.execute(
                        select(w.pane, w.ended, w.answered_by).where(w.pane.in_(["%typed", "%board"]))
                    )
                ).all()
            assert sorted(tuple(k) for k in kept) == [
                ("%board", "answered", "alice"),
                ("%typed", "answered", None),
            ]

    asyncio.run(go())
