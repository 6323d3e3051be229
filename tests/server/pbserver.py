"""Helpers for the server tests: free ports, the paneboard command, server processes, SSE."""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from support.clirun import CliResult, run_cli_text
from support.forked import Forked, spawn
from support.listening import listens
from support.reports import pane_report


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def paneboard(*args: str, db: str, stdin: str | None = None, check: bool = True) -> CliResult[str]:
    """`paneboard *args` with `PANEBOARD_DB=db`, called in this process (support.clirun).

    These commands are tested for what they print, exit with and write to the store; a
    fresh interpreter per call added only its start-up. `ServerProc` runs the real process.
    """
    call = functools.partial(run_cli_text, *args, stdin=stdin or "", env={**os.environ, "PANEBOARD_DB": db})
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        result = call()
    else:  # under a running loop (Playwright's sync API has one): the command runs its own
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            result = pool.submit(call).result()
    if check and result.returncode != 0:
        raise AssertionError(f"paneboard {' '.join(args)} failed: {result.stderr}")
    return result


@dataclass
class ServerProc:
    db: str
    port: int
    config: Path | None = None
    proc: Forked | None = None
    log: Path | None = None
    extra: list[str] = field(default_factory=list)
    pick_port: bool = False  # `port` came from free_port(): another may be picked

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 90) -> None:
        """`paneboard serve`, forked ready-loaded (support.forked), until it is healthy
        and the port's listener is its own (support.listening). A port this process picked
        (`pick_port`) that another test process took first is picked again; a port the test
        chose is its to keep, so losing it is a failure."""
        assert self.log is not None
        for _ in range(3):
            if self._start_once(timeout):
                return
            self.port = free_port()
        raise AssertionError(f"server found its port taken three times: {self.log.read_text()[-2000:]}")

    def _start_once(self, timeout: float) -> bool:
        """True once healthy; False if the port was taken and may be picked again."""
        assert self.log is not None
        args = ["serve", "--port", str(self.port), "--db", self.db, *self.extra]
        if self.config is not None:
            args += ["--config", str(self.config)]
        before = self.log.stat().st_size if self.log.exists() else 0  # a restart appends
        self.proc = spawn(args, log=self.log)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                said = self.log.read_bytes()[before:].decode(errors="replace")
                if self.pick_port and "address already in use" in said.lower():
                    return False
                raise AssertionError(f"server exited: {said[-2000:]}")
            try:
                healthy = httpx.get(self.url + "/healthz", timeout=1).status_code == 200
            except httpx.HTTPError:
                healthy = False
            if healthy and listens(self.proc.pid, self.port):
                return True
            time.sleep(0.05)
        raise AssertionError(f"server did not start: {self.log.read_text()[-2000:]}")

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(sig)
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)


class SSE:
    """Reads Server-Sent Events from a live httpx stream."""

    def __init__(self, response: httpx.Response) -> None:
        self.response = response
        self.lines = response.aiter_lines()
        self.last_id: str | None = None

    async def next(self, timeout: float = 5) -> dict[str, Any]:
        return await asyncio.wait_for(self._next(), timeout)

    async def _next(self) -> dict[str, Any]:
        event: dict[str, Any] = {}
        data: list[str] = []
        async for line in self.lines:
            if line == "":
                if data:
                    event["data"] = json.loads("\n".join(data))
                    return event
                event = {}
                continue
            if line.startswith(":"):
                continue
            name, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if name == "data":
                data.append(value)
            elif name == "event":
                event["event"] = value
            elif name == "id":
                event["id"] = value
                self.last_id = value
        raise EOFError("stream ended")

    async def until(self, pred: Any, timeout: float = 10) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            ev = await self.next(max(0.05, deadline - time.monotonic()))
            if pred(ev):
                return ev


async def open_sse(client: httpx.AsyncClient, url: str, headers: dict[str, str]) -> AsyncIterator[SSE]:
    async with client.stream("GET", url, headers=headers, timeout=httpx.Timeout(30, read=60)) as r:
        assert r.status_code == 200, r.status_code
        yield SSE(r)


async def make_tokens(db: str, *, viewer_password: str | None = None) -> dict[str, str]:
    """Create a collector token, a viewer token and (optionally) a viewer account."""
    from paneboard_server.auth import accounts
    from paneboard_server.store.database import create_engine, resolve_url

    engine = create_engine(resolve_url(db))
    try:
        out = {
            "collector": await accounts.create_token(engine, "col", "collector"),
            "viewer": await accounts.create_token(engine, "wall", "viewer"),
        }
        if viewer_password is not None:
            await accounts.add_viewer(engine, "ana", viewer_password)
        return out
    finally:
        await engine.dispose()


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def collector_token(db: str, name: str) -> str:
    """One more collector token (`make_tokens` makes the first)."""
    from paneboard_server.auth import accounts
    from paneboard_server.store.database import create_engine, resolve_url

    engine = create_engine(resolve_url(db))
    try:
        return await accounts.create_token(engine, name, "collector")
    finally:
        await engine.dispose()


async def connect_collector(url: str, token: str, stream: str) -> Any:
    """A raw ingest WebSocket past its hello: what a collector's first message meets."""
    import websockets

    ws = await websockets.connect(url.replace("http", "ws") + "/api/ingest", additional_headers=bearer(token))
    await ws.send(json.dumps({"type": "hello", "protocol": 1, "stream": stream}))
    welcome = json.loads(await ws.recv())
    assert welcome["type"] == "welcome", welcome
    return ws


def pane_update(
    host: str,
    pane: str,
    state: str | None,
    *,
    agent: str | None = "claude",
    msg: str | None = None,
    kind: str | None = None,
    t: float | None = None,
    evidence: dict[str, Any] | None = None,
) -> Any:
    return pane_report(
        pane,
        state,
        host=host,
        t=t or time.time(),
        session="main",
        window="0",
        agent=agent,
        kind=kind,
        msg=msg,
        source="protocol",
        evidence=evidence or {},
    )


async def wait_until(pred: Any, timeout: float = 10, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        got = pred()
        if asyncio.iscoroutine(got):
            got = await got
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)
