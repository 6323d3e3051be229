"""`WS /api/ingest`: one collector's uplink (protocol in docs/wire.md).

The handler validates each message whole, turns it into one writer operation, and
acknowledges a sequence number only after the writer has committed it, so an ack is
a promise that the change survives a restart. Duplicates after a resend are
re-acknowledged and ignored; a gap makes the server ask for a snapshot.

A message refused (invalid, not storable, a claim to another collector's host, over a
cap) closes this connection alone, after a `refused` message naming its `seq` and the
offending field, so the collector can drop that part instead of resending it forever.
A token refused again and again has its next connections delayed, and each burst of its
refusals logged once (`refusals.py`).
A pane the database refuses although it passed validation is the exception: the rest
of its message is stored and acknowledged, and the collector hears of that pane alone
in a `refused` message sent before the ack, on a connection that stays open.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Callable
from typing import Any

from paneboard_protocol import wire as pwire
from paneboard_protocol.wire import Answered, Delta, GoneOp, Hello, HostState, PaneOp, Screen, Snapshot
from sqlalchemy import select
from starlette.websockets import WebSocket, WebSocketDisconnect

from .. import __version__
from ..auth import Holder, Principal, lookup_token, note_use_while_connected
from ..panes import Core, HostsDown, HostsUp, Ingest, Refused, Unstorable
from ..store import schema as s
from .refusals import QUIET, RefusedTokens
from .wire import PROTOCOL, WireError, parse, reason

log = logging.getLogger("paneboard.ingest")

CLOSE_UNAUTHORIZED = 4401
CLOSE_FORBIDDEN = 4403  # a claim to another collector's host, or over a cap
CLOSE_REPLACED = 4409
CLOSE_INVALID = 1007
CLOSE_POLICY = 1008
CLOSE_TOO_BIG = 1009
CLOSE_SERVER_ERROR = 1011
CLOSE_TRY_LATER = 1013


class Connection:
    """One connected collector: its outbox (one sender task) and its sequence state."""

    def __init__(
        self, ws: WebSocket, collector_id: int, name: str, refusals: RefusedTokens | None = None
    ) -> None:
        self.ws = ws
        self.refusals = refusals
        self.collector_id = collector_id
        self.name = name
        self.outbox: asyncio.Queue[pwire.ServerMessage | None] = asyncio.Queue(10000)
        self.acked = -1
        self.ack_sent = -1
        self.ack_event = asyncio.Event()
        self.closing: tuple[int, str] | None = None
        self.last_words: pwire.Refused | None = None  # sent just before the close
        self.failed = False  # an operation of this connection was refused or lost
        self.credential: str | None = None  # the token's hash (revocation compares it)

    def send(self, msg: pwire.ServerMessage) -> None:
        try:
            self.outbox.put_nowait(msg)
        except asyncio.QueueFull:
            self.close(CLOSE_POLICY, "collector is not reading its socket")

    def ack(self, seq: int) -> None:
        if seq > self.acked:
            self.acked = seq
            self.ack_event.set()

    def resend_ack(self) -> None:
        if self.acked >= 0:
            self.ack_sent = -1
            self.ack_event.set()

    def dropped(self, seq: int, at: str, why: str) -> None:
        """A pane of message `seq` the database refused; the rest was stored. Queued before
        the message's ack (the sender sends what is queued before an ack), so the
        collector still holds the message and can quarantine the pane `at` names."""
        text = f"refused seq {seq}: {at}: {why}"
        log.warning("collector %s: %s", self.name, text)
        self.send(pwire.refused(seq, at, None, text))

    def close(self, code: int, why: str) -> None:
        if self.closing is None:
            self.closing = (code, why)
            self.ack_event.set()
            with contextlib.suppress(asyncio.QueueFull):
                self.outbox.put_nowait(None)

    def refuse(
        self, code: int, why: str, seq: int | None, at: str | None = None, host: str | None = None
    ) -> None:
        """Close with `why`, first telling the collector what exactly was refused."""
        self.failed = True
        if self.closing is None:
            self.last_words = pwire.refused(seq, at, host, why)
            self.blame(f"refused seq {seq}: {why}")
        self.close(code, reason(why))

    def blame(self, text: str) -> None:
        """A refusal that is the collector's doing: counted against its token, and logged
        when it starts a burst (its next connections are delayed meanwhile)."""
        if self.refusals is None or self.refusals.refused(self.collector_id):
            more = (
                ""
                if self.refusals is None
                else f" (its next refusals are not logged until {QUIET:g} s pass without one)"
            )
            log.warning("collector %s: %s%s", self.name, text, more)
        else:
            log.debug("collector %s: %s", self.name, text)

    async def sender(self) -> None:
        try:
            await self._send_loop()
        finally:
            if self.last_words is not None:
                with contextlib.suppress(Exception):
                    await self.ws.send_text(pwire.encode(self.last_words))

    async def _send_loop(self) -> None:
        while True:
            get = asyncio.ensure_future(self.outbox.get())
            ack = asyncio.ensure_future(self.ack_event.wait())
            try:
                done, _ = await asyncio.wait({get, ack}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                # Never leave them pending: a pending task that is garbage-collected logs
                # "Task was destroyed but it is pending" (once per collector disconnect).
                for f in (get, ack):
                    if not f.done():
                        f.cancel()
            if self.closing is not None:
                return
            # What was queued goes before the ack: a `refused` for a pane of the message
            # the ack covers (queued before that ack was set) must reach the collector
            # while it still holds that message. An ack set while these are sent waits
            # for the next turn, behind what was queued with it.
            acked = self.acked
            if ack in done:
                self.ack_event.clear()
            if get in done:
                msg = get.result()
                if msg is None:
                    return
                await self.ws.send_text(pwire.encode(msg))
            while not self.outbox.empty():
                msg = self.outbox.get_nowait()
                if msg is None:
                    return
                await self.ws.send_text(pwire.encode(msg))
            if acked > self.ack_sent:
                self.ack_sent = acked
                await self.ws.send_text(pwire.encode(pwire.ack(acked)))


class IngestRegistry:
    """Which collectors are connected to this process, and their grace timers."""

    def __init__(self, core: Core, refusals: RefusedTokens | None = None) -> None:
        self.core = core
        self.connections: dict[int, Connection] = {}
        self.timers: dict[int, asyncio.TimerHandle] = {}
        # Screens and answers travel beside the seq stream (docs/wire.md): who takes them,
        # and who hears that a collector (re)connected (to re-send its watches).
        self.on_side: Callable[[int, Screen | Answered], None] | None = None
        self.on_attach: list[Callable[[int], None]] = []
        self.on_detach: list[Callable[[int], None]] = []  # its last connection here went
        self.refusals = refusals or RefusedTokens()

    def attach(self, conn: Connection) -> None:
        old = self.connections.get(conn.collector_id)
        if old is not None:
            old.close(CLOSE_REPLACED, "replaced by a newer connection with the same token")
        self.connections[conn.collector_id] = conn
        t = self.timers.pop(conn.collector_id, None)
        if t is not None:
            t.cancel()
        self.core.seen_routes[conn.collector_id] = conn.send
        for f in self.on_attach:
            f(conn.collector_id)

    def detach(self, conn: Connection) -> None:
        cid = conn.collector_id
        if self.connections.get(cid) is not conn:
            return
        del self.connections[cid]
        self.core.seen_routes.pop(cid, None)
        for f in self.on_detach:
            f(cid)
        grace = self.core.cfg.server.grace_period
        loop = asyncio.get_running_loop()

        def expire() -> None:
            self.timers.pop(cid, None)
            self.core.submit(HostsDown(cid, still_away=lambda: cid not in self.connections))

        self.timers[cid] = loop.call_later(grace, expire)

    def close_all(self) -> None:
        for t in self.timers.values():
            t.cancel()
        for c in list(self.connections.values()):
            c.close(1001, "server shutting down")

    def holders(self) -> list[Holder]:
        """The connected collectors as holders of their tokens: `Revocation` ends them."""

        def end(c: Connection) -> Callable[[str], None]:
            return lambda _why: c.close(CLOSE_UNAUTHORIZED, "unauthorized: token revoked")

        return [
            Holder(
                Principal("collector", c.name, c.collector_id, readonly=False, credential=c.credential),
                end(c),
                "ingest",
            )
            for c in list(self.connections.values())
        ]


def _bearer(ws: WebSocket) -> str:
    auth = ws.headers.get("authorization", "")
    if auth[:7].lower() == "bearer ":
        return auth[7:].strip()
    return ""


async def _receive_text(ws: WebSocket) -> str:
    msg = await ws.receive()
    if msg["type"] == "websocket.disconnect":
        raise WebSocketDisconnect(msg.get("code", 1000))
    if msg.get("text") is not None:
        return msg["text"]
    data = msg.get("bytes") or b""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise WireError("invalid message: not UTF-8") from None


def _refused_at(exc: WireError) -> str | None:
    """`snapshot.panes.3.msg` -> `panes.3.msg`: the path inside the message."""
    at = exc.at
    if at and at.split(".", 1)[0] in ("hello", "snapshot", "delta"):
        at = at.split(".", 1)[1] if "." in at else None
    return at


async def handle(ws: WebSocket, core: Core, registry: IngestRegistry) -> None:
    limits = core.cfg.limits
    await ws.accept()
    principal = await lookup_token(core.engine, _bearer(ws), "collector")
    if principal is None:
        await ws.close(CLOSE_UNAUTHORIZED, "unauthorized: unknown or revoked collector token")
        return
    cid = principal.id
    refusals = registry.refusals
    wait = refusals.delay(cid)
    if wait > 0:
        # Refused lately: this connection is served later, and only one waits at a time.
        core.stats["ingest_delayed"] += 1
        if cid in refusals.waiting:
            await ws.close(CLOSE_TRY_LATER, "refused lately: try again later")
            return
        refusals.waiting.add(cid)
        try:
            await asyncio.sleep(wait)
        finally:
            refusals.waiting.discard(cid)
    core.collector_names[cid] = principal.name
    conn = Connection(ws, cid, principal.name, refusals)
    conn.credential = principal.credential
    sender: asyncio.Task[None] | None = None
    in_use = asyncio.create_task(note_use_while_connected(core.engine, cid))  # `token list`'s "last used"
    reader: asyncio.Task[None] | None = None
    try:
        try:
            first = await asyncio.wait_for(_receive_text(ws), limits.hello_timeout)
            hello = parse(first, limits.max_message_bytes, limits.max_panes_per_message)
        except TimeoutError:
            conn.blame("no hello")
            await ws.close(CLOSE_POLICY, f"no hello within {limits.hello_timeout:g} s")
            return
        except WireError as exc:
            conn.blame(f"invalid hello: {exc}")
            await ws.close(CLOSE_INVALID, reason(str(exc)))
            return
        if not isinstance(hello, Hello):
            conn.blame("expected a hello first")
            await ws.close(CLOSE_POLICY, "expected a hello first")
            return
        if hello.protocol != PROTOCOL:
            await ws.close(CLOSE_POLICY, f"unsupported protocol {hello.protocol} (server speaks {PROTOCOL})")
            return
        async with core.engine.connect() as db:
            row = (await db.execute(select(s.collectors).where(s.collectors.c.token_id == cid))).first()
        known = row is not None and row.stream == hello.stream and row.last_seq is not None
        last = int(row.last_seq) if known and row is not None else -1
        need_snapshot = not known
        core.input_hosts[cid] = frozenset(hello.input)
        registry.attach(conn)
        core.submit(HostsUp(cid))
        conn.acked = conn.ack_sent = last
        await ws.send_text(pwire.encode(pwire.welcome(__version__, last if known else None, need_snapshot)))
        sender = asyncio.create_task(conn.sender())
        log.info("collector %s connected (stream %s, acked %s)", principal.name, hello.stream, last)
        for name in hello.hosts:
            owner = core.host_owner.get(name)
            if owner is not None and owner != cid:
                core.stats["refused_host"] += 1
                who = core.collector_name(owner) or f"#{owner}"
                conn.refuse(CLOSE_FORBIDDEN, f"host {name!r} belongs to collector {who!r}", None, host=name)
                break

        def failer(seq: int) -> Any:
            def on_fail(exc: BaseException) -> None:
                if isinstance(exc, Refused):
                    conn.refuse(CLOSE_FORBIDDEN, f"refused seq {seq}: {exc}", seq, host=exc.host)
                elif isinstance(exc, Unstorable):
                    conn.refuse(CLOSE_INVALID, f"refused seq {seq}: cannot be stored: {exc}", seq)
                else:
                    conn.failed = True
                    conn.close(CLOSE_SERVER_ERROR, "server could not store the update; reconnect and resend")

            return on_fail

        def alive() -> bool:
            return not conn.failed

        async def read() -> None:
            """The collector's messages, one after another, until it goes or breaks the rules.

            Plain awaits, one message at a time: a task and an `asyncio.wait` per message
            (to watch the sender alongside) were a visible share of the server's CPU at
            high rates; the sender is watched once, below, for the whole connection."""
            nonlocal last, need_snapshot
            while True:
                text = await _receive_text(ws)
                try:
                    msg = parse(text, limits.max_message_bytes, limits.max_panes_per_message)
                except WireError as exc:
                    code = CLOSE_TOO_BIG if "too large" in str(exc) else CLOSE_INVALID
                    core.stats["refused_invalid"] += 1
                    conn.refuse(code, str(exc), exc.seq, _refused_at(exc))
                    return
                if isinstance(msg, Hello):
                    conn.blame("hello sent twice")
                    conn.close(CLOSE_POLICY, "hello sent twice")
                    return
                if isinstance(msg, Screen | Answered):
                    if registry.on_side is not None:
                        registry.on_side(cid, msg)
                    continue
                if isinstance(msg, Snapshot):
                    if msg.seq <= last:
                        conn.resend_ack()
                        continue
                    last = msg.seq
                    need_snapshot = False
                    seq = msg.seq
                    await core.submit_ingest(
                        Ingest(
                            cid,
                            hello.stream,
                            seq,
                            hello.version,
                            snapshot_hosts=dict(msg.hosts),
                            panes=list(msg.panes),
                            on_commit=functools.partial(conn.ack, seq),
                            on_fail=failer(seq),
                            alive=alive,
                            where=[f"panes.{i}" for i in range(len(msg.panes))],
                            on_drop=functools.partial(conn.dropped, seq),
                        )
                    )
                    continue
                assert isinstance(msg, Delta)
                if need_snapshot:
                    continue  # a snapshot was asked for; deltas before it are superseded by it
                if msg.seq <= last:
                    conn.resend_ack()  # a resend of something already applied: ignore it, ack again
                    continue
                if msg.seq != last + 1:
                    need_snapshot = True
                    conn.send(pwire.resync(f"gap: expected seq {last + 1}, got {msg.seq}"))
                    continue
                last = msg.seq
                seq = msg.seq
                op = Ingest(
                    cid,
                    hello.stream,
                    seq,
                    hello.version,
                    on_commit=functools.partial(conn.ack, seq),
                    on_fail=failer(seq),
                    alive=alive,
                    on_drop=functools.partial(conn.dropped, seq),
                )
                for i, o in enumerate(msg.ops):
                    if isinstance(o, PaneOp):
                        op.panes.append(o.update)
                        op.where.append(f"ops.{i}.update")
                    elif isinstance(o, GoneOp):
                        op.gone.append((o.key, o.t))
                    else:
                        health = HostState(  # the fields of a host state, validated as HostOp's
                            reachable=o.reachable,
                            error=o.error,
                            rtt=o.rtt,
                            reconnects=o.reconnects,
                            contact=o.contact,
                        )
                        op.host_ops.append((o.host, health))
                await core.submit_ingest(op)

        reader = asyncio.create_task(read())
        # Whichever ends first ends the connection: the collector (gone, or refused), or
        # the sender (the connection is closing or failed).
        await asyncio.wait({reader, sender}, return_when=asyncio.FIRST_COMPLETED)
        if not reader.done():
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reader
        else:
            reader.result()  # a disconnect ends the connection as before
        if conn.closing is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.shield(sender), 2)  # the `refused` message first
            with contextlib.suppress(Exception):
                await ws.close(*conn.closing)
    except WebSocketDisconnect:
        pass
    finally:
        in_use.cancel()
        if reader is not None and not reader.done():
            reader.cancel()
        if sender is not None:
            sender.cancel()
            with contextlib.suppress(BaseException):
                await sender
        registry.detach(conn)
        log.info("collector %s disconnected", principal.name)
