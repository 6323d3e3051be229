"""Pure parts of the server: wire validation, the deadline heap, the SSE hub's bounded
queues, the schema/migration agreement, and retention against a real database."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator

import msgspec
import pytest
from paneboard_protocol.pane import State
from paneboard_protocol.views import PaneView
from paneboard_server.app import create_app
from paneboard_server.config import Config, parse_config
from paneboard_server.ingest.wire import Delta, Snapshot, WireError, parse
from paneboard_server.panes.commands import Op
from paneboard_server.panes.core import Core, Ingest
from paneboard_server.panes.model import Host, Pane
from paneboard_server.panes.staleness import Deadlines
from paneboard_server.services import Services, services_of
from paneboard_server.store.database import resolve_url
from paneboard_server.stream.hub import Hub
from pbserver import make_tokens, pane_update


def test_wire_accepts_the_uplinks_own_messages_and_bounds_everything() -> None:
    u = pane_update("h", "%1", "blocked", kind="permission", msg="ok?").wire_json()
    msg = parse(json.dumps({"type": "delta", "seq": 3, "ops": [{"op": "pane", "update": u}]}), 1 << 20, 10)
    assert isinstance(msg, Delta) and msg.ops[0].update.key.pane == "%1"
    snap = parse(json.dumps({"type": "snapshot", "seq": 1, "t": 1, "panes": [u] * 3}), 1 << 20, 10)
    assert isinstance(snap, Snapshot)
    with pytest.raises(WireError, match="carries 3 panes"):
        parse(json.dumps({"type": "snapshot", "seq": 1, "t": 1, "panes": [u] * 3}), 1 << 20, 2)
    with pytest.raises(WireError, match="too large"):
        parse("x" * 2000, 1000, 10)
    for bad, where in [
        ({"type": "delta", "seq": -1, "ops": [{"op": "pane", "update": u}]}, "seq"),
        ({"type": "delta", "seq": 1, "ops": []}, "ops"),
        ({"type": "delta", "seq": 1, "ops": [{"op": "explode"}]}, "ops.0"),
        ({"type": "snapshot", "seq": 1, "t": 1, "panes": [{**u, "progress": 101}]}, "progress"),
        (
            {
                "type": "snapshot",
                "seq": 1,
                "t": 1,
                "panes": [{**u, "key": {"host": "", "tmux": "d", "pane": "%1"}}],
            },
            "host",
        ),
        ({"type": "nope"}, "message"),
    ]:
        with pytest.raises(WireError) as info:
            parse(json.dumps(bad), 1 << 20, 10)
        assert where in str(info.value) or "invalid message" in str(info.value)


def test_deadlines_keep_one_live_entry_per_pane() -> None:
    now = [100.0]
    due: list[list[int]] = []
    d = Deadlines(lambda: now[0], due.append)
    d.schedule(1, 150)
    d.schedule(2, 120)
    d.schedule(1, 110)  # supersedes 150
    d.schedule(3, None)
    assert d.next_deadline() == 110
    now[0] = 130
    assert d.pop_due() == [1, 2]
    assert d.next_deadline() is None  # the superseded 150 entry is not live
    d.schedule(4, 140)
    d.forget(4)
    now[0] = 1000
    assert d.pop_due() == []


def view(pane_id: int, rev: int, state: State | None = None) -> PaneView:
    return Pane.heard_of(pane_id, 1, "default", f"%{pane_id}", state=state, rev=rev).view(Host(1, 1, "h"))


def test_hub_drops_a_client_that_cannot_keep_up() -> None:
    async def go() -> None:
        hub = Hub(maxsize=3)
        fast, slow = hub.subscribe(), hub.subscribe()
        for rev in range(1, 6):
            hub.publish(rev, [view(rev, rev)], [])
            hub.flush()
            while not fast.queue.empty():
                fast.queue.get_nowait()
        assert slow.dropped and slow not in hub.subscribers and hub.dropped == 1
        assert not fast.dropped and fast in hub.subscribers
        assert slow.queue.qsize() == 3  # bounded: nothing queued past the limit
        # Changes within one interval coalesce: latest state per pane, gone wins over older.
        hub2 = Hub(maxsize=10, interval=0.05)
        sub = hub2.subscribe()
        hub2.publish(1, [view(1, 1, "working")], [])
        await asyncio.sleep(0)  # idle hub: the first change goes at once
        assert sub.queue.qsize() == 1
        hub2.publish(2, [view(1, 2, "blocked"), view(2, 2)], [])
        hub2.publish(3, [view(1, 3, "done")], [2])
        await asyncio.sleep(0)
        assert sub.queue.qsize() == 1  # the rest waits for the interval
        rev, frame = await asyncio.wait_for(_second(sub), 2)
        data = json.loads(frame.decode().split("data: ", 1)[1])
        assert rev == 3 and data["gone"] == [2]
        assert data["panes"] == [json.loads(msgspec.json.encode(view(1, 3, "done")))]

    asyncio.run(go())


def test_migrations_create_exactly_the_schema(db_url: str) -> None:
    from alembic.autogenerate import compare_metadata
    from alembic.runtime.migration import MigrationContext
    from paneboard_server.store.database import create_engine
    from paneboard_server.store.migrate import head_revision, script_head
    from paneboard_server.store.schema import metadata

    assert script_head() == head_revision()

    async def go() -> list:
        engine = create_engine(resolve_url(db_url))
        async with engine.connect() as conn:
            diff = await conn.run_sync(lambda c: compare_metadata(MigrationContext.configure(c), metadata))
        await engine.dispose()
        return diff

    assert asyncio.run(go()) == []


def test_retention_prunes_by_age_and_count_and_purges_gone_panes(db_url: str) -> None:
    from paneboard_protocol.pane import PaneKey
    from paneboard_server.panes.retention import prune_once
    from paneboard_server.store import schema as s
    from sqlalchemy import func, insert, select

    cfg = parse_config({"retention": {"max_age_days": 1, "max_per_pane": 5, "batch": 7, "gone_pane_days": 1}})

    async def go() -> None:
        await make_tokens(db_url)
        app = create_app(cfg, resolve_url(db_url))
        async with app.router.lifespan_context(app):
            core = services_of(app).core
            done = asyncio.get_running_loop().create_future()
            ups = [pane_update("h", f"%{i}", "working") for i in range(3)]
            core.submit(Ingest(1, "s", 1, panes=ups, on_commit=lambda: done.set_result(None)))
            await done
            a, b, c = sorted(core.panes)
            now = time.time()
            rows = [
                {"pane_id": a, "t": now - 3 * 86400, "state": "idle", "reason": "report"} for _ in range(20)
            ]
            rows += [
                {"pane_id": b, "t": now - 60 + i, "state": "working", "reason": "report"} for i in range(12)
            ]
            async with core.engine.begin() as conn:
                await conn.execute(insert(s.history), rows)
            done2 = asyncio.get_running_loop().create_future()
            core.submit(
                Ingest(
                    1,
                    "s",
                    2,
                    gone=[(PaneKey(host="h", tmux="default", pane="%2"), now)],
                    on_commit=lambda: done2.set_result(None),
                )
            )
            await done2
            core.panes[c].gone_at = now - 2 * 86400  # as if it went two days ago
            removed = await prune_once(core)
            async with core.engine.connect() as conn:
                counts = dict(
                    (
                        await conn.execute(
                            select(s.history.c.pane_id, func.count()).group_by(s.history.c.pane_id)
                        )
                    ).all()
                )
                left = {r[0] for r in (await conn.execute(select(s.panes.c.id))).all()}
                sessions = [r[0] for r in (await conn.execute(select(s.tmux_sessions.c.name))).all()]
            assert sessions == ["main"]  # three panes of one tmux session: one row
            assert counts.get(a, 0) == 1  # only its fresh "report" row from the ingest
            assert counts[b] == 5
            assert c not in counts and c not in left and c not in core.panes
            assert removed == 20 + 8

    asyncio.run(go())


async def _second(sub):  # type: ignore[no-untyped-def]
    sub.queue.get_nowait()
    return await sub.queue.get()


@contextlib.asynccontextmanager
async def running(db_url: str) -> AsyncIterator[Services]:
    """The server's services, started as `serve` starts them, on a database with tokens."""
    await make_tokens(db_url)
    app = create_app(Config(), resolve_url(db_url))
    async with app.router.lifespan_context(app):
        yield services_of(app)


async def commit_one(core: Core, op: Op) -> None:
    """Submit `op` and wait for its batch to commit."""
    done = asyncio.get_running_loop().create_future()
    op.on_commit = lambda: done.set_result(None)
    core.submit(op)
    await asyncio.wait_for(done, 10)


def test_the_writer_runs_the_commit_hook_of_every_kind_of_operation(db_url: str) -> None:
    """A hook set on any operation runs once its batch committed; none is silently
    ignored (the writer runs them, not each operation by choice)."""
    from paneboard_server.panes import commands
    from paneboard_server.panes.core import HostsDown, HostsUp, Purge, Reevaluate, Refresh, Seen

    async def go() -> None:
        async with running(db_url) as svc:
            core = svc.core
            loop = asyncio.get_running_loop()
            up = pane_update("h", "%1", "done")
            ops = [
                Ingest(1, "s", 1, panes=[up]),
                Reevaluate([1]),
                Seen(1),
                HostsDown(1),
                HostsUp(1),
                Refresh([1]),
                Refresh(None),
                Purge(0.0),
            ]
            kinds = {type(op) for op in ops}
            every = {c for c in vars(commands).values() if isinstance(c, type) and issubclass(c, commands.Op)}
            assert kinds == every - {commands.Op}  # a new kind of operation joins this test
            done = [loop.create_future() for _ in ops]
            for op, fut in zip(ops, done, strict=True):
                op.on_commit = lambda fut=fut: fut.set_result(None)
                core.submit(op)
            await asyncio.wait_for(asyncio.gather(*done), 10)

    asyncio.run(go())


def test_operations_queued_behind_a_batch_wait_and_commit_together(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Group commit under load: what queued while a batch ran, and what comes soon
    after, waits until `BATCH_SPACING` after that batch began and then shares one
    transaction, instead of each taking a commit of its own as it arrives."""
    from paneboard_server.panes import writer
    from paneboard_server.panes.core import HostsUp

    monkeypatch.setattr(writer, "BATCH_SPACING", 1.0)  # far longer than the submits take

    async def go() -> None:
        async with running(db_url) as svc:
            core = svc.core
            loop = asyncio.get_running_loop()
            first = loop.create_future()
            done = [loop.create_future() for _ in range(3)]
            ops = [HostsUp(1, on_commit=lambda fut=fut: fut.set_result(None)) for fut in done]

            def committed() -> None:
                core.submit(ops[0])  # queued before the writer is free again: it is behind
                first.set_result(None)

            up = pane_update("h", "%1", "working")
            core.submit(Ingest(1, "s", 1, panes=[up], on_commit=committed))
            await asyncio.wait_for(first, 10)
            before = core.stats["batches"]
            for op in ops[1:]:
                await asyncio.sleep(0.01)  # each alone in the queue when it comes
                core.submit(op)
            await asyncio.wait_for(asyncio.gather(*done), 10)
            assert core.stats["batches"] - before == 1

    asyncio.run(go())


def test_an_idle_writer_commits_at_once(db_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The spacing holds back only work that queued behind a batch: an operation that
    finds the writer idle commits at once, the first one and one right after a batch
    alike (with an hour's spacing both still commit)."""
    from paneboard_server.panes import writer
    from paneboard_server.panes.core import HostsUp

    monkeypatch.setattr(writer, "BATCH_SPACING", 3600.0)

    async def go() -> None:
        async with running(db_url) as svc:
            await commit_one(svc.core, Ingest(1, "s", 1, panes=[pane_update("h", "%1", "working")]))
            await asyncio.sleep(0.05)  # the writer is back waiting on an empty queue
            await commit_one(svc.core, HostsUp(1))

    asyncio.run(go())


def test_the_notifier_hears_every_change_only_while_answers_need_it(db_url: str) -> None:
    """The writer's feed builds a change for the notifier only when it is its business: a
    change into blocked, done or error, or any change while operators with devices may be
    offered answers (an offer must know when the pane last stopped being blocked)."""

    async def go() -> None:
        async with running(db_url) as svc:
            core, notify = svc.core, svc.notify
            seq = 0

            async def report(state: str) -> None:
                nonlocal seq
                seq += 1
                up = pane_update("h", "%1", state, kind="permission" if state == "blocked" else None)
                await commit_one(core, Ingest(1, "s", seq, panes=[up]))

            queued: list[str | None] = []
            notify.pane_changed = lambda change: queued.append(change.state)  # type: ignore[method-assign]
            for state in ("working", "blocked", "working", "done"):
                await report(state)
            assert queued == ["blocked", "done"]
            queued.clear()
            notify.operator_devices = True
            assert notify.offers is not None
            for state in ("working", "blocked", "working"):
                await report(state)
            assert queued == ["working", "blocked", "working"]

    asyncio.run(go())


def test_a_refused_ingest_runs_no_commit_hook_but_tells_its_sender(db_url: str) -> None:
    """A refused message changed nothing: its sender hears of it through on_fail only."""
    from paneboard_server.panes.core import HostsUp, Refused

    async def go() -> None:
        async with running(db_url) as svc:
            core = svc.core
            loop = asyncio.get_running_loop()
            up = pane_update("h", "%1", "working")
            await commit_one(core, Ingest(1, "s", 1, panes=[up]))
            failed = loop.create_future()
            committed: list[int] = []
            core.submit(
                Ingest(
                    2,
                    "s",
                    1,
                    panes=[up],  # host "h" belongs to collector 1
                    on_commit=lambda: committed.append(2),
                    on_fail=failed.set_result,
                )
            )
            exc = await asyncio.wait_for(failed, 10)
            assert isinstance(exc, Refused) and exc.host == "h"
            await commit_one(core, HostsUp(1))  # a batch after the refused one has committed
            assert committed == []

    asyncio.run(go())


def test_reclassify_gives_none_for_evidence_the_classifier_refuses() -> None:
    """Evidence the classifier refuses (EvidenceError: another collector version's, or
    malformed) keeps the collector's verdict, as no evidence does."""
    from paneboard_server.panes import reclassify

    for bad in ({"v": 999}, {"records": [{"x": 1}]}, {"records": "no"}):
        assert reclassify.classify(bad, 1.0) is None
        assert reclassify.deadline(bad, 1.0) is None
        assert reclassify.mark_seen(bad, 1.0) is None
    assert reclassify.classify(None, 1.0) is None and reclassify.mark_seen({}, 1.0) is None


def test_json_columns_encode_what_the_stdlib_did() -> None:
    """orjson for the hot path; what it refuses (an int beyond 64 bits, a non-str key)
    still encodes, through the stdlib, so nothing that stored before fails now."""
    from paneboard_server import fastjson

    for value in ({"a": [1, 2.5, None, True, "é\u2028"]}, {"n": 2**64}, {1: "x"}, []):
        assert json.loads(fastjson.dumps_text(value)) == json.loads(json.dumps(value))
    assert fastjson.dumps({"a": "é"}) == '{"a":"é"}'.encode()


def test_tune_gc_freezes_start_up_objects_and_raises_the_thresholds() -> None:
    import gc

    from paneboard_server import serve

    before = gc.get_threshold()
    try:
        serve.tune_gc()
        assert gc.get_threshold() == serve.GC_THRESHOLDS
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)
