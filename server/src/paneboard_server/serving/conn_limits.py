"""Limits on connections before any request is authenticated, as uvicorn protocols.

uvicorn closes an idle keep-alive connection after `timeout_keep_alive`, but only
after a first response: a connection that never sends a byte, or sends its headers a
byte a minute, is held for ever, and nothing caps how many one address may hold.
These subclasses of uvicorn's own protocols add, per connection:

- a header time-out: the request line and headers must be complete within
  `header_timeout` seconds of the connection opening (and of each keep-alive request
  starting), or the connection is closed; this also ends idle pre-auth connections;
- a header size cap (`max_header_bytes`; httptools itself has none);
- a cap on open connections per client address (`max_connections_per_address`),
  WebSockets included: one more is closed at once.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.protocols.websockets.auto import AutoWebSocketsProtocol

log = logging.getLogger("paneboard.connections")


class AddressCounts:
    """Open connections per client address, shared by the HTTP and WebSocket protocols."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.counts: dict[str, int] = {}
        self.refused = 0

    def add(self, ip: str) -> bool:
        n = self.counts.get(ip, 0) + 1
        self.counts[ip] = n
        return n <= self.cap

    def remove(self, ip: str) -> None:
        n = self.counts.get(ip, 0) - 1
        if n > 0:
            self.counts[ip] = n
        else:
            self.counts.pop(ip, None)


def protocols(header_timeout: float, max_header_bytes: int, per_address: int) -> tuple[type, type]:
    """The (http, ws) protocol classes to hand uvicorn.Config, sharing one counter."""
    counts = AddressCounts(per_address)
    assert AutoWebSocketsProtocol is not None, "uvicorn[standard] installs a WebSocket implementation"

    class GuardedWebSocket(AutoWebSocketsProtocol):  # type: ignore[misc,valid-type]  # a runtime-chosen class
        """Keeps counting an upgraded connection against its address until it closes."""

        def connection_made(self, transport: Any) -> None:
            peer = transport.get_extra_info("peername")
            self._pb_ip = str(peer[0]) if peer else "?"
            counts.add(self._pb_ip)  # the HTTP side let it in: it is counted, not refused
            super().connection_made(transport)

        def connection_lost(self, exc: Exception | None) -> None:
            counts.remove(self._pb_ip)
            super().connection_lost(exc)

    class GuardedHttp(HttpToolsProtocol):
        _pb_timer: asyncio.TimerHandle | None = None
        _pb_ip = "?"
        _pb_header_bytes = 0
        _pb_counted = False

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]  # as uvicorn's
            super().connection_made(transport)
            self._pb_ip = self.client[0] if self.client else "?"
            self._pb_counted = True
            if not counts.add(self._pb_ip):
                counts.refused += 1
                if counts.refused == 1 or counts.refused % 1000 == 0:
                    log.warning(
                        "connections: %s holds more than %d; refusing (%d refused so far)",
                        self._pb_ip,
                        counts.cap,
                        counts.refused,
                    )
                transport.abort()
                return
            self._pb_arm()

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
                    self.send_400_response("Request headers too large.")

        def on_headers_complete(self) -> None:
            self._pb_disarm()
            super().on_headers_complete()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing():
                self._pb_arm()  # the next request's headers get the same time

        def handle_websocket_upgrade(self) -> None:
            self._pb_disarm()
            if self._pb_counted:
                counts.remove(self._pb_ip)  # the WebSocket protocol counts it from here
                self._pb_counted = False
            super().handle_websocket_upgrade()

        def connection_lost(self, exc: Exception | None) -> None:
            self._pb_disarm()
            if self._pb_counted:
                counts.remove(self._pb_ip)
                self._pb_counted = False
            super().connection_lost(exc)

    return GuardedHttp, GuardedWebSocket
