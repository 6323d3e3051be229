"""Behind a real nginx (the configuration docs/operations.md documents), per-address
limits count real clients, not the proxy: one client's wrong passwords or streams do not
lock every other user out. Clients are told apart by their loopback source address
(127.0.0.2, 127.0.0.3: all of 127/8 is this machine), which nginx appends to
`X-Forwarded-For`."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from pbserver import free_port, make_tokens

ROOT = Path(__file__).resolve().parents[2]
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"

CONFIG = """\
[server]
trusted_proxies = ["127.0.0.1"]
[limits]
login_address_failures = 3
login_account_failures = 100
max_connections_per_address = 4
max_streams_per_credential = 3
hello_timeout = 30
"""


def documented_locations(upstream: int) -> str:
    """The nginx `location` blocks of docs/operations.md's "Reverse proxy" section."""
    text = (ROOT / "docs/operations.md").read_text()
    section = text[text.index("## Reverse proxy") :]
    block = re.search(r"```nginx\n(.*?)```", section, re.S)
    assert block is not None, "docs/operations.md has no nginx example"
    return block.group(1).replace("127.0.0.1:8765", f"127.0.0.1:{upstream}")


@pytest.fixture
def nginx(tmp_path: Path) -> Iterator[Any]:
    """Start nginx in front of a port; yields (start(upstream) -> proxy url)."""
    assert Path(NGINX).exists(), "nginx is needed (scripts/lib/bootstrap.sh installs it)"
    procs: list[subprocess.Popen] = []

    def start(upstream: int) -> str:
        port = free_port()
        d = tmp_path / "nginx"
        d.mkdir()
        user = "user root root;" if os.geteuid() == 0 else ""
        temps = "\n".join(
            f"{k}_temp_path {d}/{k};" for k in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
        )
        (d / "nginx.conf").write_text(
            f"""{user}
worker_processes 1;
daemon off;
pid {d}/nginx.pid;
error_log {d}/error.log;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    {temps}
    server {{
        listen 127.0.0.1:{port};
        {documented_locations(upstream)}
    }}
}}
"""
        )
        log = open(d / "stderr.log", "wb")  # noqa: SIM115 - the process owns it
        proc = subprocess.Popen([NGINX, "-p", str(d), "-c", str(d / "nginx.conf")], stdout=log, stderr=log)
        log.close()
        procs.append(proc)
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 20
        while True:
            if proc.poll() is not None:
                raise AssertionError(f"nginx exited: {(d / 'stderr.log').read_text()}")
            try:
                if httpx.get(url + "/healthz", timeout=1).status_code == 200:
                    return url
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise AssertionError("nginx did not start")
            time.sleep(0.05)

    yield start
    for p in procs:
        p.terminate()
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(5)


@pytest.fixture
def proxied(sqlite_template: Path, tmp_path: Path, server_factory: Any, nginx: Any) -> Any:
    path = tmp_path / "paneboard.db"
    shutil.copy(sqlite_template, path)
    db = f"sqlite:///{path}"
    tokens = asyncio.run(make_tokens(db, viewer_password="right-password-1"))
    server = server_factory(db, config=CONFIG)
    return nginx(server.port), tokens, db


def client_from(source: str, **kw: Any) -> httpx.Client:
    return httpx.Client(transport=httpx.HTTPTransport(local_address=source), timeout=10, **kw)


def test_wrong_passwords_from_one_client_do_not_lock_out_another(proxied: Any) -> None:
    url, _tokens, _db = proxied
    with client_from("127.0.0.2") as attacker:
        codes = []
        for i in range(6):  # a forged X-Forwarded-For does not make it someone else
            r = attacker.post(
                url + "/api/login",
                json={"name": "nobody", "password": "wrong"},
                headers={"X-Forwarded-For": f"10.9.8.{i}"},
            )
            codes.append(r.status_code)
        assert codes[:3] == [401, 401, 401] and 429 in codes[3:], codes
    with client_from("127.0.0.3") as user:
        r = user.post(url + "/api/login", json={"name": "ana", "password": "right-password-1"})
        assert r.status_code == 200, (r.status_code, r.text)


async def _open_stream(client: httpx.AsyncClient, url: str, token: str) -> tuple[int, Any]:
    req = client.build_request("GET", url + "/api/stream", headers={"Authorization": f"Bearer {token}"})
    resp = await client.send(req, stream=True)
    return resp.status_code, resp


def test_streams_count_per_credential_not_per_address(proxied: Any) -> None:
    url, tokens, db = proxied

    async def run() -> None:
        from paneboard_server.auth import accounts
        from paneboard_server.store.database import create_engine, resolve_url

        engine = create_engine(resolve_url(db))
        try:
            other = await accounts.create_token(engine, "desk", "viewer")
        finally:
            await engine.dispose()
        timeout = httpx.Timeout(10, read=30)
        a = httpx.AsyncClient(transport=httpx.AsyncHTTPTransport(local_address="127.0.0.2"), timeout=timeout)
        b = httpx.AsyncClient(transport=httpx.AsyncHTTPTransport(local_address="127.0.0.3"), timeout=timeout)
        held: list[Any] = []
        try:
            for _ in range(3):  # the wall token's share, from one address
                code, resp = await _open_stream(a, url, tokens["viewer"])
                held.append(resp)
                assert code == 200, code
            code, resp = await _open_stream(a, url, tokens["viewer"])
            held.append(resp)
            assert code == 429, code  # over the credential's share
            # The same address with other credentials, and another address: not counted
            # against the wall token's streams.
            for client in (a, b):
                code, resp = await _open_stream(client, url, other)
                held.append(resp)
                assert code == 200, code
            r = await b.get(url + "/healthz")
            assert r.status_code == 200
        finally:
            for resp in held:
                await resp.aclose()
            await a.aclose()
            await b.aclose()

    asyncio.run(run())


def test_one_real_client_cannot_hold_more_than_its_connections(proxied: Any) -> None:
    """A proxied client's open connections count against its own address: past the cap
    the next is refused, while another client behind the same proxy is served. (The
    connections held are collector WebSockets waiting for their hello, one token each:
    nginx buffers request bodies, and a token holds one ingest connection at a time.)"""
    url, _tokens, db = proxied
    import websockets.sync.client as wsc
    from websockets.exceptions import InvalidStatus

    async def tokens() -> list[str]:
        from paneboard_server.auth import accounts
        from paneboard_server.store.database import create_engine, resolve_url

        engine = create_engine(resolve_url(db))
        try:
            return [await accounts.create_token(engine, f"c{i}", "collector") for i in range(6)]
        finally:
            await engine.dispose()

    keys = asyncio.run(tokens())
    ws_url = url.replace("http://", "ws://") + "/api/ingest"

    def connect(source: str, token: str) -> Any:
        return wsc.connect(
            ws_url,
            source_address=(source, 0),
            open_timeout=10,
            additional_headers={"Authorization": f"Bearer {token}"},
        )

    with contextlib.ExitStack() as held:
        for key in keys[:4]:  # open WebSockets that have not said hello yet
            held.enter_context(connect("127.0.0.2", key))
        with pytest.raises(InvalidStatus) as refused, connect("127.0.0.2", keys[4]):
            pass
        assert refused.value.response.status_code == 429
        with connect("127.0.0.3", keys[5]) as ok:
            ok.ping().wait(10)
