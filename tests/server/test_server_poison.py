"""One collector cannot hurt another: poison messages (a seq past 64 bits, NUL in a msg,
a record or a pane key, NaN in evidence) are refused to their sender alone while an
honest collector beside it keeps every ack; the uplink drops what was refused instead of
resending it forever; hosts belong to the collector that announced them first. Against a
real `paneboard serve` on SQLite and on PostgreSQL."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import httpx
import websockets
from paneboard_agent.uplink import UplinkSink
from paneboard_protocol.text import sanitize_text
from pbserver import bearer, collector_token, connect_collector, make_tokens, pane_update, wait_until


def pane(host: str, pane_id: str, state: str = "working", **extra: Any) -> dict[str, Any]:
    return {**pane_update(host, pane_id, state).wire_json(), **extra}


async def refusal(ws: Any) -> tuple[dict[str, Any] | None, int, str]:
    """Read until the server closes: (the `refused` message if any, close code, reason)."""
    refused = None
    try:
        while True:
            m = json.loads(await asyncio.wait_for(ws.recv(), 10))
            if m.get("type") == "refused":
                refused = m
    except websockets.ConnectionClosed as exc:
        assert exc.rcvd is not None
        return refused, exc.rcvd.code, exc.rcvd.reason


POISON = [
    # (what, message after the hello, close code, words in the reason, the `at` it names)
    ("seq past 64 bits", {"type": "snapshot", "seq": 18446744073709551616, "t": 1.7e9}, 1007, "seq", "seq"),
    (
        "NUL in a pane key",
        {"type": "snapshot", "seq": 1, "t": 1.7e9, "panes": [pane("bad", "%1"), pane("bad", "%\x002")]},
        1007,
        "NUL",
        "panes.1.key.pane",
    ),
    (
        "NUL in a host name",
        {"type": "delta", "seq": 1, "ops": [{"op": "host", "host": "b\x00d", "reachable": True, "t": 1}]},
        1007,
        "NUL",
        "ops.0.host",
    ),
    (
        "NaN in evidence",
        {
            "type": "snapshot",
            "seq": 1,
            "t": 1.7e9,
            "panes": [pane("bad", "%1", evidence={"x": float("nan")})],
        },
        1007,
        "NaN",
        "panes.0.evidence.x",
    ),
]


async def collector_tokens(db: str, names: list[str]) -> list[str]:
    """Several collector tokens at once."""
    from paneboard_server.auth import accounts
    from paneboard_server.store.database import create_engine, resolve_url

    engine = create_engine(resolve_url(db))
    try:
        return [await accounts.create_token(engine, name, "collector") for name in names]
    finally:
        await engine.dispose()


def test_poison_messages_are_refused_to_their_sender_alone(db_url: str, server_factory: Any) -> None:
    tokens = asyncio.run(make_tokens(db_url))
    # A fresh token per poison connection: one token refused again and again is backed
    # off (the test below), which is not what this one is about.
    evils = asyncio.run(collector_tokens(db_url, [f"evil{i}" for i in range(6 * len(POISON))]))
    srv = server_factory(db_url)

    async def honest(stop: asyncio.Event) -> tuple[int, int]:
        """Deltas as fast as acks come back, 32 in flight; every one must be acked."""
        ws = await connect_collector(srv.url, tokens["collector"], "honest")
        await ws.send(json.dumps({"type": "snapshot", "seq": 1, "t": 1.7e9, "panes": [pane("good", "%0")]}))
        seq, acked = 1, 0
        while not stop.is_set() or acked < seq:
            while seq - acked < 32 and not stop.is_set():
                seq += 1
                op = {"op": "pane", "update": pane("good", f"%{seq % 50}", msg=f"n{seq}")}
                await ws.send(json.dumps({"type": "delta", "seq": seq, "ops": [op]}))
            m = json.loads(await asyncio.wait_for(ws.recv(), 20))  # a close here fails the test
            if m["type"] == "ack":
                acked = m["seq"]
        await ws.close()
        return seq, acked

    async def poisoner() -> list[tuple[str, int, str, dict[str, Any] | None]]:
        out = []
        for round_ in range(6):
            for what, msg, _, _, _ in POISON:
                ws = await connect_collector(srv.url, evils[len(out)], f"evil{round_}{len(out)}")
                # a text frame carries NUL and NaN as JSON allows (\u0000, NaN)
                await ws.send(json.dumps(msg))
                refused, code, why = await refusal(ws)
                out.append((what, code, why, refused))
        return out

    async def go() -> None:
        stop = asyncio.Event()
        task = asyncio.create_task(honest(stop))
        await asyncio.sleep(0.3)
        results = await poisoner()
        stop.set()
        sent, acked = await task
        assert acked == sent > 50
        expect = {what: (code, words, at) for what, _, code, words, at in POISON}
        for what, code, why, refused in results:
            want_code, words, at = expect[what]
            assert code == want_code and words in why, (what, code, why)
            assert refused is not None and refused["at"] == at, (what, refused)
        async with httpx.AsyncClient() as c:
            got = (await c.get(srv.url + "/api/panes", headers=bearer(tokens["viewer"]))).json()
        assert {p["host"] for p in got} == {"good"}  # nothing of any refused message was stored
        assert all(p["collector"] == "col" for p in got)

    asyncio.run(go())


HOSTILE = "a\x00b\x1b[2J\u202eevil\u200bz\ttab"


def test_text_is_cleaned_on_ingest_by_the_collectors_own_function(db_url: str, server_factory: Any) -> None:
    """NUL, ESC, RLO and ZWSP in msg, title, records (values and keys) are cleaned once, on
    ingest, by `sanitize_text` - the function the collector's classifier cleans with."""
    from paneboard_protocol import records
    from paneboard_server.ingest import wire

    assert wire.sanitize_text is sanitize_text and records.sanitize_text is sanitize_text
    clean = sanitize_text(HOSTILE)
    assert records.display_text(HOSTILE) == clean == "ab[2Jevilz tab"
    tokens = asyncio.run(make_tokens(db_url))
    srv = server_factory(db_url)

    async def go() -> None:
        async with httpx.AsyncClient() as c:
            stream = c.stream(
                "GET", srv.url + "/api/stream", headers=bearer(tokens["viewer"]), timeout=httpx.Timeout(30)
            )
            async with stream as r:
                lines = r.aiter_lines()
                ws = await connect_collector(srv.url, tokens["collector"], "s")
                rec = {"id": "r", "state": "blocked", "msg": HOSTILE, HOSTILE: HOSTILE}
                p = pane("h", "%1", "blocked", msg=HOSTILE, title=HOSTILE, session=HOSTILE, records=[rec])
                await ws.send(json.dumps({"type": "snapshot", "seq": 1, "t": 1.7e9, "panes": [p]}))
                assert json.loads(await ws.recv()) == {"type": "ack", "seq": 1}
                async for line in lines:
                    if line.startswith("data:") and '"panes":[{' in line:
                        live = json.loads(line[5:])["panes"][0]
                        break
            got = (await c.get(srv.url + "/api/panes", headers=bearer(tokens["viewer"]))).json()[0]
        for shown in (got, live):
            assert shown["msg"] == shown["title"] == shown["session"] == clean
            assert shown["records"] == [{"id": "r", "state": "blocked", "msg": clean, clean: clean}]
        await ws.close()

    asyncio.run(go())


def test_uplink_drops_a_refused_update_instead_of_resending_it(
    db_url: str, server_factory: Any, caplog: Any
) -> None:
    tokens = asyncio.run(make_tokens(db_url))
    srv = server_factory(db_url)

    async def go() -> None:
        up = UplinkSink(srv.url, tokens["collector"], backoff=(0.05, 0.2))
        await up.start()
        try:
            await up.pane_changed(pane_update("h", "%1", "working", msg="fine"))
            await up.pane_changed(pane_update("h", "%\x00", "blocked"))  # PostgreSQL cannot store it
            await up.pane_changed(pane_update("h", "%3", "idle"))
            await wait_until(lambda: up.connected.is_set() and up.buffer.idle, 20, "all acked")
            await asyncio.sleep(1.5)  # several back-off periods: a resend loop would show now
            assert up.connected.is_set() and not up.buffer.inflight
            async with httpx.AsyncClient() as c:
                got = (await c.get(srv.url + "/api/panes", headers=bearer(tokens["viewer"]))).json()
            assert sorted(p["pane"] for p in got) == ["%1", "%3"]
            # a new state of the refused pane would go again; of the others, at once
            await up.pane_changed(pane_update("h", "%1", "done", msg="later"))
            await wait_until(lambda: up.buffer.idle, 10, "ack after the refusal")
        finally:
            await up.close()
        refusals = [r for r in caplog.records if "server refused" in r.getMessage()]
        assert len(refusals) == 1, [r.getMessage() for r in caplog.records]
        log = srv.log.read_text() if srv.log else ""
        assert log.count("refused seq") == 1, log[-3000:]

    caplog.set_level("INFO", logger="paneboard.uplink")
    asyncio.run(go())


def test_a_collector_owns_the_hosts_it_announced_first(db_url: str, server_factory: Any) -> None:
    tokens = asyncio.run(make_tokens(db_url))
    evil = asyncio.run(collector_token(db_url, "evil"))
    srv = server_factory(db_url)

    async def go() -> None:
        ws = await connect_collector(srv.url, tokens["collector"], "s")
        await ws.send(json.dumps({"type": "snapshot", "seq": 1, "t": 1.7e9, "panes": [pane("vm", "%1")]}))
        assert json.loads(await ws.recv()) == {"type": "ack", "seq": 1}
        # The other collector's snapshot for `vm`, a delta for it, and a hello announcing it.
        for msg in (
            {"type": "snapshot", "seq": 1, "t": 1.7e9, "panes": [pane("vm", "%2"), pane("own", "%1")]},
            {"type": "delta", "seq": 1, "ops": [{"op": "host", "host": "vm", "reachable": False, "t": 1}]},
        ):
            other = await connect_collector(srv.url, evil, f"e{msg['type']}")
            if msg["type"] == "delta":
                await other.send(json.dumps({"type": "snapshot", "seq": 1, "t": 1.7e9}))
                assert json.loads(await other.recv())["type"] == "ack"
                msg = {**msg, "seq": 2}
            await other.send(json.dumps(msg))
            refused, code, why = await refusal(other)
            assert code == 4403 and "host 'vm' belongs to collector 'col'" in why, why
            assert refused is not None and refused["host"] == "vm"
        other = await websockets.connect(
            srv.url.replace("http", "ws") + "/api/ingest", additional_headers=bearer(evil)
        )
        await other.send(json.dumps({"type": "hello", "protocol": 1, "stream": "x", "hosts": ["vm"]}))
        refused, code, why = await refusal(other)
        assert code == 4403 and refused is not None and refused["host"] == "vm"
        # The owner still reports; the board shows its panes only, with their collector.
        await ws.send(
            json.dumps({"type": "delta", "seq": 2, "ops": [{"op": "pane", "update": pane("vm", "%3")}]})
        )
        assert json.loads(await ws.recv()) == {"type": "ack", "seq": 2}
        async with httpx.AsyncClient() as c:
            got = (await c.get(srv.url + "/api/panes", headers=bearer(tokens["viewer"]))).json()
            metrics = (await c.get(srv.url + "/metrics", headers=bearer(tokens["viewer"]))).text
        assert sorted((p["host"], p["pane"], p["collector"]) for p in got) == [
            ("vm", "%1", "col"),
            ("vm", "%3", "col"),
        ]
        assert 'paneboard_ingest_refused_total{reason="host"} 3.0' in metrics, metrics
        await ws.close()

    asyncio.run(go())


def test_hello_must_come_within_the_time_out(db_url: str, server_factory: Any) -> None:
    tokens = asyncio.run(make_tokens(db_url))
    srv = server_factory(db_url, config="[limits]\nhello_timeout = 0.5\n")

    async def go() -> None:
        ws = await websockets.connect(
            srv.url.replace("http", "ws") + "/api/ingest", additional_headers=bearer(tokens["collector"])
        )
        t0 = time.monotonic()
        _, code, why = await refusal(ws)
        assert code == 1008 and "no hello within 0.5 s" in why and time.monotonic() - t0 < 5

    asyncio.run(go())


def test_healthz_reports_a_writer_that_cannot_commit(db_url: str, server_factory: Any) -> None:
    from paneboard_server.store.database import create_engine, resolve_url
    from sqlalchemy import text

    tokens = asyncio.run(make_tokens(db_url))
    srv = server_factory(db_url)

    async def go() -> None:
        assert httpx.get(srv.url + "/healthz").json()["ok"] is True
        engine = create_engine(resolve_url(db_url))
        async with engine.begin() as conn:  # every report writes history: now it cannot
            await conn.execute(text("DROP TABLE history" + ("" if "sqlite" in db_url else " CASCADE")))
        await engine.dispose()
        ws = await connect_collector(srv.url, tokens["collector"], "s")
        await ws.send(json.dumps({"type": "snapshot", "seq": 1, "t": 1.7e9, "panes": [pane("h", "%1")]}))
        _, code, _ = await refusal(ws)
        assert code == 1011
        r = httpx.get(srv.url + "/healthz")
        assert r.status_code == 503 and r.json()["ok"] is False and "writer" in r.json()["error"], r.text
        # no login needed: the database's own words (the table it lacks) are not given away
        assert r.json()["detail"] == r.json()["error"] == "writer: database error", r.text
        assert "history" not in r.text and "Error" not in r.text, r.text

    asyncio.run(go())


def test_healthz_reports_a_writer_stuck_on_a_lock(db_url: str, server_factory: Any) -> None:
    """Another connection holds a lock the writer needs: PostgreSQL waits without end and
    reads (so the database check) still work, yet nothing commits. After
    `limits.writer_stall` /healthz says so; once the lock goes, the batch commits and
    /healthz is well again."""
    import sqlite3

    import asyncpg
    from sqlalchemy.engine import make_url

    tokens = asyncio.run(make_tokens(db_url))
    srv = server_factory(db_url, config="[limits]\nwriter_stall = 1\n")

    async def go() -> None:
        ws = await connect_collector(srv.url, tokens["collector"], "s")
        if db_url.startswith("sqlite"):
            lite = sqlite3.connect(make_url(db_url).database or "", isolation_level=None)
            lite.execute("BEGIN IMMEDIATE")  # the write lock; readers go on (WAL)

            async def release() -> None:
                lite.rollback()
                lite.close()
        else:
            pg = await asyncpg.connect(make_url(db_url).set(drivername="postgresql").render_as_string(False))
            hold = pg.transaction()
            await hold.start()
            await pg.execute("LOCK TABLE history IN EXCLUSIVE MODE")  # reads go on, inserts wait

            async def release() -> None:
                await hold.rollback()
                await pg.close()

        try:
            await ws.send(json.dumps({"type": "snapshot", "seq": 1, "t": 1.7e9, "panes": [pane("h", "%1")]}))

            async def stalled() -> Any:
                async with httpx.AsyncClient() as c:
                    r = await c.get(srv.url + "/healthz")
                return r if r.status_code == 503 else None

            # Well within SQLite's busy time-out (30 s), after which the writer would fail instead.
            r = await wait_until(stalled, 20, "/healthz to report the stuck writer")
            body = r.json()
            assert body["ok"] is False and "writer: one batch has run for" in body["error"], body
            assert "limits.writer_stall 1 s" in body["error"] and body["since"] <= time.time() - 1, body
        finally:
            await release()
        assert json.loads(await asyncio.wait_for(ws.recv(), 30)) == {"type": "ack", "seq": 1}
        r = httpx.get(srv.url + "/healthz")
        assert r.status_code == 200 and r.json()["ok"] is True, r.text
        await ws.close()

    asyncio.run(go())


def test_disconnecting_collectors_leave_no_pending_task(db_url: str, server_factory: Any) -> None:
    tokens = asyncio.run(make_tokens(db_url))
    srv = server_factory(db_url)

    async def go() -> None:
        for i in range(20):
            ws = await connect_collector(srv.url, tokens["collector"], f"s{i}")
            await ws.send(json.dumps({"type": "snapshot", "seq": 1, "t": 1.7e9, "panes": [pane("h", "%1")]}))
            assert json.loads(await ws.recv())["type"] == "ack"
            await ws.close()

    asyncio.run(go())
    srv.stop()  # the interpreter's last collection finds whatever was left pending
    assert srv.log is not None
    log = srv.log.read_text()
    assert log.count("collector col disconnected") == 20 and "Task was destroyed" not in log, log[-3000:]


def test_a_refused_token_is_backed_off_and_logged_once_a_burst(db_url: str, server_factory: Any) -> None:
    """A token whose snapshot is refused and that reconnects at once is served later each
    time (its next connection waits, one at a time), and its burst of refusals is one log
    line, while an honest collector beside it keeps every ack. Load can only make the
    refusals fewer: the bounds are upper ones."""
    tokens = asyncio.run(make_tokens(db_url))
    evil = asyncio.run(collector_token(db_url, "evil"))
    srv = server_factory(db_url)
    bad = {"type": "snapshot", "seq": 1, "t": 1.7e9, "panes": [pane("bad", "%\x001")]}
    attack_for = 4.0

    async def honest(stop: asyncio.Event) -> tuple[int, int]:
        ws = await connect_collector(srv.url, tokens["collector"], "honest")
        seq, acked = 0, 0
        while not stop.is_set() or acked < seq:
            while seq - acked < 8 and not stop.is_set():
                seq += 1
                op = {"op": "pane", "update": pane("good", f"%{seq % 20}", msg=f"n{seq}")}
                kind = "snapshot" if seq == 1 else "delta"
                body = {"panes": [op["update"]], "t": 1.7e9} if seq == 1 else {"ops": [op]}
                await ws.send(json.dumps({"type": kind, "seq": seq, **body}))
            m = json.loads(await asyncio.wait_for(ws.recv(), 30))  # a close here fails the test
            if m["type"] == "ack":
                acked = m["seq"]
        await ws.close()
        return seq, acked

    async def attacker() -> list[float]:
        """Reconnects at once after each refusal, for `attack_for` seconds and until it
        has four refusals; returns when each came (seconds since it started)."""
        t0 = time.monotonic()
        refused: list[float] = []
        while time.monotonic() - t0 < attack_for or len(refused) < 4:
            ws = await connect_collector(srv.url, evil, f"evil{len(refused)}")
            await ws.send(json.dumps(bad))
            got, code, _ = await refusal(ws)
            assert got is not None and code == 1007, (got, code)
            refused.append(time.monotonic() - t0)
        return refused

    async def at_once(n: int) -> list[int]:
        """`n` connections of the refused token at once: the close codes of those not served."""

        async def one() -> int | None:
            ws = await websockets.connect(
                srv.url.replace("http", "ws") + "/api/ingest", additional_headers=bearer(evil)
            )
            try:  # the close may come before the hello is sent
                await ws.send(json.dumps({"type": "hello", "protocol": 1, "stream": "x"}))
                await asyncio.wait_for(ws.recv(), 1.0)
            except TimeoutError:
                await ws.close()
                return None  # waiting to be served
            except websockets.ConnectionClosed as exc:
                return exc.rcvd.code if exc.rcvd is not None else -1
            await ws.close()
            return 0

        codes = await asyncio.gather(*(one() for _ in range(n)))
        return [c for c in codes if c is not None]

    async def go() -> None:
        stop = asyncio.Event()
        task = asyncio.create_task(honest(stop))
        refused = await attacker()
        closed = await at_once(4)  # just after the fourth refusal: the next waits 4 s
        stop.set()
        sent, acked = await task
        assert acked == sent > 8
        # two refusals at once, then one after 1 s, 2 s, 4 s: a few, not one per round trip
        early = [t for t in refused if t < attack_for]
        assert len(early) <= 4, refused
        # while one connection waits out the delay, the others are closed: try again later
        assert closed.count(1013) >= 3, closed

    asyncio.run(go())
    log = srv.log.read_text() if srv.log else ""
    lines = [ln for ln in log.splitlines() if "collector evil:" in ln]
    assert len(lines) == 1 and "refused seq 1" in lines[0], lines
