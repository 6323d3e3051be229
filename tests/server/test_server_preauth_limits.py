"""Before authentication nothing is held for ever: slow headers and idle connections
are cut, one address cannot hold more than its share (a real server, raw sockets)."""

from __future__ import annotations

import contextlib
import shutil
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from pbserver import ServerProc, free_port
from support.proctier import spawns

CONFIG = """\
[limits]
header_timeout = 1
body_timeout = 1
max_connections_per_address = 5
max_header_bytes = 8192
"""


@pytest.fixture(scope="module")
@spawns
def shared_server(sqlite_template: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProc]:
    """One server for the module: every test here only opens connections of its own and
    closes them, and none changes the store, so a server per test bought only its start."""
    d = tmp_path_factory.mktemp("preauth")
    shutil.copy(sqlite_template, d / "paneboard.db")
    (d / "config.toml").write_text(CONFIG)
    sp = ServerProc(f"sqlite:///{d / 'paneboard.db'}", free_port(), d / "config.toml", log=d / "server.log")
    sp.start()
    try:
        yield sp
    finally:
        sp.stop()


@pytest.fixture
def server(shared_server: ServerProc) -> ServerProc:
    """The shared server, checked to be up and answering before each test."""
    assert shared_server.proc is not None and shared_server.proc.poll() is None, "the server exited"
    assert httpx.get(shared_server.url + "/healthz", timeout=10).status_code == 200
    return shared_server


def _closed_by_server(sock: socket.socket, within: float) -> bool:
    """True if the server closes `sock` (EOF or reset) before `within` seconds pass."""
    sock.settimeout(within)
    try:
        while True:
            data = sock.recv(65536)
            if not data:
                return True
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def test_slow_headers_and_idle_connections_are_cut(server: Any) -> None:
    idle = socket.create_connection(("127.0.0.1", server.port))
    slow = socket.create_connection(("127.0.0.1", server.port))
    slow.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
    deadline = time.monotonic() + 15
    cut = False
    slow.settimeout(0.3)
    while time.monotonic() < deadline and not cut:
        try:
            slow.sendall(b"X-Slow: 1\r\n")  # a header line now and then, never the end
            cut = slow.recv(65536) == b""
        except TimeoutError:
            continue
        except (BrokenPipeError, ConnectionResetError):
            cut = True
    assert cut, "a client trickling headers was held"
    assert _closed_by_server(idle, 15), "an idle connection was held"
    idle.close()
    slow.close()


def test_headers_too_large_are_refused(server: Any) -> None:
    with socket.create_connection(("127.0.0.1", server.port)) as s:
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 20000)
        s.settimeout(10)
        assert s.recv(65536).startswith(b"HTTP/1.1 400")


def test_headers_too_large_in_one_read_are_refused(server: Any) -> None:
    """The whole request, headers over the cap and their end, arrives in one read."""
    with socket.create_connection(("127.0.0.1", server.port)) as s:
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 20000 + b"\r\n\r\n")
        s.settimeout(10)
        assert s.recv(65536).startswith(b"HTTP/1.1 400")


def test_many_small_headers_over_the_cap_are_refused(server: Any) -> None:
    with socket.create_connection(("127.0.0.1", server.port)) as s:
        lines = b"".join(b"X-H%d: %s\r\n" % (i, b"v" * 50) for i in range(400))  # ~24 KB
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n" + lines + b"\r\n")
        s.settimeout(10)
        assert s.recv(65536).startswith(b"HTTP/1.1 400")


def test_a_body_that_never_comes_is_cut(server: Any) -> None:
    """`POST /api/login` announcing 60,000 bytes, then silence: closed after body_timeout."""
    with socket.create_connection(("127.0.0.1", server.port)) as s:
        s.sendall(
            b"POST /api/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b'Content-Length: 60000\r\n\r\n{"name": '
        )
        started = time.monotonic()
        assert _closed_by_server(s, 15), "a request whose body never came was held"
        assert time.monotonic() - started < 10


def test_a_body_sent_in_time_is_answered(server: Any) -> None:
    with socket.create_connection(("127.0.0.1", server.port)) as s:
        body = b'{"name": "nobody", "password": "x"}'
        s.sendall(
            b"POST /api/login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n" % len(body)
        )
        time.sleep(0.3)  # well within body_timeout
        s.sendall(body)
        s.settimeout(10)
        assert s.recv(65536).startswith(b"HTTP/1.1 401")


def test_one_address_cannot_hold_more_than_its_cap(server: Any) -> None:
    held = [socket.create_connection(("127.0.0.1", server.port)) for _ in range(5)]
    try:
        extra = socket.create_connection(("127.0.0.1", server.port))
        # A whole request: an accepted connection answers it before any timeout cuts it
        # (header_timeout would close an idle one too), one over the cap gets no answer.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            extra.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        extra.settimeout(5)
        try:
            answer = extra.recv(65536)
        except ConnectionResetError:
            answer = b""
        assert answer == b"", f"a connection over the per-address cap was answered: {answer[:40]!r}"
        extra.close()
    finally:
        for s in held:
            s.close()
    deadline = time.monotonic() + 10
    while True:  # the address's share is free again once its connections are gone
        try:
            assert httpx.get(server.url + "/healthz", timeout=5).status_code == 200
            break
        except httpx.HTTPError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
