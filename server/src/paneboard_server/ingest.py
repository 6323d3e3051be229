"""`WS /api/ingest`: one collector's uplink (protocol in docs/wire.md).

The handler validates each message whole, turns it into one writer operation, and
acknowledges a sequence number only after the writer has committed it, so an ack is
a promise that the change survives a restart. Duplicates after a resend are
re-acknowledged and ignored; a gap makes the server ask for a snapshot.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from typing import Any

from paneboard_protocol import wire as pwire
from sqlalchemy import select
from starlette.websockets import WebSocket, WebSocketDisconnect

from . import __version__
from . import schema as s
from .accounts import lookup_token, note_use_while_connected
from .core import Core, HostsDown, HostsUp, Ingest
from .wire import PROTOCOL, Delta, Hello, Snapshot, WireError, parse, reason

log = logging.getLogger("paneboard.ingest")

CLOSE_UNAUTHORIZED = 4401
CLOSE_REPLACED = 4409
CLOSE_INVALID = 1007
CLOSE_POLICY = 1008
CLOSE_TOO_BIG = 1009
CLOSE_SERVER_ERROR = 1011


class Connection:
    """One connected collector: its outbox (one sender task) and its sequence state."""

    def __init__(self, ws: WebSocket, collector_id: int, name: str) -> None:
        self.ws = ws
        self.collector_id = collector_id
        self.name = name
        self.outbox: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue(10000)
        self.acked = -1
        self.ack_sent = -1
        self.ack_event = asyncio.Event()
        self.closing: tuple[int, str] | None = None

    def send(self, msg: dict[str, Any]) -> None:
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

    def close(self, code: int, why: str) -> None:
        if self.closing is None:
            self.closing = (code, why)
            self.ack_event.set()
            with contextlib.suppress(asyncio.QueueFull):
                self.outbox.put_nowait(None)

    async def sender(self) -> None:
        while True:
            get = asyncio.ensure_future(self.outbox.get())
            ack = asyncio.ensure_future(self.ack_event.wait())
            done, _ = await asyncio.wait({get, ack}, return_when=asyncio.FIRST_COMPLETED)
            for f in (get, ack):
                if f not in done:
                    f.cancel()
            if self.closing is not None:
                return
            if self.acked > self.ack_sent:
                self.ack_event.clear()
                self.ack_sent = self.acked
                await self.ws.send_text(pwire.encode(pwire.ack(self.acked)))
            elif ack in done:
                self.ack_event.clear()
            if get in done:
                msg = get.result()
                if msg is None:
                    return
                await self.ws.send_text(json.dumps(msg))


class IngestRegistry:
    """Which collectors are connected to this process, and their grace timers."""

    def __init__(self, core: Core) -> None:
        self.core = core
        self.connections: dict[int, Connection] = {}
        self.timers: dict[int, asyncio.TimerHandle] = {}

    def attach(self, conn: Connection) -> None:
        old = self.connections.get(conn.collector_id)
        if old is not None:
            old.close(CLOSE_REPLACED, "replaced by a newer connection with the same token")
        self.connections[conn.collector_id] = conn
        t = self.timers.pop(conn.collector_id, None)
        if t is not None:
            t.cancel()
        self.core.seen_routes[conn.collector_id] = conn.send

    def detach(self, conn: Connection) -> None:
        cid = conn.collector_id
        if self.connections.get(cid) is not conn:
            return
        del self.connections[cid]
        self.core.seen_routes.pop(cid, None)
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


async def handle(ws: WebSocket, core: Core, registry: IngestRegistry) -> None:
    limits = core.cfg.limits
    await ws.accept()
    principal = await lookup_token(core.engine, _bearer(ws), "collector")
    if principal is None:
        await ws.close(CLOSE_UNAUTHORIZED, "unauthorized: unknown or revoked collector token")
        return
    cid = principal.id
    core.collector_names[cid] = principal.name
    conn = Connection(ws, cid, principal.name)
    sender: asyncio.Task[None] | None = None
    in_use = asyncio.create_task(note_use_while_connected(core.engine, cid))  # `token list`'s "last used"
    try:
        try:
            hello = parse(await _receive_text(ws), limits.max_message_bytes, limits.max_panes_per_message)
        except WireError as exc:
            await ws.close(CLOSE_INVALID, reason(str(exc)))
            return
        if not isinstance(hello, Hello):
            await ws.close(CLOSE_POLICY, "expected a hello first")
            return
        if hello.protocol != PROTOCOL:
            await ws.close(CLOSE_POLICY, f"unsupported protocol {hello.protocol} (server speaks {PROTOCOL})")
            return
        async with core.engine.connect() as db:
            row = (await db.execute(select(s.collectors).where(s.collectors.c.token_id == cid))).first()
        known = row is not None and row.stream == hello.stream and row.last_seq is not None
        last = int(row.last_seq) if known else -1
        need_snapshot = not known
        registry.attach(conn)
        core.submit(HostsUp(cid))
        conn.acked = conn.ack_sent = last
        await ws.send_text(pwire.encode(pwire.welcome(__version__, last if known else None, need_snapshot)))
        sender = asyncio.create_task(conn.sender())
        log.info("collector %s connected (stream %s, acked %s)", principal.name, hello.stream, last)

        def on_fail(_exc: BaseException) -> None:
            conn.close(CLOSE_SERVER_ERROR, "server could not store the update; reconnect and resend")

        receiving = asyncio.ensure_future(_receive_text(ws))
        while True:
            done, _ = await asyncio.wait({receiving, sender}, return_when=asyncio.FIRST_COMPLETED)
            if sender in done:
                receiving.cancel()
                break
            try:
                text = receiving.result()
                msg = parse(text, limits.max_message_bytes, limits.max_panes_per_message)
            except WireError as exc:
                code = CLOSE_TOO_BIG if "too large" in str(exc) else CLOSE_INVALID
                conn.close(code, reason(str(exc)))
                break
            receiving = asyncio.ensure_future(_receive_text(ws))
            if isinstance(msg, Hello):
                conn.close(CLOSE_POLICY, "hello sent twice")
                receiving.cancel()
                break
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
                        on_commit=lambda seq=seq: conn.ack(seq),
                        on_fail=on_fail,
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
                on_commit=lambda seq=seq: conn.ack(seq),
                on_fail=on_fail,
            )
            for o in msg.ops:
                if o.op == "pane":
                    op.panes.append(o.update)
                elif o.op == "gone":
                    op.gone.append((o.key, o.t))
                else:
                    op.host_ops.append((o.host, o.reachable, o.error))
            await core.submit_ingest(op)
        if conn.closing is not None:
            with contextlib.suppress(Exception):
                await ws.close(*conn.closing)
    except WebSocketDisconnect:
        pass
    finally:
        in_use.cancel()
        if sender is not None:
            sender.cancel()
            with contextlib.suppress(BaseException):
                await sender
        registry.detach(conn)
        log.info("collector %s disconnected", principal.name)
