"""`paneboard pair`: a single-use sign-in link for a phone, on SQLite and PostgreSQL.

The link is made by the real command (a subprocess), opened against the real app, and
its audit read back from the store. Refusals are pages with one sentence, never JSON
or a traceback."""

from __future__ import annotations

import asyncio
import io
import time
from typing import Any

import httpx
import segno
from paneboard_server.app import create_app
from paneboard_server.auth import pairing
from paneboard_server.config import Config
from paneboard_server.services import services_of
from paneboard_server.store.database import create_engine, resolve_url
from pbserver import paneboard

BASE = "https://board.example"


def make_link(db: str, *args: str) -> str:
    out = paneboard("pair", *args, "--url", BASE + "/", db=db).stdout
    link, qr = out.split("\n", 1)
    assert link.startswith(BASE + "/pair/") and len(link) < 120, link
    # The code printed is the code of the very link printed beside it.
    want = io.StringIO()
    segno.make(link, error="m").terminal(out=want, compact=True)
    assert qr == want.getvalue()
    return link.removeprefix(BASE)


def with_app(db_url: str, body: Any) -> None:
    async def go() -> None:
        app = create_app(Config(), resolve_url(db_url))
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app, client=("203.0.113.7", 4000))
            async with (
                httpx.AsyncClient(transport=transport, base_url="http://t") as phone,
                httpx.AsyncClient(transport=transport, base_url="http://t") as other,
            ):
                await body(services_of(app), phone, other)

    asyncio.run(go())


async def audit_of(db_url: str) -> list[tuple[str, str | None, str | None, str]]:
    engine = create_engine(resolve_url(db_url))
    try:
        rows = await pairing.audit(engine)
    finally:
        await engine.dispose()
    return [(r.event, r.account, r.role, r.who) for r in reversed(rows)]


def test_a_link_signs_one_browser_in_once_as_a_plain_login(db_url: str) -> None:
    paneboard("user", "add", "olga", "--operator", db=db_url, stdin="correct horse\n")
    path = make_link(db_url, "olga")

    async def body(svc: Any, phone: httpx.AsyncClient, other: httpx.AsyncClient) -> None:
        r = await phone.get(path, headers={"User-Agent": "Phone\x1b[31m browser"})
        assert r.status_code == 303 and r.headers["location"] == "/", (r.status_code, r.text)
        cookies = r.headers.get_list("set-cookie")
        assert any(
            c.startswith("pb_session=") and "HttpOnly" in c and "SameSite=strict" in c for c in cookies
        )
        me = await phone.get("/api/me")
        assert me.status_code == 200, me.text
        # An operator's link without --operator grants the plain role: no answering.
        assert me.json()["name"] == "olga" and me.json()["operator"] is False
        assert me.json()["readonly"] is False and me.json()["csrf"] == phone.cookies["pb_csrf"]
        board = await phone.get("/")
        assert board.status_code == 200 and "<html" in board.text.lower()
        for browser in (other, phone):  # another browser, and the same one again
            again = await browser.get(path)
            assert again.status_code == 410, again.text
            assert "This sign-in link has been used already" in again.text
            assert "Traceback" not in again.text and again.headers["content-type"].startswith("text/html")
        assert (await other.get("/api/me")).status_code == 401

    with_app(db_url, body)
    events = asyncio.run(audit_of(db_url))
    assert [e[:3] for e in events] == [
        ("created", "olga", "plain"),
        ("signed-in", "olga", "plain"),
        ("used", "olga", "plain"),
        ("used", "olga", "plain"),
    ]
    assert "paneboard pair" in events[0][3] and events[1][3] == "203.0.113.7"
    shown = paneboard("pair", "--audit", db=db_url).stdout
    assert "Phone?[31m browser" in shown and "\x1b" not in shown  # the browser's name, made printable


def test_the_operator_role_only_when_asked_for_and_held(db_url: str) -> None:
    paneboard("user", "add", "ann", db=db_url, stdin="correct horse\n")
    paneboard("user", "add", "olga", "--operator", db=db_url, stdin="correct horse\n")
    refused = paneboard("pair", "ann", "--operator", "--url", BASE, db=db_url, check=False)
    assert refused.returncode == 1 and refused.stdout == ""
    assert refused.stderr.count("\n") == 1 and "'ann' is not an operator" in refused.stderr
    path = make_link(db_url, "olga", "--operator")

    async def body(svc: Any, phone: httpx.AsyncClient, other: httpx.AsyncClient) -> None:
        assert (await phone.get(path)).status_code == 303
        assert (await phone.get("/api/me")).json()["operator"] is True

    with_app(db_url, body)


def test_the_command_refuses_what_it_cannot_grant(db_url: str) -> None:
    for args, says in (
        (["nobody", "--url", BASE], "no dashboard login named 'nobody'"),
        (["ann"], "--url is needed"),
        (["ann", "--url", "javascript:alert(1)"], "not an http(s) address"),
        (["ann", "--url", BASE, "--minutes", "16"], "at most 15"),
        (["ann", "--url", BASE, "--minutes", "0"], "more than 0"),
    ):
        r = paneboard("pair", *args, db=db_url, check=False)
        assert r.returncode != 0 and r.stdout == "" and says in r.stderr, (args, r.stderr)
        assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr


def test_expired_and_unknown_links_are_refused_and_audited(db_url: str) -> None:
    async def body(svc: Any, phone: httpx.AsyncClient, other: httpx.AsyncClient) -> None:
        from paneboard_server.auth import accounts

        engine = svc.core.engine
        await accounts.add_viewer(engine, "ann", "correct horse")
        link = await pairing.create_link(engine, "ann", who="test", minutes=0.001)
        while time.time() <= link.expires_at:  # a link of 60 ms: wait it out
            await asyncio.sleep(0.05)
        r = await phone.get(f"/pair/{link.token}")
        assert r.status_code == 410 and "This sign-in link has expired" in r.text
        for bad in ("not-a-link", "x" * 5000):
            r = await other.get(f"/pair/{bad}")
            assert r.status_code == 404 and "This sign-in link is not valid" in r.text
        assert (await phone.get("/api/me")).status_code == 401

    with_app(db_url, body)
    events = asyncio.run(audit_of(db_url))
    assert [e[:2] for e in events] == [
        ("created", "ann"),
        ("expired", "ann"),
        ("unknown", None),
        ("unknown", None),
    ]


def test_two_browsers_racing_for_one_link_make_one_session(db_url: str) -> None:
    async def go() -> list[Any]:
        from paneboard_server.auth import accounts

        engine = create_engine(resolve_url(db_url))
        try:
            await accounts.add_viewer(engine, "ann", "correct horse")
            link = await pairing.create_link(engine, "ann", who="test")
            return await asyncio.gather(
                *(pairing.redeem(engine, link.token, who=f"b{i}", agent=None, lifetime=60) for i in range(4))
            )
        finally:
            await engine.dispose()

    got = asyncio.run(go())
    assert sum(isinstance(g, pairing.SignedIn) for g in got) == 1
    assert sorted(g for g in got if isinstance(g, str)) == ["used"] * 3


def test_refusals_from_one_address_are_slowed_down(db_url: str) -> None:
    async def body(svc: Any, phone: httpx.AsyncClient, other: httpx.AsyncClient) -> None:
        codes = [(await phone.get(f"/pair/guess{i}")).status_code for i in range(40)]
        assert 429 in codes, codes
        last = await phone.get("/pair/guess-more")
        assert last.status_code == 429 and "Retry-After" in last.headers and "try again in" in last.text

    with_app(db_url, body)
    # Only the refusals that were looked at are written: the back-off bounds the audit.
    assert len(asyncio.run(audit_of(db_url))) < 40
