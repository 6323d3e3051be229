"""What the connection limits (serving/conn_limits.py) rely on in uvicorn, checked on a real
uvicorn serving a real socket: that it makes the protocol handed as `Config(http=...)`
with arguments its own HTTP protocol takes, that a request's scope names its connection by
the addresses the transport gives (so the middleware finds it), and that an upgrade to
WebSocket goes through `transport.set_protocol` (so the connection stays counted until it
closes). These fail when uvicorn changes under the adapter."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import uvicorn
import websockets.sync.client as wsc
from paneboard_server.serving import SLOT, connection_limits
from paneboard_server.serving.conn_limits import ConnectionLimitsMiddleware, Limits


async def _app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] == "lifespan":
        while (await receive())["type"] != "lifespan.shutdown":
            await send({"type": "lifespan.startup.complete"})
        await send({"type": "lifespan.shutdown.complete"})
    elif scope["type"] == "http":
        body = b"slot" if SLOT in scope else b"no slot"
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-length", b"%d" % len(body))],
            }
        )
        await send({"type": "http.response.body", "body": body})
    else:
        await receive()  # websocket.connect
        await send({"type": "websocket.accept"})
        while (await receive())["type"] != "websocket.disconnect":
            await send({"type": "websocket.send", "text": "pong"})


@pytest.fixture
def served(request: pytest.FixtureRequest) -> Iterator[tuple[int, Limits]]:
    """uvicorn on a socket of its own; `request.param`: (header_timeout, limit_concurrency)."""
    header_timeout, concurrency = getattr(request, "param", (30.0, None))
    http, limited = connection_limits(header_timeout, 8192, 4)
    app = limited(_app)
    assert isinstance(app, ConnectionLimitsMiddleware)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    server = uvicorn.Server(
        uvicorn.Config(app, http=http, log_config=None, lifespan="on", limit_concurrency=concurrency)
    )
    thread = threading.Thread(target=lambda: asyncio.run(server.serve(sockets=[sock])), daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.02)
    try:
        yield sock.getsockname()[1], app.limits
    finally:
        server.should_exit = True
        thread.join(30)
        sock.close()


def _settled(limits: Limits, want: dict[str, int]) -> dict[str, int]:
    """The address counts once they equal `want`, or as they are after a long wait."""
    deadline = time.monotonic() + 20
    while limits.addresses.counts != want and time.monotonic() < deadline:
        time.sleep(0.02)
    return dict(limits.addresses.counts)


def test_uvicorn_makes_the_protocol_and_a_request_finds_its_connection(served: tuple[int, Limits]) -> None:
    port, limits = served
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=10) as client:
        assert client.get("/").text == "slot"
        assert client.get("/again").text == "slot"  # the same kept-alive connection
        assert len(limits.open) == 1
    assert _settled(limits, {}) == {}
    assert limits.open == {}


def test_an_upgraded_connection_stays_counted_until_it_closes(served: tuple[int, Limits]) -> None:
    port, limits = served
    with wsc.connect(f"ws://127.0.0.1:{port}/ws", open_timeout=10) as ws:
        ws.send("ping")
        assert ws.recv(timeout=10) == "pong"
        (conn,) = limits.open.values()
        assert conn.upgraded  # uvicorn handed it over through the transport
        assert limits.addresses.counts == {"127.0.0.1": 1}
    assert _settled(limits, {}) == {}


@pytest.mark.parametrize("served", [(1.0, 1)], indirect=True)
def test_an_answer_uvicorn_gives_itself_leaves_no_connection_untimed(served: tuple[int, Limits]) -> None:
    """Over `limit_concurrency` uvicorn answers 503 without the application, so the
    middleware never says the request ended and the header time-out is not armed again:
    the connection must not be left open for headers trickled after it."""
    port, _limits = served
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        s.settimeout(10)
        assert s.recv(65536).startswith(b"HTTP/1.1 503")
        s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")
        s.settimeout(0.3)
        cut = False
        deadline = time.monotonic() + 15
        while not cut and time.monotonic() < deadline:
            try:
                s.sendall(b"X-Slow: 1\r\n")  # a header line now and then, never the end
                cut = s.recv(65536) == b""
            except TimeoutError:
                continue
            except (BrokenPipeError, ConnectionResetError):
                cut = True
        assert cut, "a client trickling headers after a 503 was held"
