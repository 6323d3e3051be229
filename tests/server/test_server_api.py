"""The HTTP API in-process (the real app, lifespan and database; httpx over ASGI):
authentication refusals, login and CSRF, read-only tokens, limits and headers."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
from paneboard_server.app import create_app
from paneboard_server.auth import accounts
from paneboard_server.config import Config
from paneboard_server.panes.core import Ingest
from paneboard_server.services import services_of
from paneboard_server.store import schema as s
from paneboard_server.store.database import create_engine, resolve_url
from pbserver import make_tokens
from sqlalchemy import select
from support.reports import pane_report

PASSWORD = "correct horse battery"


@asynccontextmanager
async def live(db: str, cfg: Config | None = None) -> AsyncIterator[tuple[Any, httpx.AsyncClient]]:
    app = create_app(cfg or Config(), resolve_url(db))
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
            yield app, client


async def ingest_one(app: Any, state: str, pane: str = "%1") -> int:
    core = services_of(app).core
    loop = asyncio.get_running_loop()
    done = loop.create_future()
    u = pane_report(pane, state, session="", window="", agent="claude", source="protocol")
    core.submit(Ingest(1, "s", 1, snapshot_hosts=None, panes=[u], on_commit=lambda: done.set_result(None)))
    await asyncio.wait_for(done, 10)
    return next(p.id for p in core.panes.values() if p.pane == pane)


def test_reads_need_credentials(db_url: str) -> None:
    async def go() -> None:
        tokens = await make_tokens(db_url)
        async with live(db_url) as (_app, c):
            for path in ("/api/panes", "/api/panes/1", "/api/panes/1/events", "/api/stream", "/metrics"):
                r = await c.get(path)
                assert r.status_code == 401, path
            assert (await c.get("/api/panes", headers={"Authorization": "Bearer nope"})).status_code == 401
            # A collector token is not a viewer token.
            bad = {"Authorization": f"Bearer {tokens['collector']}"}
            assert (await c.get("/api/panes", headers=bad)).status_code == 401
            ok = {"Authorization": f"Bearer {tokens['viewer']}"}
            assert (await c.get("/api/panes", headers=ok)).json() == []
            assert (await c.get("/healthz")).json()["ok"] is True
            r = await c.get("/")
            assert r.status_code == 303 and r.headers["location"] == "/login"

    asyncio.run(go())


def test_login_cookie_csrf_and_seen(db_url: str) -> None:
    async def go() -> None:
        await make_tokens(db_url, viewer_password=PASSWORD)
        async with live(db_url) as (app, c):
            pid = await ingest_one(app, "done")
            assert (await c.post("/api/login", json={"name": "ana", "password": "wrong"})).status_code == 401
            assert (await c.post("/api/login", json={"name": "bob", "password": PASSWORD})).status_code == 401
            r = await c.post("/api/login", json={"name": "ana", "password": PASSWORD})
            assert r.status_code == 200
            cookies = r.headers.get_list("set-cookie")
            session = next(x for x in cookies if x.startswith("pb_session="))
            assert "HttpOnly" in session and "SameSite=strict" in session.replace("Strict", "strict")
            csrf = r.json()["csrf"]
            assert (await c.get("/api/panes")).status_code == 200  # the cookie is enough to read
            # Changes need the CSRF header, and a same-origin Origin when one is sent.
            assert (await c.post(f"/api/panes/{pid}/seen")).status_code == 403
            assert (
                await c.post(f"/api/panes/{pid}/seen", headers={"X-CSRF-Token": "x" + csrf})
            ).status_code == 403
            evil = {"X-CSRF-Token": csrf, "Origin": "http://evil.example"}
            assert (await c.post(f"/api/panes/{pid}/seen", headers=evil)).status_code == 403
            assert services_of(app).core.panes[pid].state == "done"
            good = {"X-CSRF-Token": csrf, "Origin": "http://testserver"}
            r = await c.post(f"/api/panes/{pid}/seen", headers=good)
            assert r.status_code == 200 and r.json()["pane"]["state"] == "idle" and r.json()["changed"]
            hist = (await c.get(f"/api/panes/{pid}/events")).json()["events"]
            assert [(e["state"], e["reason"]) for e in hist][:2] == [("idle", "seen"), ("done", "report")]
            assert (await c.post("/api/panes/9999/seen", headers=good)).status_code == 404
            assert (await c.post("/api/logout", headers=good)).status_code == 200
            assert (await c.get("/api/panes")).status_code == 401

    asyncio.run(go())


def test_viewer_token_is_read_only_and_becomes_a_cookie(db_url: str) -> None:
    async def go() -> None:
        tokens = await make_tokens(db_url)
        async with live(db_url) as (app, c):
            pid = await ingest_one(app, "done")
            bearer = {"Authorization": f"Bearer {tokens['viewer']}"}
            assert (await c.post(f"/api/panes/{pid}/seen", headers=bearer)).status_code == 403
            assert (await c.get("/?token=wrong")).status_code == 401
            r = await c.get(f"/?token={tokens['viewer']}")
            assert r.status_code == 303 and r.headers["location"] == "/"
            assert (await c.get("/api/panes")).json()[0]["id"] == pid
            me = (await c.get("/api/me")).json()
            assert me["readonly"] is True and me["kind"] == "viewer-token"
            r = await c.post(f"/api/panes/{pid}/seen", headers={"X-CSRF-Token": me["csrf"]})
            assert r.status_code == 403 and "read-only" in r.text

    asyncio.run(go())


def test_body_limit_validation_and_headers(db_url: str) -> None:
    async def go() -> None:
        async with live(db_url) as (_app, c):
            r = await c.post(
                "/api/login", content=b"x" * (200 << 10), headers={"Content-Type": "application/json"}
            )
            assert r.status_code == 413

            async def chunks() -> AsyncIterator[bytes]:
                for _ in range(100):
                    yield b"y" * 4096

            r = await c.post("/api/login", content=chunks(), headers={"Content-Type": "application/json"})
            assert r.status_code == 413
            r = await c.post("/api/login", json={"name": "a" * 500, "password": "p"})
            assert r.status_code == 422
            h = (await c.get("/healthz")).headers
            assert (
                "default-src 'self'" in h["content-security-policy"]
                and h["x-content-type-options"] == "nosniff"
            )
            assert h["x-frame-options"] == "DENY"
            assert (await c.get("/openapi.json")).json()["info"]["title"] == "paneboard"

    asyncio.run(go())


def test_a_viewer_link_opened_again_and_again_is_one_session(db_url: str) -> None:
    """`GET /?token=` in a loop (a read-only credential, no cookies kept) finds the
    token's one session row instead of adding one a request; its cookie works, and
    another token has its own."""

    async def sessions(app: Any) -> list[tuple[Any, ...]]:
        async with services_of(app).core.engine.connect() as conn:
            w = s.web_sessions.c
            return [tuple(r) for r in (await conn.execute(select(w.token_id, w.readonly))).all()]

    async def go() -> None:
        tokens = await make_tokens(db_url)
        engine = create_engine(resolve_url(db_url))
        try:
            other = await accounts.create_token(engine, "wall2", "viewer")
        finally:
            await engine.dispose()
        async with live(db_url) as (app, c):
            cookies = set()
            for _ in range(30):
                c.cookies.clear()
                r = await c.get(f"/?token={tokens['viewer']}")
                assert r.status_code == 303
                cookies.add(r.cookies["pb_session"])
            assert len(cookies) == 1
            assert (await c.get("/api/me")).json()["kind"] == "viewer-token"
            assert await sessions(app) == [(2, True)]
            c.cookies.clear()
            assert (await c.get(f"/?token={other}")).status_code == 303
            assert sorted(await sessions(app)) == [(2, True), (3, True)]

    asyncio.run(go())
