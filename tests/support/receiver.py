"""A local HTTP receiver for Apprise's `json://` channel (and a private `ntfy://` server,
which is sent JSON too): records every POSTed JSON body and its headers."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from aiohttp import web


class JsonReceiver:
    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []  # each body's, names in lower case
        self.cond = threading.Condition()
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.port = 0

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        app = web.Application(client_max_size=65536)
        app.router.add_post("/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app)
        self._loop.run_until_complete(self._runner.setup())
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        self._loop.run_until_complete(site.start())
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self._ready.set()
        self._loop.run_forever()

    async def _handle(self, request: web.Request) -> web.Response:
        body = await request.json()
        with self.cond:
            self.headers.append({k.lower(): v for k, v in request.headers.items()})
            self.bodies.append(body)
            self.cond.notify_all()
        return web.Response(status=200, text="ok")

    @property
    def url(self) -> str:
        return f"json://127.0.0.1:{self.port}/hook"

    @property
    def ntfy_url(self) -> str:
        """The same receiver as a private ntfy server's topic (Apprise posts JSON to it)."""
        return f"ntfy://127.0.0.1:{self.port}/agents"

    def start(self) -> JsonReceiver:
        self._thread.start()
        assert self._ready.wait(10)
        return self

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    def wait_for(self, n: int, timeout: float = 10.0) -> list[dict[str, Any]]:
        with self.cond:
            self.cond.wait_for(lambda: len(self.bodies) >= n, timeout)
        assert len(self.bodies) >= n, f"got {len(self.bodies)} messages, wanted {n}"
        return self.bodies
