"""The whole path on one machine: a program in a real tmux pane writes an OSC 7501
report, `paneboard agent --server` (a subprocess, as a user runs it) sees it, and it
shows in `GET /api/panes` and on `/api/stream` of a real `paneboard serve`."""

from __future__ import annotations

import asyncio
import base64
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from pbserver import SSE, make_tokens, wait_until
from support.forked import spawn
from support.tmux import TmuxServer

pytestmark = pytest.mark.tmux

MSG = "Allow write to /etc/hosts?"


def reporter(report: bytes, delay: float = 0.5) -> str:
    code = (
        f"import os,time; time.sleep({delay}); os.write(1, bytes.fromhex('{report.hex()}')); time.sleep(120)"
    )
    return f'python3 -c "{code}"'


def test_report_in_a_tmux_pane_reaches_api_and_stream(
    db_url: str, server_factory: Any, tmp_path: Path
) -> None:
    tokens = asyncio.run(make_tokens(db_url))
    srv = server_factory(db_url)
    tmux = TmuxServer().start()
    agent = spawn(
        ["agent", "--server", srv.url, "--token", tokens["collector"], "--local", "--tmux-socket", tmux.name],
        log=tmp_path / "agent.log",
        env={**tmux.env, "PATH": os.environ["PATH"]},
    )
    auth = {"Authorization": f"Bearer {tokens['viewer']}"}

    async def go() -> None:
        async with httpx.AsyncClient() as c:
            await wait_until(lambda: _has_panes(c, srv.url, auth), 20, "the collector's first snapshot")
            async with c.stream("GET", srv.url + "/api/stream", headers=auth, timeout=httpx.Timeout(30)) as r:
                sse = SSE(r)
                assert (await sse.next())["event"] == "snapshot"
                msg = base64.b64encode(MSG.encode()).decode()
                report = f"\x1b]7501;state=blocked:kind=permission:app=terraform:msg={msg}\x1b\\".encode()
                t0 = time.monotonic()
                pane = tmux.new_window("main", "tf", reporter(report))
                ev = await sse.until(
                    lambda e: (
                        e["event"] == "change"
                        and any(p["pane"] == pane and p["state"] == "blocked" for p in e["data"]["panes"])
                    ),
                    20,
                )
                p = next(p for p in ev["data"]["panes"] if p["pane"] == pane)
                assert (p["kind"], p["msg"], p["agent"], p["source"]) == (
                    "permission",
                    MSG,
                    "terraform",
                    "protocol",
                )
                got = {x["pane"]: x for x in (await c.get(srv.url + "/api/panes", headers=auth)).json()}
                assert got[pane]["state"] == "blocked" and got[pane]["session"] == "main"
                assert time.monotonic() - t0 < 15
                assert (await c.get(srv.url + "/api/panes")).status_code == 401

    try:
        asyncio.run(go())
    finally:
        agent.terminate()
        try:
            agent.wait(10)
        except subprocess.TimeoutExpired:
            agent.kill()
            agent.wait(5)
        tmux.kill()


async def _has_panes(c: httpx.AsyncClient, url: str, auth: dict[str, str]) -> bool:
    return bool((await c.get(url + "/api/panes", headers=auth)).json())
