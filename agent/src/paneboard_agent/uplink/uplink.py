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
What to send, resend, coalesce and hold back is `buffer.UplinkBuffer`'s (no I/O); this
module is the socket around it: connecting, backing off, reading the server's messages
into the buffer and handing its commands to the collector (`sink.Upstream`).
The `websockets` library is the only dependency; the agent distribution stays light.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import random
import time
import uuid
from collections.abc import Callable, Coroutine
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import websockets
from paneboard_protocol import server_messages as sm
from paneboard_protocol import wire
from paneboard_protocol.pane import TEXT_MAX
from websockets.asyncio.client import ClientConnection
from websockets.exceptions import ConnectionClosed, InvalidStatus, InvalidURI

from .buffer import UplinkBuffer
from .health import Health
from .sink import Commands, PaneKey, PaneUpdate, SnapshotSource

log = logging.getLogger("paneboard.uplink")

PROTOCOL = wire.PROTOCOL
VERSION = "0.1.0"


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
    """A `Sink` that sends to `paneboard serve`; `start(source, commands)` links it to the
    collector (it is the collector's sink, so it is made first)."""

    def __init__(
        self,
        url: str,
        token: str,
        *,
        window: int = 64,
        ops_per_message: int = 500,
        backoff: tuple[float, float] = (0.25, 15.0),
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.url = ingest_url(url)
        self.token = token
        self.backoff = backoff
        self.clock = clock
        self.buffer = UplinkBuffer(window, ops_per_message)
        self.stream = uuid.uuid4().hex
        #: the collector: what a snapshot holds, and where `seen` and commands go
        self.source: SnapshotSource | None = None
        self.commands: Commands | None = None
        self.connected = asyncio.Event()
        self.last_error: str | None = None
        #: why the uplink gave up for good (a refused token); `failed` is set then
        self.fatal: str | None = None
        self.failed = asyncio.Event()
        self._ever_connected = False
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._closing = False
        self._bg: set[asyncio.Future[None]] = set()

    # --- Sink ---------------------------------------------------------------------------
    async def pane_changed(self, update: PaneUpdate) -> None:
        self.buffer.pane_changed(update)
        self._wake.set()

    async def pane_gone(self, key: PaneKey, t: float) -> None:
        self.buffer.pane_gone(key, t)
        self._wake.set()

    async def host_status(self, host: str, reachable: bool, t: float, error: str | None) -> None:
        self.buffer.host_status(host, reachable, t, error)
        self._wake.set()

    async def host_health(self, host: str, health: Health) -> None:
        """The link's round trip, reconnects and last contact: sent with the host's status
        (one op per host, the latest replacing one not yet sent)."""
        self.buffer.host_health(host, health.wire(), self.clock())
        self._wake.set()

    def send_side(self, msg: wire.Screen | wire.Answered) -> None:
        """A screen or an answer's outcome: out beside the seq stream while connected,
        dropped otherwise (`UplinkBuffer.side_put`)."""
        if self.buffer.side_put(msg):
            self._wake.set()

    # --- lifecycle ----------------------------------------------------------------------
    async def start(self, source: SnapshotSource | None = None, commands: Commands | None = None) -> None:
        """Connect, and keep connecting. `source` is what a snapshot holds (without it: the
        changes this uplink was given); `commands` takes the server's `seen`, `watch`,
        `unwatch` and `answer` (without it they are ignored)."""
        if self._task is None:
            self.source = source
            self.commands = commands
            self._task = asyncio.create_task(self._run(), name="paneboard-uplink")

    async def close(self, flush_timeout: float = 2.0) -> None:
        """Stop; first give the server a moment to acknowledge what is in flight."""
        if self._task is None:
            return
        deadline = time.monotonic() + flush_timeout
        while not self.buffer.idle and self.connected.is_set() and time.monotonic() < deadline:
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
        return self.buffer.buffered

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
                how = self.buffer.closed(rcvd.code if rcvd is not None else None)
                if how == "refused":  # quarantined already (on arrival); the rest goes again
                    self.last_error = f"server refused: {why}"
                else:
                    self._note(f"server closed the uplink: {why}")
                if how == "poison":  # the same bytes would be refused again: slowly
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
                self.buffer.lost()
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

    async def _session(self, ws: ClientConnection) -> None:
        inputs = self.commands.input_hosts() if self.commands is not None else set()
        await ws.send(wire.encode(wire.hello(self.stream, VERSION, *self.buffer.hello_hosts(inputs))))
        raw = await asyncio.wait_for(ws.recv(), 10)
        welcome = sm.read_server(raw)
        if not isinstance(welcome, sm.Welcome):
            raise UplinkError(f"expected welcome, got {_type_of(raw)!r}")
        for msg in self.buffer.welcome(welcome.acked, welcome.snapshot):
            await ws.send(wire.encode(msg))
        if self.buffer.need_snapshot:
            await ws.send(wire.encode(self._snapshot()))
        self.buffer.up()
        self.connected.set()
        self._connected_note()
        reader = asyncio.create_task(self._reader(ws))
        try:
            while True:
                if reader.done():
                    reader.result()
                    return
                if self.buffer.need_snapshot:
                    await ws.send(wire.encode(self._snapshot()))
                while (side := self.buffer.side_next()) is not None:
                    await ws.send(wire.encode(side))
                delta = self.buffer.next_delta()
                if delta is not None:
                    await ws.send(wire.encode(delta))
                    continue
                self._wake.clear()
                waiter = asyncio.ensure_future(self._wake.wait())
                await asyncio.wait({waiter, reader}, return_when=asyncio.FIRST_COMPLETED)
                waiter.cancel()
        finally:
            reader.cancel()
            with contextlib.suppress(BaseException):
                await reader

    def _snapshot(self) -> wire.Snapshot:
        source = self.source.snapshot() if self.source is not None else None
        return self.buffer.snapshot(self.clock(), source)

    async def _reader(self, ws: ClientConnection) -> None:
        async for raw in ws:
            try:
                msg = sm.decode(raw)
            except sm.Malformed as exc:
                log.warning("server sent a malformed message (%s): ignored", exc)
                continue
            if isinstance(msg, sm.Ack):
                self.buffer.ack(msg.seq)
                self.last_error = None
                self._wake.set()
            elif isinstance(msg, sm.Resync):
                log.debug("server asked for a snapshot: %s", msg.reason[:TEXT_MAX])
                self.buffer.resync()
                self._wake.set()
            elif isinstance(msg, sm.Seen):
                self._seen(msg)
            elif isinstance(msg, sm.Refused):
                refusal = self.buffer.refused(msg)
                log.warning(
                    "server refused %s: %s; not sending it again", refusal.what, refusal.reason[:TEXT_MAX]
                )
            elif isinstance(msg, sm.Watch | sm.Unwatch | sm.Answer) and self.commands is not None:
                self._background(self.commands.command(msg))

    def _background(self, job: Coroutine[Any, Any, None]) -> None:
        """A server command runs beside the reader (an answer waits for a capture)."""
        task = asyncio.ensure_future(job)
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
        if self.commands is None:
            return
        key = PaneKey(msg.key.host, msg.key.tmux, msg.key.pane)
        try:
            self.commands.mark_seen(key, msg.t)
        except Exception as exc:  # the collector's problem; the uplink keeps going
            log.warning("seen for %s failed: %s", key, exc)


def _type_of(raw: str | bytes) -> object:
    """The `type` of a frame that is not a server message, for the error (not JSON: ValueError)."""
    msg = json.loads(raw)
    return msg.get("type") if isinstance(msg, dict) else None
