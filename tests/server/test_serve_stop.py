"""`paneboard serve` stops at once on SIGTERM although a page's screen is long-polled.

uvicorn waits for every request in flight before the application shuts down, and a
screen's long poll holds its request up to 25 s: a supervisor's stop (or a test's
teardown) would wait that long, or kill the server before its own shutdown ran. The
stop answers the polls with what they have."""

from __future__ import annotations

import asyncio
import signal
import subprocess
from typing import Any

import httpx
import pytest
from paneboard_agent.uplink import UplinkSink
from paneboard_protocol import server_messages as sm
from pbserver import make_tokens, pane_update, wait_until
from support.commands import SeenRecorder

PASSWORD = "correct horse battery"


class WatchRecorder(SeenRecorder):
    """Notes the panes the server asks to watch: a page's screen request is in flight."""

    def __init__(self) -> None:
        super().__init__()
        self.watched: list[str] = []

    async def command(self, cmd: sm.PaneCommand) -> None:
        if isinstance(cmd, sm.Watch):
            self.watched.append(cmd.key.pane)


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_a_stop_answers_a_waiting_screen_poll_and_shuts_down_cleanly(
    db_url: str, server_factory: Any
) -> None:
    tokens = asyncio.run(make_tokens(db_url, viewer_password=PASSWORD))
    server = server_factory(db_url)
    assert server.proc is not None and server.log is not None

    async def go() -> httpx.Response:
        watches = WatchRecorder()
        up = UplinkSink(server.url, tokens["collector"])
        await up.start(commands=watches)
        try:
            await up.pane_changed(pane_update("h", "%1", "idle"))
            async with httpx.AsyncClient(base_url=server.url) as page:
                login = await page.post("/api/login", json={"name": "ana", "password": PASSWORD})
                assert login.status_code == 200, login.text
                pane = await wait_until(lambda: _first_pane(page), what="the pane on the board")
                poll = asyncio.ensure_future(page.get(f"/api/panes/{pane}/screen?wait=25", timeout=60))
                # the server asks the collector for the screen from inside the request:
                # the poll is waiting there now (no screen will come)
                await wait_until(lambda: watches.watched == ["%1"], what="the screen's watch")
                server.proc.send_signal(signal.SIGTERM)
                return await poll
        finally:
            await up.close(flush_timeout=0)

    answered = asyncio.run(go())
    assert answered.status_code == 200  # answered with what it has, not cut
    assert answered.json()["lines"] == []  # no screen came: it says so
    try:
        server.proc.wait(10)  # far short of the poll's 25 s
    except subprocess.TimeoutExpired:
        raise AssertionError(f"the server still runs:\n{server.log.read_text()[-2000:]}") from None
    assert "Application shutdown complete" in server.log.read_text()  # its own shutdown ran


async def _first_pane(page: httpx.AsyncClient) -> int | None:
    panes = (await page.get("/api/panes")).json()
    return panes[0]["id"] if panes else None
