"""Issue 17, the HTTP side, against real `paneboard serve` processes: password checks
off the event loop with back-off, tokens never logged."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

import httpx
import pytest
import websockets
from pbserver import make_tokens

PASSWORD = "correct horse battery"


@pytest.fixture
def sqlite_db(sqlite_template: Path, tmp_path: Path) -> str:
    path = tmp_path / "paneboard.db"
    shutil.copy(sqlite_template, path)
    return f"sqlite:///{path}"


async def _slow_hash(db: str, name: str) -> None:
    """Give `name` a password hash that takes about two seconds to verify (argon2 reads
    its cost from the stored hash), so a check in progress is easy to overlap."""
    from argon2 import PasswordHasher
    from paneboard_server.store import schema as s
    from paneboard_server.store.database import create_engine, resolve_url
    from sqlalchemy import update

    slow = PasswordHasher(time_cost=40, memory_cost=65536, parallelism=1).hash(PASSWORD)
    engine = create_engine(resolve_url(db))
    async with engine.begin() as conn:
        await conn.execute(update(s.viewers).where(s.viewers.c.name == name).values(password_hash=slow))
    await engine.dispose()


def test_healthz_is_served_while_a_password_is_being_verified(sqlite_db: str, server_factory: Any) -> None:
    """While one login's argon2 runs (seconds, by its stored cost), /healthz keeps
    answering: on the loop, every request would wait for the hash to finish."""

    async def go() -> None:
        await make_tokens(sqlite_db, viewer_password=PASSWORD)
        await _slow_hash(sqlite_db, "ana")
        sp = server_factory(sqlite_db)
        async with httpx.AsyncClient(base_url=sp.url, timeout=30) as c:
            login = asyncio.create_task(c.post("/api/login", json={"name": "ana", "password": "wrong!"}))
            served_during = 0
            while not login.done():
                r = await c.get("/healthz")
                assert r.status_code == 200
                if not login.done():
                    served_during += 1
            assert (await login).status_code == 401
        # Blocking the loop, at most the request or two that got in before the hash
        # started are answered; off the loop, dozens are.
        assert served_during >= 5, served_during

    asyncio.run(go())


def test_wrong_passwords_back_off_per_account_and_address(sqlite_db: str, server_factory: Any) -> None:
    config = "[limits]\nlogin_account_failures = 3\nlogin_address_failures = 6\n"

    async def go() -> None:
        await make_tokens(sqlite_db, viewer_password=PASSWORD)
        sp = server_factory(sqlite_db, config=config)
        async with httpx.AsyncClient(base_url=sp.url, timeout=30) as c:

            async def login(name: str, password: str) -> httpx.Response:
                return await c.post("/api/login", json={"name": name, "password": password})

            codes = [(await login("ana", "wrong-password")).status_code for _ in range(3)]
            assert codes == [401, 401, 401]
            r = await login("ana", "wrong-password")
            assert r.status_code == 401  # the 4th wrong one is checked, and starts the back-off
            r = await login("ana", PASSWORD)  # even the right password waits now
            assert r.status_code == 429 and int(r.headers["retry-after"]) >= 1
            # The same address trying other names: 3 more failures are checked (the
            # address's 7th starts its back-off), then it waits too, whatever the name.
            for name in ("bob", "cy", "dee"):
                assert (await login(name, "wrong-password")).status_code == 401
            r = await login("eve", "wrong-password")
            assert r.status_code == 429 and int(r.headers["retry-after"]) >= 1
        log = sp.log.read_text()
        lines = [ln for ln in log.splitlines() if "back-off" in ln]
        assert lines and all("'ana'" in ln or "'dee'" in ln for ln in lines), lines
        assert "Traceback" not in log

    asyncio.run(go())


def test_tokens_never_reach_the_log(sqlite_db: str, server_factory: Any) -> None:
    async def go() -> None:
        tokens = await make_tokens(sqlite_db)
        sp = server_factory(sqlite_db)
        bogus = "pbv_" + "Z" * 43
        async with httpx.AsyncClient(base_url=sp.url, timeout=30) as c:
            r = await c.get("/", params={"token": tokens["viewer"], "view": "wall"})
            assert r.status_code == 303
            assert (await c.get("/", params={"token": bogus})).status_code == 401
            # The name and the value percent-encoded: the server decodes both (and opens
            # the session), so the log must not show it either way.
            encoded = "".join(f"%{b:02X}" for b in tokens["viewer"].encode())
            assert (await c.get(f"/?%74oken={encoded}")).status_code == 303
            await c.get(f"/?%2574oken={encoded}&view=wall")  # double-encoded: no token, still not logged
            await c.get("/api/panes", params={"token": tokens["collector"]})  # a token in any query
            h = {"Authorization": f"Bearer {tokens['viewer']}"}
            assert (await c.get("/api/panes", headers=h)).status_code == 200
        ws_url = sp.url.replace("http", "ws") + f"/api/ingest?token={tokens['collector']}"
        async with websockets.connect(
            ws_url, additional_headers={"Authorization": f"Bearer {tokens['collector']}"}
        ) as ws:
            await ws.close()
        await asyncio.sleep(0.3)
        log = sp.log.read_text()
        assert "GET /?token=[redacted]&view=wall" in log  # the access log still says what happened
        for secret in (tokens["viewer"], tokens["collector"], bogus, tokens["viewer"][4:20], encoded[12:60]):
            assert secret not in log
        assert "GET /?%74oken=[redacted] " in log

    asyncio.run(go())


def test_one_login_page_and_no_web_section(tmp_path: Path) -> None:
    """The login page is web/login.html alone (no second, built-in copy), and the `[web]`
    table that nothing read is refused like any unknown key."""
    from paneboard_server.config import ConfigError, load_config

    cfg = tmp_path / "c.toml"
    cfg.write_text("[web]\ntheme = 'dark'\n")
    with pytest.raises(ConfigError, match="web"):
        load_config(cfg)
    from paneboard_server import app as app_module
    from paneboard_server.api import pages

    for module in (app_module, pages):
        assert not hasattr(module, "_LOGIN_HTML") and not hasattr(module, "_LOGIN_JS")
    d = pages.web_dir()
    assert d is not None and 'src="/js/login.js"' in (d / "login.html").read_text()
