"""Limits on connections before any request is authenticated, kept through public
interfaces: an asyncio protocol around uvicorn's HTTP protocol, and an ASGI middleware.

uvicorn closes an idle keep-alive connection after `timeout_keep_alive`, but only
after a first response: a connection that never sends a byte, or sends its headers a
byte a minute, is held for ever, and nothing caps how many one address may hold. These
limits apply per connection:

- a header time-out: the request line and headers must be complete within
  `header_timeout` seconds of the connection opening (and of each keep-alive request's
  answer), or the connection is closed; this also ends idle pre-auth connections;
- a body time-out: a request's body must be complete within `body_timeout` seconds of
  the application being handed its headers (bodies are read before the credentials they
  come with are checked, and are at most `max_body_bytes`), or the connection is closed;
- a header size cap (`max_header_bytes`; httptools itself has none), on the bytes up to
  the blank line that ends the headers, however they arrive;
- a cap on open connections per client address (`max_connections_per_address`),
  WebSockets included: one more is closed at once. A connection from one of
  `server.trusted_proxies` is counted per request, against the client its
  `X-Forwarded-For` names (proxies.py), and answered 429 over the cap;
- an authenticated live stream leaves its address's count and is counted per credential
  (`max_streams_per_credential`): the app calls `scope["paneboard.slot"].authenticated`.

The protocol (`Connection`) sees the bytes and the connection's life, and follows it
through a WebSocket upgrade (`transport_proxy.py`); the middleware sees each request's
start, body and end, and finds its connection by the addresses in the ASGI scope.
Neither reaches into uvicorn: uvicorn is handed the protocol as `Config(http=...)` and
makes it as it makes its own, with arguments passed on untouched to its own protocol.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Callable
from typing import Any, cast

from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from .proxies import TrustedProxies
from .transport_proxy import ForwardingTransport

log = logging.getLogger("paneboard.connections")

#: The ASGI scope key under which a request finds its slot (`Request.authenticated`).
SLOT = "paneboard.slot"

#: The end of a request's headers: an empty line (CRLF, or a bare LF as parsers accept).
_BLANK_LINE = re.compile(rb"\n\r?\n")

_TOO_LARGE_TEXT = b"Request headers too large."
_TOO_LARGE = (
    b"HTTP/1.1 400 Bad Request\r\ncontent-type: text/plain; charset=utf-8\r\n"
    b"content-length: %d\r\nconnection: close\r\n\r\n%s" % (len(_TOO_LARGE_TEXT), _TOO_LARGE_TEXT)
)

#: A connection as the ASGI scope names it: (client host, port), (server host, port).
Key = tuple[tuple[str, int], tuple[str, int]]


class Counts:
    """Open connections (or streams) per key, over a cap refused by the caller."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.counts: dict[str, int] = {}
        self.refused = 0

    def add(self, key: str) -> bool:
        """Count one more for `key` (always: the caller removes it when it ends);
        False when that takes it over the cap."""
        n = self.counts.get(key, 0) + 1
        self.counts[key] = n
        if n <= self.cap:
            return True
        self.refused += 1
        if self.refused == 1 or self.refused % 1000 == 0:
            log.warning(
                "connections: %s holds more than %d; refusing (%d refused so far)",
                key,
                self.cap,
                self.refused,
            )
        return False

    def remove(self, key: str) -> None:
        n = self.counts.get(key, 0) - 1
        if n > 0:
            self.counts[key] = n
        else:
            self.counts.pop(key, None)


class Limits:
    """What the connections and their requests share: the caps, the counts, and the open
    connections by the addresses a request's scope names them by."""

    def __init__(
        self,
        header_timeout: float,
        max_header_bytes: int,
        per_address: int,
        body_timeout: float,
        per_credential: int,
        trusted: TrustedProxies,
    ) -> None:
        self.header_timeout = header_timeout
        self.max_header_bytes = max_header_bytes
        self.body_timeout = body_timeout
        self.addresses = Counts(per_address)
        self.streams = Counts(per_credential)
        self.trust = trusted
        self.open: dict[Key, Connection] = {}


def _address(info: Any) -> tuple[str, int] | None:
    """(host, port) of a socket address as ASGI scopes give it; None for other kinds."""
    if isinstance(info, (tuple, list)) and len(info) >= 2 and isinstance(info[1], int):
        return str(info[0]), int(info[1])
    return None


class Connection(asyncio.Protocol):
    """One connection: its address's count, its header and body timers, the size of its
    headers; everything else is forwarded to the protocol it wraps (uvicorn's HTTP one,
    then, once upgraded, its WebSocket one)."""

    def __init__(self, limits: Limits, inner: asyncio.Protocol) -> None:
        self.limits = limits
        self.inner = inner
        self.transport: asyncio.Transport | None = None
        self.key: Key | None = None
        self.peer = "?"
        self.proxied = False
        self.counted: str | None = None  # the address this connection is counted against now
        self.admitted = False  # handed to the inner protocol
        self.lost = False
        self.upgraded = False
        self.header_timer: asyncio.TimerHandle | None = None
        self.body_timer: asyncio.TimerHandle | None = None
        self.header_bytes = 0
        self.tail = b""  # the last bytes seen, for a blank line split across reads

    # --- asyncio.Protocol ---------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # a TCP server's: an asyncio.Transport in all but name under uvloop
        transport = cast(asyncio.Transport, transport)
        self.transport = transport
        peer = _address(transport.get_extra_info("peername"))
        local = _address(transport.get_extra_info("sockname"))
        if peer is not None:
            self.peer = peer[0]
            if local is not None:
                self.key = (peer, local)
        self.proxied = self.limits.trust.trusts(self.peer)
        if not self.proxied:
            self.counted = self.peer
            if not self.limits.addresses.add(self.peer):
                transport.abort()
                return
        if self.key is not None:
            self.limits.open[self.key] = self
        self.admitted = True
        self._arm_headers()
        self.inner.connection_made(ForwardingTransport(transport, self))

    def data_received(self, data: bytes) -> None:
        if self.header_timer is not None and not self._headers_within_cap(data):
            return
        self.inner.data_received(data)

    def eof_received(self) -> bool | None:
        return self.inner.eof_received()

    def pause_writing(self) -> None:
        self.inner.pause_writing()

    def resume_writing(self) -> None:
        self.inner.resume_writing()

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        self._disarm_headers()
        self.body_done()
        if self.key is not None and self.limits.open.get(self.key) is self:
            del self.limits.open[self.key]
        self.leave_address()
        if self.admitted:
            self.inner.connection_lost(exc)

    # --- transport_proxy.Wrapper: uvicorn's upgrade to WebSocket -------------------------
    def switch(self, protocol: asyncio.BaseProtocol) -> None:
        """The connection now speaks WebSocket through `protocol`: no more HTTP timers
        (the WebSocket pings take over); its address's count stays until it closes."""
        self.inner = cast(asyncio.Protocol, protocol)  # uvicorn's WebSocket protocols are stream ones
        self.upgraded = True
        self._disarm_headers()
        self.body_done()

    # --- headers: time and size ------------------------------------------------------------
    def _arm_headers(self) -> None:
        self._disarm_headers()
        self.header_bytes = 0
        self.tail = b""
        self.header_timer = asyncio.get_running_loop().call_later(self.limits.header_timeout, self._close)

    def _disarm_headers(self) -> None:
        if self.header_timer is not None:
            self.header_timer.cancel()
            self.header_timer = None

    def _headers_within_cap(self, data: bytes) -> bool:
        """Count the bytes up to the end of the headers; False (and refused) over the cap."""
        seen = self.tail + data
        end = _BLANK_LINE.search(seen)
        self.header_bytes += (end.end() - len(self.tail)) if end else len(data)
        if self.header_bytes > self.limits.max_header_bytes:
            self._disarm_headers()
            assert self.transport is not None
            if not self.transport.is_closing():
                self.transport.write(_TOO_LARGE)
                self.transport.close()
            return False
        if end is not None:
            self._disarm_headers()
        else:
            self.tail = seen[-2:]
        return True

    def _close(self) -> None:
        self.header_timer = None
        if self.transport is not None and not self.transport.is_closing():
            self.transport.close()

    # --- a request's life, told by the middleware --------------------------------------------
    def request_started(self, has_body: bool) -> None:
        self._disarm_headers()  # also for a request parsed while the one before was answered
        if has_body:
            self.body_done()
            self.body_timer = asyncio.get_running_loop().call_later(
                self.limits.body_timeout, self._body_expired
            )

    def body_done(self) -> None:
        if self.body_timer is not None:
            self.body_timer.cancel()
            self.body_timer = None

    def _body_expired(self) -> None:
        self.body_timer = None
        log.info(
            "connections: %s sent no complete body in %.0f s; closing", self.peer, self.limits.body_timeout
        )
        self._close()

    def request_ended(self) -> None:
        """The application has answered: the next request's headers get the same time.
        (A request uvicorn answers itself, 503 over `max_connections` or 400 for a
        malformed one, it answers with the connection closed: nothing to time after it.)"""
        self.body_done()
        if (
            not (self.lost or self.upgraded)
            and self.transport is not None
            and not self.transport.is_closing()
        ):
            self._arm_headers()

    def leave_address(self) -> None:
        """Stop counting this connection against its address (an authenticated stream
        is counted per credential instead, or it has closed)."""
        if self.counted is not None:
            self.limits.addresses.remove(self.counted)
            self.counted = None

    def rejoin_address(self) -> None:
        """Count it against its address again once its stream has ended; closed when
        that is over the cap."""
        if self.proxied or self.lost or self.counted is not None or self.transport is None:
            return
        self.counted = self.peer
        if not self.limits.addresses.add(self.peer):
            self.transport.close()


class Request:
    """One HTTP request's counts: its real client's (behind a trusted proxy) and its
    credential's once it is an authenticated live stream. Found under `scope[SLOT]`."""

    def __init__(self, limits: Limits, conn: Connection, real: str | None) -> None:
        self.limits = limits
        self.conn = conn
        self.counted = real  # the real client this request is counted against
        self.credential: str | None = None
        self.left_address = False

    def authenticated(self, key: str) -> bool:
        """This request is an authenticated live stream: count it against `key`, not
        its address. False when `key` already holds its share (answer 429)."""
        if self.credential is not None:
            return True
        if self.counted is not None:
            self.limits.addresses.remove(self.counted)
            self.counted = None
        elif not self.conn.proxied:
            self.conn.leave_address()
            self.left_address = True
        self.credential = key
        return self.limits.streams.add(key)

    def release(self) -> None:
        if self.counted is not None:
            self.limits.addresses.remove(self.counted)
            self.counted = None
        if self.credential is not None:
            self.limits.streams.remove(self.credential)
            self.credential = None
        if self.left_address:
            self.left_address = False
            self.conn.rejoin_address()


async def _too_many(scope: Scope, receive: Receive, send: Send) -> None:
    """The answer to a proxied request over its real client's connection cap."""
    body = json.dumps({"detail": "too many open connections from your address"}).encode()
    headers = [(b"content-type", b"application/json"), (b"retry-after", b"1")]
    if scope["type"] == "websocket":
        if "websocket.http.response" in scope.get("extensions", {}):
            await send({"type": "websocket.http.response.start", "status": 429, "headers": headers})
            await send({"type": "websocket.http.response.body", "body": body})
        else:
            await send({"type": "websocket.close", "code": 1008})
        return
    headers.append((b"content-length", str(len(body)).encode()))
    await send({"type": "http.response.start", "status": 429, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _key(scope: Scope) -> Key | None:
    client = _address(scope.get("client"))
    server = _address(scope.get("server"))
    return (client, server) if client is not None and server is not None else None


def _has_body(headers: list[tuple[bytes, bytes]]) -> bool:
    for name, value in headers:
        if name == b"transfer-encoding" or (name == b"content-length" and value.strip() != b"0"):
            return True
    return False


class ConnectionLimitsMiddleware:
    """Tells each request's connection when the request starts, when its body is
    complete and when it has been answered; counts a proxied request against its real
    client; gives an HTTP request its slot."""

    def __init__(self, app: ASGIApp, limits: Limits) -> None:
        self.app = app
        self.limits = limits

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        key = _key(scope) if kind in ("http", "websocket") else None
        conn = self.limits.open.get(key) if key is not None else None
        if conn is None:  # lifespan, or a connection not made by `Connection`
            await self.app(scope, receive, send)
            return
        real: str | None = None
        app = self.app
        if conn.proxied:
            forwarded = [v for n, v in scope.get("headers", []) if n == b"x-forwarded-for"]
            real = self.limits.trust.client(conn.peer, forwarded)
            scope = {**scope, "client": (real, 0)}
            if not self.limits.addresses.add(real):
                app = _too_many
        if kind == "websocket":  # a direct one stays counted by its connection
            try:
                await app(scope, receive, send)
            finally:
                if real is not None:
                    self.limits.addresses.remove(real)
            return
        request = Request(self.limits, conn, real)
        conn.request_started(_has_body(scope.get("headers", [])))

        async def receive_noting() -> Message:
            message = await receive()
            if not message.get("more_body", False):
                conn.body_done()
            return message

        try:
            await app({**scope, SLOT: request}, receive_noting, send)
        finally:
            request.release()
            conn.request_ended()


def connection_limits(
    header_timeout: float,
    max_header_bytes: int,
    per_address: int,
    *,
    body_timeout: float = 10.0,
    per_credential: int = 64,
    trusted: TrustedProxies | None = None,
) -> tuple[type[asyncio.Protocol], Callable[[ASGIApp], ASGIApp]]:
    """The HTTP protocol class to hand `uvicorn.Config(http=...)`, and the wrapper of the
    application that goes with it (the two share the counts)."""
    limits = Limits(
        header_timeout,
        max_header_bytes,
        per_address,
        body_timeout,
        per_credential,
        trusted or TrustedProxies([]),
    )

    class Guarded(Connection):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            # made by uvicorn as it makes its own protocol: the same arguments, untouched
            super().__init__(limits, HttpToolsProtocol(*args, **kwargs))

    def wrap(app: ASGIApp) -> ASGIApp:
        return ConnectionLimitsMiddleware(app, limits)

    return Guarded, wrap


__all__ = [
    "SLOT",
    "Connection",
    "ConnectionLimitsMiddleware",
    "Counts",
    "Limits",
    "Request",
    "connection_limits",
]
