"""The collector's uplink to `paneboard serve`: a `Sink` over one WebSocket.

What it guarantees (protocol in docs/wire.md):
- Nothing is lost while the server is away: changes wait in a buffer that keeps only
  the latest change per pane (and per host), so its size is bounded by the number of
  panes, however long the outage and however chatty the panes.
- Every message carries a sequence number and stays "in flight" until the server
  acknowledges it (after committing). On reconnect the server says what it has; the
  rest is resent, or a full snapshot is sent when the server asks for one (it lost
  track, or saw a gap).
- Reconnects back off exponentially with jitter so a fleet of collectors does not
  stampede a restarted server.
- What the server refuses (a `refused` message, before it closes the socket or, for a
  pane its database refused while it stored the rest of the message, before that
  message's ack) is never sent again: the refused pane update stays out of every later
  message until the pane changes, a refused host's panes stay out for good; one log
  line says so.
The `websockets` library is the only dependency; the agent distribution stays light.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import random
import re
import time
import uuid
from collections import OrderedDict, deque
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import websockets
from paneboard_protocol import server_messages as sm
from paneboard_protocol import wire
from paneboard_protocol.pane import TEXT_MAX
from websockets.exceptions import ConnectionClosed, InvalidStatus, InvalidURI

from .health import Health
from .sink import PaneKey, PaneUpdate, SnapshotSource

log = logging.getLogger("paneboard.uplink")

PROTOCOL = wire.PROTOCOL
VERSION = "0.1.0"
SIDE_MAX = 256  # screens / answer outcomes waiting for the socket (oldest dropped)


def ingest_url(url: str) -> str:
    """`http://host:port` (what people type) -> `ws://host:port/api/ingest`."""
    parts = urlsplit(url)
    scheme = {"http": "ws", "https": "wss", "ws": "ws", "wss": "wss"}.get(parts.scheme)
    if scheme is None or not parts.netloc:
        raise ValueError(f"bad server URL {url!r} (use http://HOST:PORT)")
    path = parts.path.rstrip("/")
    if not path.endswith("/api/ingest"):
        path += "/api/ingest"
    return urlunsplit((scheme, parts.netloc, path, "", ""))


class UplinkError(Exception):
    pass


#: WebSocket close codes in words (RFC 6455 and the server's own, docs/wire.md)
CLOSE_REASONS = {
    1000: "closed normally",
    1001: "the server is going away (shutting down)",
    1006: "the connection broke",
    1007: "the server could not read a message",
    1008: "the server refused the conversation",
    1009: "a message was too large for the server",
    1011: "the server hit an error",
    1012: "the server is restarting",
    1013: "the server is overloaded; try again later",
    4401: "the token was refused",
    4409: "another collector connected with the same token",
}
#: close codes that no retry can cure: the collector exits with the reason
FATAL_CLOSE = frozenset({4401})
#: HTTP statuses of a refused WebSocket handshake that mean the same
FATAL_STATUS = frozenset({401, 403})
#: How a viewer token starts (the server's auth/credentials.py VIEWER_PREFIX): given to
#: a collector it is refused, and the refusal says which token it needs instead.
VIEWER_PREFIX = "pbv_"


def token_hint(token: str) -> str:
    """What to do about a refused token, when the token itself tells."""
    if token.startswith(VIEWER_PREFIX):
        return (
            "; this is a viewer token; collectors need a collector token "
            "(`paneboard token create NAME` on the server)"
        )
    return ""


def close_text(code: int, reason: str) -> str:
    """`1012 (the server is restarting)` plus the server's own reason, if it gave one."""
    words = CLOSE_REASONS.get(code, "no reason known for this code")
    return f"{code} ({words})" + (f": {reason}" if reason else "")


class UplinkSink:
    def __init__(
        self,
        url: str,
        token: str,
        *,
        window: int = 64,
        ops_per_message: int = 500,
        backoff: tuple[float, float] = (0.25, 15.0),
        on_seen: Callable[[PaneKey, float], Any] | None = None,
        on_command: Callable[[sm.PaneCommand], Any] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.url = ingest_url(url)
        self.token = token
        self.window = window
        self.ops_per_message = ops_per_message
        self.backoff = backoff
        self.on_seen = on_seen
        #: server commands (`watch`, `unwatch`, `answer`): screens.py via Collector.command
        self.on_command = on_command
        # Screens and answer outcomes: sent as soon as possible, never buffered offline.
        self.side: deque[wire.Screen | wire.Answered] = deque(maxlen=SIDE_MAX)
        #: hosts whose panes take answers (--allow-input): the board shows which panes do
        self.input_hosts: set[str] = set()
        self.clock = clock
        self.stream = uuid.uuid4().hex
        self.source: SnapshotSource | None = None
        # The latest known view (what a snapshot holds when no source is attached).
        self.view: dict[str, wire.PaneOp] = {}
        self.hosts: dict[str, tuple[bool, str | None]] = {}
        self.health: dict[str, dict[str, Any]] = {}  # the links' health (health.py), by host
        # Not yet sent, coalesced per pane/host: the bound is the pane count.
        self.pending: OrderedDict[str, wire.Op] = OrderedDict()
        # Sent, not yet acknowledged: seq -> message.
        self.inflight: OrderedDict[int, wire.Snapshot | wire.Delta] = OrderedDict()
        self.seq = 0
        self.acked = 0
        self.connected = asyncio.Event()
        self.last_error: str | None = None
        #: why the uplink gave up for good (a refused token); `failed` is set then
        self.fatal: str | None = None
        self.failed = asyncio.Event()
        self._ever_connected = False
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._closing = False
        self._need_snapshot = True
        self._bg: set[asyncio.Future[Any]] = set()
        # What the server refused: pane key -> the refused update's fingerprint, and hosts
        # another collector owns. Bounded by the pane and host counts.
        self.quarantine: dict[str, str] = {}
        self.refused_hosts: set[str] = set()
        self._refused: sm.Refused | None = None

    # --- Sink ---------------------------------------------------------------------------
    def attach(self, source: SnapshotSource) -> None:
        self.source = source

    async def pane_changed(self, update: PaneUpdate) -> None:
        op = wire.pane_op(update)
        self.view[str(update.key)] = op
        self._put(f"p:{update.key}", op)

    async def pane_gone(self, key: PaneKey, t: float) -> None:
        self.view.pop(str(key), None)
        self.quarantine.pop(str(key), None)
        self._put(f"p:{key}", wire.gone_op(key, t))

    async def host_status(self, host: str, reachable: bool, t: float, error: str | None) -> None:
        was = self.hosts.get(host, (False, None))[0]
        self.hosts[host] = (reachable, error)
        if reachable and not was:
            # The collector sees the host (again), its panes listed and their stored state
            # and screens read: a snapshot tells the server the whole of it at once. Panes
            # that closed while nobody watched go, and the server takes a pane that still
            # shows what it stored for the same wait (docs/wire.md, "snapshot").
            self._need_snapshot = True
            self._wake.set()
        self._put(f"h:{host}", wire.host_op(host, reachable, error, t, self.health.get(host)))

    async def host_health(self, host: str, health: Health) -> None:
        """The link's round trip, reconnects and last contact: sent with the host's status
        (one op per host, the latest replacing one not yet sent)."""
        self.health[host] = health.wire()
        reachable, error = self.hosts.get(host, (True, None))
        self._put(f"h:{host}", wire.host_op(host, reachable, error, self.clock(), self.health[host]))

    def send_side(self, msg: wire.Screen | wire.Answered) -> None:
        """A screen or an answer's outcome: out beside the seq stream while connected,
        dropped otherwise (a screen is stale by the time the server is back, and the
        server tells a waiting operator `offline`)."""
        if self.connected.is_set():
            self.side.append(msg)
            self._wake.set()

    def _put(self, key: str, op: wire.Op) -> None:
        self.pending.pop(key, None)
        self.pending[key] = op
        self._wake.set()

    # --- lifecycle ----------------------------------------------------------------------
    async def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="paneboard-uplink")

    async def close(self, flush_timeout: float = 2.0) -> None:
        """Stop; first give the server a moment to acknowledge what is in flight."""
        if self._task is None:
            return
        deadline = time.monotonic() + flush_timeout
        while (self.pending or self.inflight) and self.connected.is_set() and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        self._closing = True
        # Cancel until it is done: on Python 3.11 `asyncio.wait_for` swallows a cancel that
        # lands as its inner await completes (the welcome arriving as we close), and the
        # session would then run on, pinging, with nobody to stop it.
        task = self._task
        while not task.done():
            task.cancel()
            await asyncio.wait({task}, timeout=0.5)
        with contextlib.suppress(asyncio.CancelledError, Exception):
            task.result()
        self._task = None

    @property
    def buffered(self) -> int:
        """Changes not yet acknowledged by the server (pending + in flight)."""
        inflight = sum(len(m.ops) if isinstance(m, wire.Delta) else 1 for m in self.inflight.values())
        return len(self.pending) + inflight

    # --- the connection -----------------------------------------------------------------
    async def _run(self) -> None:
        delay = self.backoff[0]
        while not self._closing:
            try:
                async with websockets.connect(
                    self.url,
                    additional_headers={"Authorization": f"Bearer {self.token}"},
                    open_timeout=10,
                    ping_interval=20,
                    # Generous: a busy server stops reading (backpressure) and a pong then
                    # waits behind the data already in the socket buffers.
                    ping_timeout=120,
                    max_size=1 << 20,
                    compression=None,
                ) as ws:
                    await self._session(ws)
                    delay = self.backoff[0]
            except asyncio.CancelledError:
                raise
            except ConnectionClosed as exc:
                rcvd = exc.rcvd
                why = close_text(rcvd.code, rcvd.reason) if rcvd is not None else "connection lost"
                if rcvd is not None and rcvd.code in FATAL_CLOSE:
                    self._give_up(f"server closed the uplink: {why}{token_hint(self.token)}")
                    return
                refused, self._refused = self._refused, None
                if rcvd is not None and rcvd.code in (1007, 1009, 4403) and refused is not None:
                    # What was refused is quarantined already (on arrival); the rest goes
                    # again, in a snapshot.
                    self.last_error = f"server refused: {why}"
                    self.inflight.clear()
                    self._need_snapshot = True
                else:
                    self._note(f"server closed the uplink: {why}")
                if rcvd is not None and rcvd.code == 4401:
                    delay = self.backoff[1]
                if rcvd is not None and rcvd.code in (1007, 1009, 4403) and refused is None:
                    # The server will refuse the same bytes again: resending them would loop.
                    # Start over from a fresh snapshot (what the panes show now), slowly.
                    self.inflight.clear()
                    self._need_snapshot = True
                    delay = self.backoff[1]
            except InvalidStatus as exc:
                status = exc.response.status_code
                if status in FATAL_STATUS:
                    self._give_up(
                        f"server refused the uplink: HTTP {status} (the token was refused)"
                        f"{token_hint(self.token)}"
                    )
                    return
                self._note(f"server refused the uplink: HTTP {status}")
            except InvalidURI as exc:
                self._note(f"bad server URL: {exc}")
                delay = self.backoff[1]
            except (OSError, TimeoutError, websockets.exceptions.WebSocketException, ValueError) as exc:
                self._note(f"cannot reach server: {exc or type(exc).__name__}")
            finally:
                self.connected.clear()
                self.side.clear()
            if self._closing:
                return
            await asyncio.sleep(delay * (0.5 + random.random()))
            delay = min(delay * 2, self.backoff[1])

    def _note(self, msg: str) -> None:
        if msg != self.last_error:
            log.warning("%s; retrying", msg)
        self.last_error = msg

    def _give_up(self, msg: str) -> None:
        """A refusal no retry cures: stop, and let the caller exit with the reason."""
        self.fatal = msg
        self.last_error = msg
        self.failed.set()

    def _connected_note(self) -> None:
        """One line when the uplink is up: the line after "cannot reach server" says it is over."""
        log.info("connected to the server %s%s", self.url, " again" if self._ever_connected else "")
        self._ever_connected = True
        self.last_error = None

    async def _session(self, ws: Any) -> None:
        await ws.send(
            wire.encode(
                wire.hello(
                    self.stream,
                    VERSION,
                    sorted(set(self.hosts) - self.refused_hosts),
                    sorted(self.input_hosts - self.refused_hosts),
                )
            )
        )
        raw = await asyncio.wait_for(ws.recv(), 10)
        welcome = sm.read_server(raw)
        if not isinstance(welcome, sm.Welcome):
            raise UplinkError(f"expected welcome, got {_type_of(raw)!r}")
        acked = welcome.acked
        if acked is not None:
            self._ack(acked)
        resend = (
            not welcome.snapshot
            and acked is not None
            and (not self.inflight or next(iter(self.inflight)) == acked + 1)
        )
        if self._need_snapshot or not resend:
            await self._send_snapshot(ws)
        else:
            for msg in self.inflight.values():
                await ws.send(wire.encode(msg))
        self.connected.set()
        self._connected_note()
        reader = asyncio.create_task(self._reader(ws))
        try:
            while True:
                if reader.done():
                    reader.result()
                    return
                if self._need_snapshot:
                    await self._send_snapshot(ws)
                while self.side:
                    await ws.send(wire.encode(self.side.popleft()))
                if self.pending and len(self.inflight) < self.window:
                    await self._send_delta(ws)
                    continue
                self._wake.clear()
                waiter = asyncio.ensure_future(self._wake.wait())
                await asyncio.wait({waiter, reader}, return_when=asyncio.FIRST_COMPLETED)
                waiter.cancel()
        finally:
            reader.cancel()
            with contextlib.suppress(BaseException):
                await reader

    async def _reader(self, ws: Any) -> None:
        async for raw in ws:
            try:
                msg = sm.decode(raw)
            except sm.Malformed as exc:
                log.warning("server sent a malformed message (%s): ignored", exc)
                continue
            if isinstance(msg, sm.Ack):
                self._ack(msg.seq)
                self.last_error = None
                self._wake.set()
            elif isinstance(msg, sm.Resync):
                log.debug("server asked for a snapshot: %s", msg.reason[:TEXT_MAX])
                self._need_snapshot = True
                self._wake.set()
            elif isinstance(msg, sm.Seen):
                self._seen(msg)
            elif isinstance(msg, sm.Refused):
                # Quarantined now, while the message it names is still in flight: a pane
                # the database refused comes before the ack of the rest, with no close.
                self._drop_refused(msg)
                self._refused = msg  # a close that follows starts over from a snapshot
            elif isinstance(msg, sm.Watch | sm.Unwatch | sm.Answer) and self.on_command is not None:
                self._background(self.on_command(msg))

    def _drop_refused(self, info: sm.Refused) -> None:
        """Quarantine what the server refused (`seq`, and `at` such as `panes.3.msg`)."""
        host = info.host
        if host is not None:
            self.refused_hosts.add(host)
        msg = self.inflight.get(info.seq) if info.seq is not None else None
        items: list[PaneUpdate | wire.Op] = []
        if msg is not None:
            at = re.match(r"(panes|ops)\.(\d+)", info.at or "")
            whole: list[PaneUpdate] | list[wire.Op] = msg.panes if isinstance(msg, wire.Snapshot) else msg.ops
            if at is not None and int(at.group(2)) < len(whole):
                items = [whole[int(at.group(2))]]
            elif host is None:
                items = list(whole)  # no part named: the whole message is dropped
        for item in items:
            update = item.update if isinstance(item, wire.PaneOp) else item
            if isinstance(update, PaneUpdate):
                self.quarantine[str(update.key)] = _fingerprint(update)
        what = f"host {host!r}" if host is not None else f"{len(items)} pane update(s) of seq {info.seq}"
        log.warning("server refused %s: %s; not sending it again", what, info.reason[:TEXT_MAX])

    def _held_back(self, update: PaneUpdate) -> bool:
        if update.key.host in self.refused_hosts:
            return True
        fp = self.quarantine.get(str(update.key))
        return fp is not None and fp == _fingerprint(update)

    def _ack(self, seq: int) -> None:
        if self._refused is not None and self._refused.seq is not None and seq >= self._refused.seq:
            self._refused = None  # acknowledged: stored without the refused pane, no close follows
        self.acked = max(self.acked, seq)
        while self.inflight and next(iter(self.inflight)) <= seq:
            self.inflight.popitem(last=False)

    def _background(self, result: Any) -> None:
        if asyncio.iscoroutine(result):
            task = asyncio.ensure_future(result)
            self._bg.add(task)
            task.add_done_callback(self._bg.discard)
            task.add_done_callback(
                lambda t: (
                    None
                    if t.cancelled() or t.exception() is None
                    else log.warning("server command failed: %s", t.exception())
                )
            )

    def _seen(self, msg: sm.Seen) -> None:
        key, t = PaneKey(msg.key.host, msg.key.tmux, msg.key.pane), msg.t
        target = self.on_seen or getattr(self.source, "mark_seen", None)
        if target is None:
            return
        try:
            result = target(key, t)
            if asyncio.iscoroutine(result):
                task = asyncio.ensure_future(result)
                self._bg.add(task)
                task.add_done_callback(self._bg.discard)
        except Exception as exc:  # the collector's problem; the uplink keeps going
            log.warning("seen for %s failed: %s", key, exc)

    async def _send_snapshot(self, ws: Any) -> None:
        if self.source is not None:
            updates, hosts = self.source.snapshot()
            panes = list(updates)
            host_map = {h: wire.host_state(r, e, self.health.get(h)) for h, (r, e) in hosts.items()}
        else:
            panes = [op.update for op in self.view.values()]
            host_map = {h: wire.host_state(r, e, self.health.get(h)) for h, (r, e) in self.hosts.items()}
        panes = [p for p in panes if not self._held_back(p)]
        for h in self.refused_hosts:
            host_map.pop(h, None)
        for p in panes:
            host_map.setdefault(p.key.host, wire.host_state(True, None))
        self.seq += 1
        msg = wire.snapshot(self.seq, self.clock(), host_map, panes)
        # The snapshot supersedes everything before it, sent or not.
        self.pending.clear()
        self.inflight.clear()
        self.inflight[self.seq] = msg
        self._need_snapshot = False
        await ws.send(wire.encode(msg))

    async def _send_delta(self, ws: Any) -> None:
        ops: list[wire.Op] = []
        while self.pending and len(ops) < self.ops_per_message:
            _, op = self.pending.popitem(last=False)
            if isinstance(op, wire.PaneOp) and self._held_back(op.update):
                continue
            if _host_of(op) in self.refused_hosts:
                continue
            ops.append(op)
        if not ops:
            return
        self.seq += 1
        msg = wire.delta(self.seq, ops)
        self.inflight[self.seq] = msg
        await ws.send(wire.encode(msg))


def _type_of(raw: str | bytes) -> object:
    """The `type` of a frame that is not a server message, for the error (not JSON: ValueError)."""
    msg = json.loads(raw)
    return msg.get("type") if isinstance(msg, dict) else None


def _host_of(op: wire.Op) -> str:
    if isinstance(op, wire.PaneOp):
        return op.update.key.host
    return op.key.host if isinstance(op, wire.GoneOp) else op.host


def _fingerprint(update: PaneUpdate) -> str:
    return wire.encode(update)
