"""One source of limits (issue 21 item 2): what the wire accepts, every column can hold,
so a message that passes validation never fails the write batch it shares with other
collectors; and when the database refuses something anyway, the batch is bisected and
only the refused pane is dropped. Against real SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import httpx
import msgspec
import msgspec.inspect
import websockets
from paneboard_protocol import pane as pane_def
from pbserver import bearer, collector_token, connect_collector, make_tokens
from test_server_poison import pane

# Where each wire value a collector sends is stored: (validating model, field) -> columns.
# Record ids, states and kinds are not bounded by the wire field by field (records are
# free-form): `panes/flush.py` cuts them to their columns, so those columns are listed apart.
STORED: dict[tuple[str, str], list[str]] = {
    ("PaneKey", "host"): ["hosts.name", "waits.host", "answers.host"],
    ("PaneKey", "tmux"): ["panes.tmux", "tmux_sessions.tmux", "waits.tmux", "answers.tmux"],
    ("PaneKey", "pane"): ["panes.pane", "waits.pane", "answers.pane"],
    ("PaneUpdate", "session"): ["panes.session", "tmux_sessions.name", "waits.session"],
    ("PaneUpdate", "agent"): ["panes.agent", "history.agent", "waits.agent"],
    ("PaneUpdate", "state"): ["panes.state", "history.state", "waits.state", "history.prev_state"],
    ("PaneUpdate", "kind"): ["panes.kind", "history.kind", "waits.kind"],
    ("PaneUpdate", "msg"): ["panes.msg", "history.msg", "waits.msg"],
    ("PaneUpdate", "source"): ["panes.source", "history.source"],
    ("PaneUpdate", "window"): ["panes.window"],
    ("PaneUpdate", "title"): ["panes.title"],
    ("PaneUpdate", "process"): ["panes.process"],
    ("Hello", "version"): ["collectors.version"],
    ("Hello", "stream"): ["collectors.stream"],
    ("Hello", "hosts"): ["hosts.name"],
    ("Snapshot", "hosts"): ["hosts.name"],
    ("HostOp", "host"): ["hosts.name"],
    ("HostOp", "error"): ["hosts.error"],
    ("HostState", "error"): ["hosts.error"],
}
CUT_BY_THE_SERVER = {"pane_records.record_id", "pane_records.state", "pane_records.kind"}
# Tables a collector's messages write to; every bounded text column of theirs is above or
# is filled by the server itself (names it makes, hashes, states it derives).
COLLECTOR_TABLES = ("hosts", "tmux_sessions", "panes", "pane_records", "history", "collectors", "waits")
SERVER_MADE = {"history.reason", "waits.ended", "waits.end_state", "waits.answered_by"}


def _max_length(t: msgspec.inspect.Type) -> int | None:
    """The largest string a wire type (as the decoder reads it) admits; None: any.
    Lists and dict keys count by their items, literals by their longest member."""
    mi = msgspec.inspect
    if isinstance(t, mi.UnionType):
        found = [_max_length(x) for x in t.types if not isinstance(x, mi.NoneType)]
        return None if None in found else max(found, default=0)  # type: ignore[type-var]  # None ruled out
    if isinstance(t, mi.LiteralType):
        return max(len(v) for v in t.values)
    if isinstance(t, mi.ListType | mi.TupleType | mi.VarTupleType):
        return _max_length(t.item_type)
    if isinstance(t, mi.DictType):
        return _max_length(t.key_type)
    if isinstance(t, mi.StrType):
        return t.max_length
    raise AssertionError(f"not text: {t}")


def test_every_limit_the_wire_accepts_fits_every_column_it_is_stored_in() -> None:
    """One source of limits: a value the wire's validation lets through is never wider
    than a column it lands in (a `session` of 4096 characters passed and then failed
    `tmux_sessions.name VARCHAR(255)` on PostgreSQL, failing other collectors' batch)."""
    from paneboard_protocol import pane, wire
    from paneboard_server.store import schema
    from sqlalchemy import String

    def width(column: str) -> int | None:
        table, name = column.split(".")
        typ = schema.metadata.tables[table].c[name].type
        assert isinstance(typ, String), column
        return typ.length

    checked: set[str] = set()
    for (model, field), columns in STORED.items():
        info = msgspec.inspect.type_info(getattr(wire, model, None) or getattr(pane, model))
        assert isinstance(info, msgspec.inspect.StructType | msgspec.inspect.DataclassType)
        limit = _max_length(next(f.type for f in info.fields if f.name == field))
        assert limit is not None, f"{model}.{field} is unbounded on the wire"
        for column in columns:
            w = width(column)
            assert w is None or limit <= w, f"{model}.{field} admits {limit} characters, {column} holds {w}"
            checked.add(column)
    for table in COLLECTOR_TABLES:
        for c in schema.metadata.tables[table].c:
            name = f"{table}.{c.name}"
            if isinstance(c.type, String) and c.type.length is not None:
                assert name in checked | CUT_BY_THE_SERVER | SERVER_MADE, (
                    f"{name}: which wire limit fills it?"
                )
    # the record columns the server cuts to are exactly as wide as it cuts
    from paneboard_server.panes import flush

    cut = (flush._RECORD_ID, flush._RECORD_STATE, flush._RECORD_KIND)
    widths = tuple(width(f"pane_records.{c}") for c in ("record_id", "state", "kind"))
    assert cut == widths
    # the pane's own definition says the same: a sized column is at least its wire limit
    for name, limit in pane_def.WIRE_TEXT_MAX.items():
        sql_len = pane_def.BY_NAME[name].sql_len
        assert sql_len is None or limit <= sql_len, name


WIDE = "𝄞"  # four bytes in UTF-8: the widest a character gets


def test_a_pane_with_every_text_at_its_limit_is_stored(db_url: str, server_factory: Any) -> None:
    """Every name and text at the wire's limit, in four-byte characters, is acknowledged and
    read back whole (on PostgreSQL a 4096-character session failed its column)."""
    from paneboard_protocol import wire as pwire

    tokens = asyncio.run(make_tokens(db_url))
    srv = server_factory(db_url)
    at_limit = {name: WIDE * limit for name, limit in pane_def.WIRE_TEXT_MAX.items()}
    assert {"session", "window", "msg", "title", "process", "agent", "kind"} <= set(at_limit)
    host, tmux, pid = (
        WIDE * pane_def.NAME_MAX,
        WIDE * pane_def.NAME_MAX,
        "%" + WIDE * (pane_def.PANE_ID_MAX - 1),
    )
    p = pane("x", "%1", "blocked", **at_limit)
    p["key"] = {"host": host, "tmux": tmux, "pane": pid}
    error = WIDE * pane_def.TEXT_MAX

    async def go() -> None:
        ws = await websockets.connect(
            srv.url.replace("http", "ws") + "/api/ingest", additional_headers=bearer(tokens["collector"])
        )
        stream = WIDE * pwire.STREAM_MAX
        hello = {"type": "hello", "protocol": 1, "stream": stream, "version": WIDE * pwire.VERSION_MAX}
        await ws.send(json.dumps({**hello, "hosts": [host]}))
        assert json.loads(await ws.recv())["type"] == "welcome"
        hosts = {host: {"reachable": False, "error": error}}
        await ws.send(json.dumps({"type": "snapshot", "seq": 1, "t": 1.7e9, "hosts": hosts, "panes": [p]}))
        assert json.loads(await asyncio.wait_for(ws.recv(), 20)) == {"type": "ack", "seq": 1}
        await ws.close()
        async with httpx.AsyncClient() as c:
            got = (await c.get(srv.url + "/api/panes", headers=bearer(tokens["viewer"]))).json()
            hs = (await c.get(srv.url + "/api/hosts", headers=bearer(tokens["viewer"]))).json()
        assert len(got) == 1
        assert (got[0]["host"], got[0]["tmux"], got[0]["pane"]) == (host, tmux, pid)
        for name, value in at_limit.items():
            assert got[0][name] == value, name
        assert [h["error"] for h in hs] == [error]

    asyncio.run(go())


async def _poison_rounds(url: str, token: str, stop: asyncio.Event) -> list[tuple[int, str]]:
    """A collector that sends a thousand good deltas and then one pane whose tmux session
    name is longer than a VARCHAR(255) column (but not longer than the old wire limit),
    round after round: one batch of the writer then holds hundreds of its operations and the poison."""
    closes: list[tuple[int, str]] = []  # (code, reason) of each round; (0, "stored") if acked
    n = 0
    while not stop.is_set():
        n += 1
        ws = await connect_collector(url, token, f"poison{n}")
        await ws.send(json.dumps({"type": "snapshot", "seq": 1, "t": 1.7e9, "panes": [pane("evil", "%0")]}))
        seq = 1
        for i in range(1000):
            seq += 1
            op = {"op": "pane", "update": pane("evil", f"%{i % 40}", msg=f"m{n}.{i}")}
            await ws.send(json.dumps({"type": "delta", "seq": seq, "ops": [op]}))
        long = pane("evil", "%99", session="s" * (256 + (n * 377) % 3840))
        await ws.send(json.dumps({"type": "delta", "seq": seq + 1, "ops": [{"op": "pane", "update": long}]}))
        try:
            while json.loads(await asyncio.wait_for(ws.recv(), 30)) != {"type": "ack", "seq": seq + 1}:
                pass
            closes.append((0, "stored"))
            await ws.close()
        except websockets.ConnectionClosed as exc:
            closes.append((exc.rcvd.code if exc.rcvd else -1, exc.rcvd.reason if exc.rcvd else ""))
    return closes


#: seconds the honest collector sends for: poison rounds held its acks up by seconds each
HONEST_FOR = 4.0


def test_a_collector_sending_unstorable_panes_does_not_hold_up_anothers_acks(
    db_url: str, server_factory: Any
) -> None:
    """The honest collector sends a delta every 50 ms for 4 s (not waiting for acks) while
    the other sends poison round after round (several rounds in that time); at least 95 %
    of the honest messages are acknowledged by one second after the last was sent.
    Before, each poison round failed a batch that PostgreSQL then retried one operation at
    a time (~12 ms each), and the honest acks waited seconds behind it."""
    tokens = asyncio.run(make_tokens(db_url))
    evil = asyncio.run(collector_token(db_url, "evil"))
    srv = server_factory(db_url)

    async def honest(stop: asyncio.Event) -> tuple[int, int]:
        ws = await connect_collector(srv.url, tokens["collector"], "honest")
        await ws.send(json.dumps({"type": "snapshot", "seq": 1, "t": 1.7e9, "panes": [pane("good", "%0")]}))
        assert json.loads(await asyncio.wait_for(ws.recv(), 20)) == {"type": "ack", "seq": 1}
        acked = 1
        sent = 1

        async def reader() -> None:
            nonlocal acked
            async for raw in ws:
                m = json.loads(raw)
                assert m["type"] == "ack", m
                acked = max(acked, m["seq"])

        task = asyncio.create_task(reader())
        await asyncio.sleep(1)  # the poisoner is under way
        start = time.monotonic()
        while time.monotonic() - start < HONEST_FOR:
            sent += 1
            op = {"op": "pane", "update": pane("good", f"%{sent % 20}", msg=f"n{sent}")}
            await ws.send(json.dumps({"type": "delta", "seq": sent, "ops": [op]}))
            await asyncio.sleep(0.05)
        await asyncio.sleep(1)
        stop.set()
        got = acked
        task.cancel()
        await ws.close()
        return sent - 1, got - 1

    async def go() -> None:
        stop = asyncio.Event()
        poisoner = asyncio.create_task(_poison_rounds(srv.url, evil, stop))
        sent, acked = await honest(stop)
        closes = await poisoner
        assert sent > 20
        assert acked >= 0.95 * sent, f"{acked} of {sent} honest messages acknowledged within the window"
        assert len(closes) >= 2, closes  # the window held poison rounds, not one
        assert all(code == 1007 and "session" in why for code, why in closes), closes[:3]
        async with httpx.AsyncClient() as c:
            got = (await c.get(srv.url + "/api/panes", headers=bearer(tokens["viewer"]))).json()
        assert "%99" not in {p["pane"] for p in got}

    asyncio.run(go())


def test_a_failed_batch_is_bisected_and_only_the_refused_pane_is_dropped(db_url: str) -> None:
    """256 messages in one batch, one of them carrying a pane the database refuses (a value
    past what validation allows, put there behind validation's back: the wire's limits
    leave no such value, this is for the unforeseen). The batch is bisected - a handful
    of commits, not one per message - every message is acknowledged, the poisoned one
    stored without that pane, and its sender told which field of which pane it was,
    before the ack."""
    import math

    from paneboard_server.app import create_app
    from paneboard_server.config import Config
    from paneboard_server.panes.core import Ingest
    from paneboard_server.services import services_of
    from paneboard_server.store.database import resolve_url
    from pbserver import pane_update

    n = 256

    async def go() -> None:
        await make_tokens(db_url)
        app = create_app(Config(), resolve_url(db_url))
        async with app.router.lifespan_context(app):
            core = services_of(app).core
            loop = asyncio.get_running_loop()
            heard: list[tuple[int, str, str]] = []
            acks = [loop.create_future() for _ in range(n)]
            fails: list[BaseException] = []
            ops = []
            for seq in range(1, n + 1):
                panes = [pane_update("h", f"%{seq}.{i}", "working") for i in range(3)]
                if seq == 200:  # an integer no column holds (validation stops it at 100)
                    panes[1] = msgspec.structs.replace(panes[1], progress=2**70)
                ops.append(
                    Ingest(
                        1,
                        "s",
                        seq,
                        panes=panes,
                        where=[f"ops.{i}.update" for i in range(3)],
                        on_commit=lambda f=acks[seq - 1], seq=seq: (
                            heard.append((seq, "ack", "")),
                            f.set_result(None),
                        ),
                        on_fail=fails.append,
                        on_drop=lambda at, why, seq=seq: heard.append((seq, at, why)),
                    )
                )
            before = dict(core.stats)
            for op in ops:  # queued at once: the writer takes them as one batch
                core.submit(op)
            await asyncio.wait_for(asyncio.gather(*acks), 60)
            assert fails == []
            commits = core.stats["batches"] - before["batches"]
            failed = core.stats["transactions_failed"] - before["transactions_failed"]
            depth = math.ceil(math.log2(n))
            assert commits <= depth + 2, f"{commits} commits for a batch of {n} with one bad message"
            assert failed <= 2 * depth + 2 * 2 + 16, failed  # halves, panes, fields of the pane
            dropped = [h for h in heard if h[1] != "ack"]
            assert len(dropped) == 1
            seq, at, why = dropped[0]
            assert (seq, at) == (200, "ops.1.update.progress") and "cannot be stored" in why
            assert heard.index(dropped[0]) == heard.index((200, "ack", "")) - 1  # just before its ack
            stored = {p.pane for p in core.panes.values() if p.gone_at is None}
            assert len(stored) == 3 * n - 1 and "%200.1" not in stored and "%200.2" in stored
            assert core.stats["refused_unstorable"] - before["refused_unstorable"] == 1

    asyncio.run(go())
