"""Host ownership across several `paneboard serve` processes on one PostgreSQL: a host
belongs to the collector that claimed it first even when two collectors claim one new
host on two processes at the same instant (issue 21, item 5: both were accepted in 6 of
6 tries), the loser is refused like any other claim to another collector's host (4403),
and another collector's message in the loser's writer batch is committed all the same.
Two writers claiming new hosts in opposite orders deadlock; the one PostgreSQL picks is
run again and then refused like any loser, never failed.

The overlap is forced, not hoped for: a second connection holds a lock every report's
transaction needs (`history`, a collector's stream position, a host name's claim lock),
so both writers are inside their transactions at once; the test waits until PostgreSQL
shows both waiting before it lets go."""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import asyncpg
import httpx
import pytest
import websockets
from pbserver import bearer, collector_token, connect_collector, make_tokens, pane_update, wait_until
from sqlalchemy.engine import make_url

pytestmark = pytest.mark.postgres


def snapshot(seq: int, host: str, pane: str = "%1") -> str:
    return json.dumps(
        {
            "type": "snapshot",
            "seq": seq,
            "t": 1.7e9,
            "panes": [pane_update(host, pane, "working").wire_json()],
        }
    )


async def outcome(ws: Any) -> tuple[str, Any]:
    """("ack", seq) or ("refused", (close code, reason)): the server's answer to one message."""
    try:
        while True:
            m = json.loads(await asyncio.wait_for(ws.recv(), 30))
            if m.get("type") == "ack":
                return "ack", m["seq"]
    except websockets.ConnectionClosed as exc:
        assert exc.rcvd is not None
        return "refused", (exc.rcvd.code, exc.rcvd.reason)


def pg_dsn(db: str) -> str:
    return make_url(db).set(drivername="postgresql").render_as_string(hide_password=False)


async def lock_waiters(admin: asyncpg.Connection, n: int) -> bool:
    """At least `n` backends of this database wait for a lock (a table, a row or another
    transaction)."""
    return n <= int(
        await admin.fetchval(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()"
        )
    )


async def backends(admin: asyncpg.Connection) -> str:
    """What every other backend of this database is doing: said when the writers are not
    both seen waiting, so a time-out shows which one was missing and where it was."""
    rows = await admin.fetch(
        "SELECT pid, state, wait_event_type, wait_event, left(query, 120) AS query FROM pg_stat_activity "
        "WHERE datname = current_database() AND pid <> pg_backend_pid() ORDER BY pid"
    )
    return "\n".join(str(dict(r)) for r in rows)


async def until_both_wait(admin: asyncpg.Connection) -> None:
    """Until two writers wait for a lock; if they never do, which backends were where."""
    try:
        await wait_until(lambda: lock_waiters(admin, 2), 30, "both writers inside their transactions")
    except AssertionError as exc:
        raise AssertionError(f"{exc}; the backends:\n{await backends(admin)}") from None


async def metric(url: str, token: str, name: str) -> float:
    async with httpx.AsyncClient() as c:
        text = (await c.get(url + "/metrics", headers=bearer(token))).text
    m = re.search(rf"^{name} (\S+)$", text, re.M)
    assert m is not None, text
    return float(m.group(1))


@pytest.mark.parametrize("db_url", ["postgres"], indirect=True)
def test_two_collectors_claiming_one_new_host_on_two_processes_one_wins(
    db_url: str, server_factory: Any
) -> None:
    tokens = asyncio.run(make_tokens(db_url))
    two = asyncio.run(collector_token(db_url, "two"))
    a = server_factory(db_url)
    b = server_factory(db_url)

    async def round_(n: int, forced: bool) -> None:
        host = f"new{n}"
        first, second = (a, b) if n % 2 == 0 else (b, a)
        w1 = await connect_collector(first.url, tokens["collector"], f"r{n}")
        w2 = await connect_collector(second.url, two, f"r{n}")
        admin = await asyncpg.connect(pg_dsn(db_url))
        try:
            if forced:
                hold = admin.transaction()
                await hold.start()
                await admin.execute("LOCK TABLE history IN EXCLUSIVE MODE")  # reads go on, inserts wait
            await asyncio.gather(w1.send(snapshot(1, host)), w2.send(snapshot(1, host)))
            if forced:
                # Both writers are inside their transactions, claim made or being made.
                await until_both_wait(admin)
                await hold.rollback()
            got = await asyncio.gather(outcome(w1), outcome(w2))
            owners = await admin.fetch(
                "SELECT t.name FROM hosts h JOIN tokens t ON t.id = h.collector_id WHERE h.name = $1", host
            )
        finally:
            await admin.close()
            await w1.close()
            await w2.close()
        kinds = sorted(k for k, _ in got)
        assert kinds == ["ack", "refused"], (n, forced, got)
        winner = "col" if got[0][0] == "ack" else "two"
        code, why = next(v for k, v in got if k == "refused")
        assert code == 4403 and f"host {host!r} belongs to collector {winner!r}" in why, (n, why)
        assert [r["name"] for r in owners] == [winner], (n, owners)

    async def go() -> None:
        for n in range(6):
            await round_(n, forced=n < 3)

    asyncio.run(go())


def delta(seq: int, host: str, pane: str) -> str:
    op = {"op": "pane", "update": pane_update(host, pane, "working").wire_json()}
    return json.dumps({"type": "delta", "seq": seq, "ops": [op]})


@pytest.mark.parametrize("db_url", ["postgres"], indirect=True)
def test_the_loser_of_a_race_is_refused_alone_within_its_writer_batch(
    db_url: str, server_factory: Any
) -> None:
    """B's writer batch holds the losing claim and another collector's report: the
    claim waits for A's transaction, is refused when A commits, and the report beside it
    commits in the same batch (no failed batch, no retry one by one)."""
    tokens = asyncio.run(make_tokens(db_url))
    two = asyncio.run(collector_token(db_url, "two"))
    three = asyncio.run(collector_token(db_url, "three"))
    a = server_factory(db_url)
    b = server_factory(db_url)
    viewer = tokens["viewer"]

    async def queue(srv: Any) -> float:
        return await metric(srv.url, viewer, "paneboard_writer_queue")

    async def go() -> None:
        c1 = await connect_collector(a.url, tokens["collector"], "one")
        await c1.send(snapshot(1, "base1"))
        assert await outcome(c1) == ("ack", 1)
        c3 = await connect_collector(b.url, three, "three")
        await c3.send(snapshot(1, "base3"))
        assert await outcome(c3) == ("ack", 1)
        c2 = await connect_collector(b.url, two, "two")
        admin = await asyncpg.connect(pg_dsn(db_url))
        lock1 = await asyncpg.connect(pg_dsn(db_url))
        lock3 = await asyncpg.connect(pg_dsn(db_url))
        try:
            ids = {r["name"]: r["id"] for r in await admin.fetch("SELECT id, name FROM tokens")}
            # Each hold blocks one collector's stream position, written by every report.
            hold1, hold3 = lock1.transaction(), lock3.transaction()
            for conn, hold, name in ((lock1, hold1, "col"), (lock3, hold3, "three")):
                await hold.start()
                await conn.execute("SELECT 1 FROM collectors WHERE token_id = $1 FOR UPDATE", ids[name])
            await c1.send(delta(2, "x", "%1"))  # A claims x, then waits for hold1
            await c3.send(delta(2, "base3", "%2"))  # B's batch 1 waits for hold3
            await wait_until(lambda: lock_waiters(admin, 2), 30, "A and B waiting")
            await c2.send(snapshot(1, "x"))  # both queue on B behind batch 1: one batch
            await c3.send(delta(3, "base3", "%3"))
            await wait_until(lambda: _equals(queue(b), 2), 30, "two operations queued on B")
            await hold3.rollback()
            assert await outcome(c3) == ("ack", 2)
            await wait_until(lambda: _equals(queue(b), 0), 30, "B's writer to take its second batch")
            # B's claim of x waits for A's transaction (A still waits for hold1).
            await wait_until(lambda: lock_waiters(admin, 2), 30, "B's claim waiting for A's")
            await hold1.rollback()
            assert await outcome(c1) == ("ack", 2)
            kind, (code, why) = await outcome(c2)
            assert (kind, code) == ("refused", 4403) and "host 'x' belongs to collector 'col'" in why, why
            assert await outcome(c3) == ("ack", 3)
            assert await metric(b.url, viewer, "paneboard_batches_retried_total") == 0
            assert await metric(b.url, viewer, "paneboard_commit_failures_total") == 0
            owners = await admin.fetch("SELECT collector_id FROM hosts WHERE name = 'x'")
            assert [r["collector_id"] for r in owners] == [ids["col"]]
        finally:
            for conn in (admin, lock1, lock3):
                await conn.close()
            for ws in (c1, c2, c3):
                await ws.close()

    asyncio.run(go())


@pytest.mark.parametrize("db_url", ["postgres"], indirect=True)
def test_a_collector_moving_to_another_process_keeps_a_host_that_process_never_saw(
    db_url: str, server_factory: Any
) -> None:
    """A host with no panes, created through A, is unknown to B's memory (B re-reads
    hosts only with panes): the collector's snapshot on B must find its own row, not
    insert a second one (that failed every batch with 1011, and the collector looped)."""
    tokens = asyncio.run(make_tokens(db_url))
    a = server_factory(db_url)
    b = server_factory(db_url)
    hosts = {"quiet": {"reachable": True, "error": None}}

    async def go() -> None:
        for srv, stream in ((a, "s1"), (b, "s2")):
            ws = await connect_collector(srv.url, tokens["collector"], stream)
            await ws.send(json.dumps({"type": "snapshot", "seq": 1, "t": 1.7e9, "hosts": hosts, "panes": []}))
            assert await outcome(ws) == ("ack", 1), srv.url
            await ws.close()
        async with httpx.AsyncClient() as c:
            r = await c.get(b.url + "/healthz")
        assert r.status_code == 200, r.text

    asyncio.run(go())


@pytest.mark.parametrize("db_url", ["postgres"], indirect=True)
def test_a_collector_moving_to_a_process_that_already_wrote_positions_is_acked(
    db_url: str, server_factory: Any
) -> None:
    """B has written a collector's stream position before (so it knows which collectors
    have a row); then `col` reports through A for the first time and moves to B. B's
    memory says `col` has no row: its write must not insert a second one (that failed
    the batch with 1011, the collector's every first report after a move)."""
    tokens = asyncio.run(make_tokens(db_url))
    two = asyncio.run(collector_token(db_url, "two"))
    a = server_factory(db_url)
    b = server_factory(db_url)

    async def report(srv: Any, token: str, stream: str, host: str) -> tuple[str, Any]:
        ws = await connect_collector(srv.url, token, stream)
        try:
            await ws.send(snapshot(1, host))
            return await outcome(ws)
        finally:
            await ws.close()

    async def go() -> None:
        assert await report(b, two, "s1", "h-two") == ("ack", 1)
        assert await report(a, tokens["collector"], "s2", "h-col") == ("ack", 1)
        assert await report(b, tokens["collector"], "s3", "h-col") == ("ack", 1)
        async with httpx.AsyncClient() as c:
            text = (await c.get(b.url + "/metrics", headers=bearer(tokens["viewer"]))).text
        assert re.search(r"^paneboard_commit_failures_total 0\.0$", text, re.M), text

    asyncio.run(go())


@pytest.mark.parametrize("db_url", ["postgres"], indirect=True)
def test_writers_claiming_new_hosts_in_opposite_orders_deadlock_and_one_is_run_again(
    db_url: str, server_factory: Any
) -> None:
    """A's batch claims q then p, B's batch p then q, each holding its first lock when it
    asks for the second: PostgreSQL ends one transaction (a deadlock). That batch is run
    again once the other has committed, and its claims are refused (4403) like any
    loser's: no 1011, no commit failure, one owner per name."""
    from paneboard_server.panes.tx import host_lock_key

    tokens = asyncio.run(make_tokens(db_url))
    names = ["c1", "c2", "c3", "c4", "sa", "sb"]
    tok = {n: asyncio.run(collector_token(db_url, n)) for n in names}
    a = server_factory(db_url)
    b = server_factory(db_url)
    viewer = tokens["viewer"]

    async def queue(srv: Any) -> float:
        return await metric(srv.url, viewer, "paneboard_writer_queue")

    async def go() -> None:
        ws = {n: await connect_collector((a if n in ("c1", "c2", "sa") else b).url, tok[n], n) for n in names}
        for n, host in (("sa", "base-a"), ("sb", "base-b")):
            await ws[n].send(snapshot(1, host))
            assert await outcome(ws[n]) == ("ack", 1)
        admin = await asyncpg.connect(pg_dsn(db_url))
        stall = {n: await asyncpg.connect(pg_dsn(db_url)) for n in ("sa", "sb")}
        try:
            ids = {r["name"]: r["id"] for r in await admin.fetch("SELECT id, name FROM tokens")}
            holds = {n: stall[n].transaction() for n in stall}
            for n, conn in stall.items():  # each writer busy with a batch that waits
                await holds[n].start()
                await conn.execute("SELECT 1 FROM collectors WHERE token_id = $1 FOR UPDATE", ids[n])
            # every claim of p or q waits until the test lets both go at once
            keys = [host_lock_key(h) for h in "pq"]
            await admin.execute("SELECT pg_advisory_lock($1), pg_advisory_lock($2)", *keys)
            await ws["sa"].send(delta(2, "base-a", "%2"))
            await ws["sb"].send(delta(2, "base-b", "%2"))
            await wait_until(lambda: lock_waiters(admin, 2), 30, "both writers busy")
            # queued behind: one batch each, in opposite orders
            for srv, first, second in ((a, ("c1", "q"), ("c2", "p")), (b, ("c3", "p"), ("c4", "q"))):
                for n, (who, host) in enumerate((first, second), 1):
                    await ws[who].send(snapshot(1, host))
                    await wait_until(lambda srv=srv, n=n: _equals(queue(srv), n), 30, f"{who} queued")
            for n in stall:
                await holds[n].rollback()
                assert await outcome(ws[n]) == ("ack", 2)
            # each writer's first claim waits on the test's lock now
            await wait_until(lambda: lock_waiters(admin, 2), 30, "both batches at their first claim")
            await admin.execute("SELECT pg_advisory_unlock_all()")
            got = {n: await outcome(ws[n]) for n in ("c1", "c2", "c3", "c4")}
            reruns = [await metric(srv.url, viewer, "paneboard_batches_rerun_total") for srv in (a, b)]
            failures = [await metric(srv.url, viewer, "paneboard_commit_failures_total") for srv in (a, b)]
            bisected = [await metric(srv.url, viewer, "paneboard_batches_retried_total") for srv in (a, b)]
            owners = {
                r["host"]: r["owner"]
                for r in await admin.fetch(
                    "SELECT h.name AS host, t.name AS owner FROM hosts h"
                    " JOIN tokens t ON t.id = h.collector_id WHERE h.name IN ('p', 'q')"
                )
            }
        finally:
            for conn in (admin, *stall.values()):
                await conn.close()
            for w in ws.values():
                await w.close()
        winners = ("c1", "c2") if got["c1"][0] == "ack" else ("c3", "c4")
        losers = {"c1", "c2", "c3", "c4"} - set(winners)
        assert all(got[w] == ("ack", 1) for w in winners), got
        for loser in losers:
            kind, (code, why) = got[loser]
            assert (kind, code) == ("refused", 4403) and "belongs to collector" in why, got
        assert sorted(reruns) == [0, 1], reruns  # the deadlock happened, on one side
        assert failures == [0, 0] and bisected == [0, 0], (failures, bisected)
        hosts = {"c1": "q", "c2": "p", "c3": "p", "c4": "q"}
        assert owners == {hosts[w]: w for w in winners}, owners

    asyncio.run(go())


async def _equals(v: Any, n: float) -> bool:
    return (await v) == n
