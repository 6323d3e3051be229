"""Limits on connections before any request is authenticated, as uvicorn protocols.

uvicorn closes an idle keep-alive connection after `timeout_keep_alive`, but only
after a first response: a connection that never sends a byte, or sends its headers a
byte a minute, is held for ever, and nothing caps how many one address may hold.
These subclasses of uvicorn's own protocols add, per connection:

- a header time-out: the request line and headers must be complete within
  `header_timeout` seconds of the connection opening (and of each keep-alive request
  starting), or the connection is closed; this also ends idle pre-auth connections;
- a body time-out: a request's body must be complete within `body_timeout` seconds of
  its headers (bodies are read before the credentials they come with are checked, and
  are at most `max_body_bytes`), or the connection is closed;
- a header size cap (`max_header_bytes`; httptools itself has none), counted both on
  the bytes received while headers are incomplete (a header line that never ends) and
  on the request line and headers parsed (headers arriving in one read);
- a cap on open connections per client address (`max_connections_per_address`),
  WebSockets included: one more is closed at once. A connection from one of
  `server.trusted_proxies` is counted per request, against the client its
  `X-Forwarded-For` names (proxies.py), and answered 429 over the cap;
- an authenticated live stream leaves its address's count and is counted per credential
  (`max_streams_per_credential`): the app calls `scope["paneboard.slot"].authenticated`.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.protocols.websockets.auto import AutoWebSocketsProtocol

from .proxies import TrustedProxies

log = logging.getLogger("paneboard.connections")

#: The ASGI scope key under which a request finds its connection's slot.
SLOT = "paneboard.slot"


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


class _HeadersTooLarge(Exception):
    """Raised from a parser callback: httptools turns it into a parse error (400)."""


async def _too_many(scope: Any, receive: Any, send: Any) -> None:
    """The answer to a proxied request over its real client's connection cap."""
    body = json.dumps({"detail": "too many open connections from your address"}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 429,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"retry-after", b"1"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def protocols(
    header_timeout: float,
    max_header_bytes: int,
    per_address: int,
    *,
    body_timeout: float = 10.0,
    per_credential: int = 64,
    trusted: TrustedProxies | None = None,
) -> tuple[type, type]:
    """The (http, ws) protocol classes to hand uvicorn.Config, sharing the counters."""
    counts = Counts(per_address)
    streams = Counts(per_credential)
    trust = trusted or TrustedProxies([])
    # A proxied WebSocket's real client, handed from the HTTP protocol that upgrades it
    # to the WebSocket protocol it creates (one synchronous call in between).
    upgrading: dict[int, str] = {}
    assert AutoWebSocketsProtocol is not None, "uvicorn[standard] installs a WebSocket implementation"

    class GuardedWebSocket(AutoWebSocketsProtocol):  # type: ignore[misc,valid-type]  # a runtime-chosen class
        """Keeps counting an upgraded connection against its address until it closes."""

        def connection_made(self, transport: Any) -> None:
            peer = transport.get_extra_info("peername")
            real = upgrading.pop(id(transport), None)
            self._pb_ip = real or (str(peer[0]) if peer else "?")
            allowed = counts.add(self._pb_ip)  # a direct one was let in by the HTTP side
            super().connection_made(transport)
            if real is not None:
                self.client = (real, 0)
                if not allowed:
                    transport.abort()

        def connection_lost(self, exc: Exception | None) -> None:
            counts.remove(self._pb_ip)
            super().connection_lost(exc)

    class GuardedHttp(HttpToolsProtocol):
        _pb_timer: asyncio.TimerHandle | None = None
        _pb_body_timer: asyncio.TimerHandle | None = None
        _pb_peer = "?"
        _pb_proxied = False
        _pb_addr: str | None = None  # the address this connection is counted against now
        _pb_cred: str | None = None  # the credential its live stream is counted against
        _pb_header_bytes = 0
        _pb_parsed = 0
        _pb_too_large = False
        _pb_app: Any = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]  # as uvicorn's
            super().connection_made(transport)
            self._pb_app = self.app
            self._pb_peer = self.client[0] if self.client else "?"
            self._pb_proxied = trust.trusts(self._pb_peer)
            if not self._pb_proxied:
                self._pb_addr = self._pb_peer
                if not counts.add(self._pb_peer):
                    transport.abort()
                    return
            self._pb_arm()

        # --- header time-out and size ------------------------------------------------
        def _pb_arm(self) -> None:
            self._pb_disarm()
            self._pb_header_bytes = 0
            self._pb_timer = self.loop.call_later(header_timeout, self._pb_expire)

        def _pb_disarm(self) -> None:
            if self._pb_timer is not None:
                self._pb_timer.cancel()
                self._pb_timer = None

        def _pb_expire(self) -> None:
            self._pb_timer = None
            if not self.transport.is_closing():
                self.transport.close()

        def data_received(self, data: bytes) -> None:
            reading_headers = self._pb_timer is not None
            super().data_received(data)
            if reading_headers and self._pb_timer is not None:  # the headers are still not complete
                self._pb_header_bytes += len(data)
                if self._pb_header_bytes > max_header_bytes:
                    self._pb_disarm()
                    self._pb_too_large = True
                    self.send_400_response("Request headers too large.")

        def _pb_parsed_more(self, n: int) -> None:
            self._pb_parsed += n
            if self._pb_parsed > max_header_bytes:
                self._pb_too_large = True
                raise _HeadersTooLarge

        def on_message_begin(self) -> None:
            self._pb_parsed = 0
            super().on_message_begin()

        def on_url(self, url: bytes) -> None:
            self._pb_parsed_more(len(url))
            super().on_url(url)

        def on_header(self, name: bytes, value: bytes) -> None:
            self._pb_parsed_more(len(name) + len(value) + 4)
            super().on_header(name, value)

        def send_400_response(self, msg: str) -> None:
            if self._pb_too_large:
                msg = "Request headers too large."
            if not self.transport.is_closing():
                super().send_400_response(msg)

        # --- body time-out, proxied clients, stream slots -----------------------------
        def on_headers_complete(self) -> None:
            self._pb_disarm()
            upgrade = bool(self.parser.should_upgrade() and self._should_upgrade())
            self.app = self._pb_app
            if self._pb_proxied:
                real = trust.client(self._pb_peer, [v for n, v in self.headers if n == b"x-forwarded-for"])
                self._pb_real = real
                self.scope["client"] = (real, 0)
                if not upgrade:
                    self._pb_release()
                    self._pb_addr = real
                    if not counts.add(real):
                        self.app = _too_many
            if not upgrade:
                self._pb_body_timer = self.loop.call_later(body_timeout, self._pb_body_expire)
                self.scope[SLOT] = self  # type: ignore[literal-required]  # paneboard's own key
            super().on_headers_complete()

        def on_message_complete(self) -> None:
            self._pb_body_done()
            super().on_message_complete()

        def _pb_body_done(self) -> None:
            if self._pb_body_timer is not None:
                self._pb_body_timer.cancel()
                self._pb_body_timer = None

        def _pb_body_expire(self) -> None:
            self._pb_body_timer = None
            log.info("connections: %s sent no complete body in %.0f s; closing", self._pb_peer, body_timeout)
            if not self.transport.is_closing():
                self.transport.close()

        def authenticated(self, key: str) -> bool:
            """This request is an authenticated live stream: count it against `key`, not
            its address. False when `key` already holds its share (answer 429)."""
            if self._pb_cred is not None:
                return True
            if self._pb_addr is not None:
                counts.remove(self._pb_addr)
                self._pb_addr = None
            self._pb_cred = key
            return streams.add(key)

        def _pb_release(self) -> None:
            if self._pb_addr is not None:
                counts.remove(self._pb_addr)
                self._pb_addr = None
            if self._pb_cred is not None:
                streams.remove(self._pb_cred)
                self._pb_cred = None

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if self._pb_proxied or self._pb_cred is not None:
                self._pb_release()
            if self.transport.is_closing():
                return
            if not self._pb_proxied and self._pb_addr is None:  # back to an anonymous connection
                self._pb_addr = self._pb_peer
                if not counts.add(self._pb_peer):
                    self.transport.close()
                    return
            self._pb_arm()  # the next request's headers get the same time

        def handle_websocket_upgrade(self) -> None:
            self._pb_disarm()
            self._pb_body_done()
            self._pb_release()  # the WebSocket protocol counts it from here
            if self._pb_proxied:
                upgrading[id(self.transport)] = getattr(self, "_pb_real", self._pb_peer)
            try:
                super().handle_websocket_upgrade()
            finally:
                upgrading.pop(id(self.transport), None)

        def connection_lost(self, exc: Exception | None) -> None:
            self._pb_disarm()
            self._pb_body_done()
            self._pb_release()
            super().connection_lost(exc)

    return GuardedHttp, GuardedWebSocket
