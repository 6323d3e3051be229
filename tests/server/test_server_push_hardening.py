"""Web Push cannot be turned against the server's own network or other users (issue 21
item 1): no redirect is followed, only globally routable addresses are pushed to, an
account has a bounded number of devices and cannot take over another's endpoint, and
the notification log shows a viewer its own deliveries only. The real app in-process
(httpx over ASGI), real push service stand-ins on loopback."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI
from paneboard_server.app import create_app
from paneboard_server.auth import accounts
from paneboard_server.config import Config, parse_config
from paneboard_server.notify import targets
from paneboard_server.services import services_of
from paneboard_server.store.database import create_engine, resolve_url
from pbserver import make_tokens
from support.pushendpoint import PushService

PASSWORD = "correct horse battery"
LOCAL = parse_config({"notify": {"push_allow_local": True, "push_max_per_user": 3}})


@pytest.fixture
def sqlite_db(sqlite_template: Path, tmp_path: Path) -> str:
    path = tmp_path / "paneboard.db"
    shutil.copy(sqlite_template, path)
    return f"sqlite:///{path}"


async def _accounts(db: str) -> dict[str, str]:
    tokens = await make_tokens(db, viewer_password=PASSWORD)
    engine = create_engine(resolve_url(db))
    try:
        await accounts.add_viewer(engine, "bob", PASSWORD)
    finally:
        await engine.dispose()
    return tokens


async def _login(app: FastAPI, name: str) -> httpx.AsyncClient:
    c = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://testserver")
    r = await c.post("/api/login", json={"name": name, "password": PASSWORD})
    assert r.status_code == 200
    c.headers["X-CSRF-Token"] = r.json()["csrf"]
    return c


@pytest.fixture
def service():
    svc = PushService().start()
    yield svc
    svc.stop()


@pytest.fixture
def inner():
    """The address inside: it records anything that reaches it."""
    svc = PushService().start()
    yield svc
    svc.stop()


def test_a_redirecting_endpoint_never_reaches_the_inner_target(sqlite_db, service, inner) -> None:
    inner_sub = inner.subscription()  # a real inner push path: a POST there would be decrypted
    service.redirect_to = inner_sub["endpoint"]

    async def go() -> None:
        await _accounts(sqlite_db)
        app = create_app(LOCAL, resolve_url(sqlite_db))
        async with app.router.lifespan_context(app):
            ana = await _login(app, "ana")
            sub = {**service.subscription(), "keys": inner_sub["keys"]}
            assert (await ana.post("/api/push/subscribe", json=sub)).status_code == 204
            r = await ana.post("/api/notify/test")
            assert r.status_code == 200 and r.json()["push"] == 0
            log = (await ana.get("/api/notify/log")).json()["entries"]
            [entry] = [e for e in log if e["channel"] == "webpush"]
            assert not entry["ok"]
            assert entry["detail"].startswith("failed 307"), entry
            assert "201" not in entry["detail"]  # nothing of the inner target's answer
            await ana.aclose()

    asyncio.run(go())
    assert service.redirected == 1
    assert inner.received == [] and inner.errors == []  # not one request reached it


@pytest.mark.parametrize(
    "addr",
    [
        "100.64.0.1",  # CGNAT, Tailscale's range
        "100.127.255.254",
        "2002:7f00:1::1",  # 6to4 of 127.0.0.1
        "2002:c0a8:1::1",  # 6to4 of 192.168.0.1
        "64:ff9b::7f00:1",  # NAT64 of 127.0.0.1
        "64:ff9b:1::a00:1",  # NAT64 local-use prefix
        "192.0.2.10",  # documentation ranges
        "198.51.100.7",
        "203.0.113.9",
        "2001:db8::1",
        "198.18.0.1",  # benchmarking
        "192.88.99.1",  # 6to4 relay anycast
        "224.0.0.251",  # multicast
        "233.252.0.1",
        "ff0e::1",
        "240.0.0.1",  # reserved
        "::ffff:100.64.0.1",  # CGNAT written as IPv6
        "::",
        "not an address",
    ],
)
def test_addresses_that_are_not_globally_routable_are_refused(addr: str) -> None:
    assert not targets.is_public(addr)


@pytest.mark.parametrize("addr", ["8.8.8.8", "1.1.1.1", "2001:4860:4860::8888", "::ffff:8.8.8.8"])
def test_global_addresses_are_allowed(addr: str) -> None:
    assert targets.is_public(addr)


@pytest.mark.parametrize(
    "endpoint", ["https://100.64.0.1/push/x", "https://[2002:7f00:1::1]/x", "https://[64:ff9b::7f00:1]/x"]
)
def test_subscriptions_to_cgnat_6to4_and_nat64_are_refused(sqlite_db: str, endpoint: str, service) -> None:
    async def go() -> None:
        await _accounts(sqlite_db)
        app = create_app(Config(), resolve_url(sqlite_db))
        async with app.router.lifespan_context(app):
            ana = await _login(app, "ana")
            r = await ana.post("/api/push/subscribe", json={**service.subscription(), "endpoint": endpoint})
            assert r.status_code == 422 and "public" in r.text, r.text
            await ana.aclose()

    asyncio.run(go())


def test_the_send_time_resolver_refuses_a_name_that_now_resolves_inside() -> None:
    """A name that passed at subscribe time and resolves to loopback now: the connection
    the push client would open is refused by the resolver it connects through."""

    async def go() -> None:
        resolver = targets.safe_resolver()
        try:
            with pytest.raises(OSError, match="not a public address"):
                await resolver.resolve("localhost", 443)
        finally:
            await resolver.close()

    asyncio.run(go())


def test_one_account_cannot_take_over_another_accounts_endpoint(sqlite_db: str, service) -> None:
    async def go() -> None:
        await _accounts(sqlite_db)
        app = create_app(LOCAL, resolve_url(sqlite_db))
        async with app.router.lifespan_context(app):
            ana, bob = await _login(app, "ana"), await _login(app, "bob")
            anas = service.subscription()
            assert (await ana.post("/api/push/subscribe", json=anas)).status_code == 204
            evil = {**anas, "keys": service.subscription()["keys"]}  # bob's keys on ana's endpoint
            r = await bob.post("/api/push/subscribe", json=evil)
            assert r.status_code == 409 and "another account" in r.text
            r = await bob.request("DELETE", "/api/push/subscribe", json={"endpoint": anas["endpoint"]})
            assert r.status_code == 204
            assert (await bob.post("/api/notify/test")).json()["push"] == 0
            assert (await ana.post("/api/notify/test")).json()["push"] == 1  # still ana's, with ana's keys
            # ana re-subscribing the same endpoint (new keys) is hers to do.
            assert (await ana.post("/api/push/subscribe", json=anas)).status_code == 204
            await ana.aclose()
            await bob.aclose()

    asyncio.run(go())
    service.wait_for(1)
    assert not service.errors  # decrypted with ana's keys: bob's never replaced them


def test_an_account_has_at_most_the_configured_number_of_devices(sqlite_db: str, service) -> None:
    async def go() -> None:
        await _accounts(sqlite_db)
        app = create_app(LOCAL, resolve_url(sqlite_db))
        async with app.router.lifespan_context(app):
            ana, bob = await _login(app, "ana"), await _login(app, "bob")
            for _ in range(3):
                assert (await ana.post("/api/push/subscribe", json=service.subscription())).status_code == 204
            r = await ana.post("/api/push/subscribe", json=service.subscription())
            assert r.status_code == 409 and "most allowed" in r.text
            assert (await bob.post("/api/push/subscribe", json=service.subscription())).status_code == 204
            assert (await ana.post("/api/notify/test")).json()["push"] == 3
            await ana.aclose()
            await bob.aclose()

    asyncio.run(go())


def test_the_notify_log_shows_a_viewer_its_own_deliveries_only(sqlite_db: str, service) -> None:
    async def go() -> None:
        tokens = await _accounts(sqlite_db)
        app = create_app(LOCAL, resolve_url(sqlite_db))
        async with app.router.lifespan_context(app):
            ana, bob = await _login(app, "ana"), await _login(app, "bob")
            wall = httpx.AsyncClient(
                transport=httpx.ASGITransport(app=app),
                base_url="http://testserver",
                headers={"Authorization": f"Bearer {tokens['viewer']}"},
            )
            assert (await ana.post("/api/push/subscribe", json=service.subscription())).status_code == 204
            assert (await ana.post("/api/notify/test")).json()["push"] == 1
            r = await ana.post(
                "/api/notify/shown", json={"panes": ["7"], "state": "blocked", "reason": "block"}
            )
            assert r.status_code == 204
            mine = (await ana.get("/api/notify/log")).json()["entries"]
            assert sorted(e["channel"] for e in mine) == ["browser", "webpush"]
            assert (await bob.get("/api/notify/log")).json()["entries"] == []
            assert (await wall.get("/api/notify/log")).json()["entries"] == []
            await ana.aclose()
            await bob.aclose()
            await wall.aclose()

    asyncio.run(go())


def test_a_shown_notification_naming_a_pane_id_no_row_can_have_is_logged_without_a_pane(
    sqlite_db: str,
) -> None:
    """A page's report names panes as strings; one past a 64-bit row id (found by
    schemathesis) was bound as a parameter the database refused: a 500."""

    async def go() -> None:
        await _accounts(sqlite_db)
        app = create_app(LOCAL, resolve_url(sqlite_db))
        async with app.router.lifespan_context(app):
            ana = await _login(app, "ana")
            for pane in ("9" * 30, str(2**63), "-5", "0"):
                r = await ana.post(
                    "/api/notify/shown", json={"panes": [pane], "state": "blocked", "reason": "block"}
                )
                assert r.status_code == 204, (pane, r.text)
            entries = (await ana.get("/api/notify/log")).json()["entries"]
            assert len(entries) == 4 and all(e["pane_id"] is None for e in entries), entries
            assert any(e["detail"].endswith("; pane " + "9" * 30) for e in entries), entries
            await ana.aclose()

    asyncio.run(go())


def test_do_not_disturb_for_everyone_is_for_operators_a_plain_user_quiets_only_themselves(
    sqlite_db: str, service
) -> None:
    async def go() -> None:
        await _accounts(sqlite_db)
        engine = create_engine(resolve_url(sqlite_db))
        try:
            await accounts.add_viewer(engine, "olga", PASSWORD, operator=True)
        finally:
            await engine.dispose()
        app = create_app(LOCAL, resolve_url(sqlite_db))
        async with app.router.lifespan_context(app):
            ana, bob, olga = await _login(app, "ana"), await _login(app, "bob"), await _login(app, "olga")
            for c in (ana, bob):
                assert (await c.post("/api/push/subscribe", json=service.subscription())).status_code == 204
            r = await ana.put("/api/notify/dnd", json={"on": True, "scope": "everyone"})
            assert r.status_code == 403 and "operator" in r.text
            assert (await bob.get("/api/notify/quiet")).json()["dnd"] is None  # nobody silenced
            assert (await ana.put("/api/notify/dnd", json={"on": True})).status_code == 204  # her own
            q_ana, q_bob = (
                (await ana.get("/api/notify/quiet")).json(),
                (await bob.get("/api/notify/quiet")).json(),
            )
            assert (
                q_ana["dnd"] is not None and q_ana["dnd_mine"] is not None and q_ana["dnd_everyone"] is None
            )
            assert q_bob["dnd"] is None and not q_bob["operator"]
            svc = services_of(app).notify
            counts = await svc.handle(_blocked())
            assert counts["push"] == 1 and counts["quiet"] == 1  # bob told, ana quiet
            assert (await olga.get("/api/notify/quiet")).json()["operator"] is True
            assert (
                await olga.put("/api/notify/dnd", json={"on": True, "scope": "everyone"})
            ).status_code == 204
            assert (await bob.get("/api/notify/quiet")).json()["dnd_everyone"] is not None
            for c in (ana, bob, olga):
                await c.aclose()

    asyncio.run(go())


def test_a_plain_users_mute_is_their_own_an_operators_may_be_everyones(sqlite_db: str, service) -> None:
    """A plain login's host mute silences its own pushes, not an operator's (issue 40);
    a mute for everyone is an operator's to set and to lift; the API says whose each is."""

    async def go() -> None:
        await _accounts(sqlite_db)
        engine = create_engine(resolve_url(sqlite_db))
        try:
            await accounts.add_viewer(engine, "olga", PASSWORD, operator=True)
        finally:
            await engine.dispose()
        app = create_app(LOCAL, resolve_url(sqlite_db))
        async with app.router.lifespan_context(app):
            ana, bob, olga = await _login(app, "ana"), await _login(app, "bob"), await _login(app, "olga")
            for c in (ana, olga):
                assert (await c.post("/api/push/subscribe", json=service.subscription())).status_code == 204
            svc = services_of(app).notify
            r = await ana.post("/api/notify/mutes", json={"scope": "host", "value": "h", "minutes": 60})
            assert r.status_code == 200
            ana_mute = r.json()["id"]
            counts = await svc.handle(_blocked())
            assert (counts["push"], counts["quiet"]) == (1, 1)  # olga told, ana quiet
            [mine] = (await ana.get("/api/notify/quiet")).json()["mutes"]
            assert (mine["id"], mine["value"], mine["audience"]) == (ana_mute, "h", "me")
            assert (await olga.get("/api/notify/quiet")).json()["mutes"] == []  # not hers to see
            assert (await bob.delete(f"/api/notify/mutes/{ana_mute}")).status_code == 404  # nor bob's
            everyone = {"scope": "agent", "value": "claude", "audience": "everyone"}
            r = await ana.post("/api/notify/mutes", json=everyone)
            assert r.status_code == 403 and "operator" in r.text
            r = await olga.post("/api/notify/mutes", json=everyone)
            assert r.status_code == 200
            shared = r.json()["id"]
            [theirs] = (await bob.get("/api/notify/quiet")).json()["mutes"]
            assert (theirs["id"], theirs["audience"]) == (shared, "everyone")
            counts = await svc.handle(_blocked())
            assert (counts["push"], counts["quiet"]) == (0, 1)  # one change, quiet for everyone
            r = await ana.delete(f"/api/notify/mutes/{shared}")
            assert r.status_code == 403 and "operator" in r.text
            assert (await ana.delete(f"/api/notify/mutes/{ana_mute}")).status_code == 204
            assert (await olga.delete(f"/api/notify/mutes/{shared}")).status_code == 204
            assert (await svc.handle(_blocked()))["push"] == 2
            for c in (ana, bob, olga):
                await c.aclose()

    asyncio.run(go())


def _blocked():
    from paneboard_server.notify.events import StateChange

    return StateChange(
        pane_id="7", host="h", session="s", window="0", agent="claude", state="blocked",
        prev_state="working", kind="permission", msg="Apply?", t=1.0,
    )  # fmt: skip
