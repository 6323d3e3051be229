"""Push subscriptions cannot point the server at internal addresses, and a bad one
never makes `/api/notify/test` fail: the real app in-process (httpx over ASGI)."""

from __future__ import annotations

import asyncio
import base64
import shutil
from pathlib import Path

import httpx
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from fastapi import FastAPI
from paneboard_server.app import create_app
from paneboard_server.config import Config, parse_config
from paneboard_server.store.database import resolve_url
from pbserver import make_tokens

PASSWORD = "correct horse battery"


def b64(b: bytes) -> str:
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


def keys() -> dict[str, str]:
    pub = (
        ec.generate_private_key(ec.SECP256R1())
        .public_key()
        .public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
    )
    return {"p256dh": b64(pub), "auth": b64(b"0123456789abcdef")}


@pytest.fixture
def sqlite_db(sqlite_template: Path, tmp_path: Path) -> str:
    path = tmp_path / "paneboard.db"
    shutil.copy(sqlite_template, path)
    return f"sqlite:///{path}"


async def _logged_in(app: FastAPI) -> httpx.AsyncClient:
    c = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://testserver")
    r = await c.post("/api/login", json={"name": "ana", "password": PASSWORD})
    assert r.status_code == 200
    c.headers["X-CSRF-Token"] = r.json()["csrf"]
    return c


REFUSED = [
    "http://127.0.0.1:18999/internal/admin",  # plain http
    "https://127.0.0.1:18999/internal/admin",  # loopback
    "https://localhost/x",  # a name that resolves to loopback
    "https://[::1]/x",
    "https://10.1.2.3/x",  # private
    "https://192.168.0.1/x",
    "https://169.254.169.254/latest/meta-data",  # link-local (cloud metadata)
    "https://[fe80::1]/x",
    "https://0.0.0.0/x",
    "https://[::ffff:127.0.0.1]/x",  # loopback written as IPv6
    "ftp://push.example/x",
]


def test_subscriptions_to_internal_addresses_and_bad_keys_are_refused(sqlite_db: str) -> None:
    async def go() -> None:
        await make_tokens(sqlite_db, viewer_password=PASSWORD)
        app = create_app(Config(), resolve_url(sqlite_db))
        async with app.router.lifespan_context(app):
            c = await _logged_in(app)
            for endpoint in REFUSED:
                r = await c.post("/api/push/subscribe", json={"endpoint": endpoint, "keys": keys()})
                assert r.status_code == 422, (endpoint, r.status_code)
            bad = {**keys(), "p256dh": b64(b"\x04" + b"\x01" * 64)}  # right length, no P-256 point
            r = await c.post("/api/push/subscribe", json={"endpoint": "https://push.example/x", "keys": bad})
            assert r.status_code == 422 and "P-256" in r.text
            assert (await c.post("/api/notify/test")).json()["push"] == 0
            await c.aclose()

    asyncio.run(go())


def test_loopback_is_allowed_only_when_configured_and_test_never_fails(sqlite_db: str) -> None:
    cfg = parse_config({"notify": {"push_allow_local": True}})

    async def go() -> None:
        await make_tokens(sqlite_db, viewer_password=PASSWORD)
        app = create_app(cfg, resolve_url(sqlite_db))
        async with app.router.lifespan_context(app):
            c = await _logged_in(app)
            endpoint = "http://127.0.0.1:9/push/nobody-listens"
            r = await c.post("/api/push/subscribe", json={"endpoint": endpoint, "keys": keys()})
            assert r.status_code == 204
            r = await c.post("/api/notify/test")  # the target refuses the connection: counted, not a 500
            assert r.status_code == 200 and r.json()["push"] == 0
            await c.aclose()

    asyncio.run(go())
