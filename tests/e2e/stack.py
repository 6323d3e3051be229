"""The whole paneboard path for end-to-end tests and the benchmark: a private tmux
server reached only through a real OpenSSH sshd on loopback, a real collector
(`paneboard agent --server ... --ssh ...`), a real `paneboard serve` on a migrated
SQLite, and (in the tests that want one) a real Chromium.

Builds on `tests/web/harness.py` (database, tokens, server process) and
`tests/support` (tmux, sshd); adds what the fault tests need: a server config with a
short grace period, and ways to kill and restart each part.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

from support.sshd import Sshd
from support.tmux import TmuxServer
from support.wait import wait_for
from web.harness import PANEBOARD, Paneboard, _toml

HOST = "127.0.0.1"  # the collector names an SSH host as given


class Stack(Paneboard):
    """tmux <- sshd <- collector -> server (-> browser, opened by the caller)."""

    def __init__(
        self,
        tmp: Path,
        *,
        grace: float = 30.0,
        server: dict[str, Any] | None = None,
        template: Path | None = None,
    ) -> None:
        super().__init__(tmp)
        self.server_section = {"grace_period": grace, **(server or {})}
        self.template = template
        self.sshd: Sshd | None = None
        self.collector: subprocess.Popen[bytes] | None = None
        self.collector_runs = 0

    def _prepare_db(self) -> None:
        """Copy an already migrated database when given one (migrating costs seconds on a
        loaded machine), then add the account and tokens; plus a second collector token
        for tests that play a collector of their own beside the real one."""
        import asyncio
        from concurrent.futures import ThreadPoolExecutor

        from paneboard_server import accounts
        from paneboard_server.database import create_engine, resolve_url
        from paneboard_server.migrate import upgrade
        from web.harness import PASSWORD, USER

        url = resolve_url(str(self.db))

        async def go() -> tuple[str, str, str]:
            engine = create_engine(url)
            try:
                await accounts.add_viewer(engine, USER, PASSWORD)
                return (
                    await accounts.create_token(engine, "c1", "collector"),
                    await accounts.create_token(engine, "wall", "viewer"),
                    await accounts.create_token(engine, "c2", "collector"),
                )
            finally:
                await engine.dispose()

        with ThreadPoolExecutor(1) as pool:  # Playwright's sync API may hold this thread's loop
            if self.template is not None:
                shutil.copy(self.template, self.db)
            else:
                pool.submit(upgrade, url).result(120)
            self.collector_token, self.viewer_token, self.second_token = pool.submit(
                asyncio.run, go()
            ).result(120)

    def start(self, collector: bool = True) -> Stack:  # type: ignore[override]
        self._prepare_db()
        self.config = self.tmp / "server.toml"
        self.config.write_text(_toml({"server": self.server_section}))
        self.start_server()
        self.tmux = TmuxServer().start("work")
        self.pane = self.tmux.panes()[0]
        self.sshd = Sshd(self.tmp / "sshd").start()
        if collector:
            self.start_collector()
        return self

    # -- the collector ---------------------------------------------------------------------

    def start_collector(self, *extra: str) -> None:
        assert self.sshd is not None and self.tmux is not None
        self.collector_runs += 1
        self.collector = self._spawn(
            f"collector{self.collector_runs}",
            [
                *PANEBOARD,
                "agent",
                "--server",
                self.url,
                "--token",
                self.collector_token,
                "--tmux-socket",
                self.tmux.name,
                *self.sshd.ssh_args(),
                *extra,
            ],
        )
        first = self.pane
        wait_for(
            lambda: any(p["pane"] == first for p in self.panes()),
            timeout=30,
            what=f"the collector's first snapshot\n{self.log(f'collector{self.collector_runs}')}",
        )

    def kill_collector(self, sig: int = signal.SIGKILL) -> None:
        assert self.collector is not None
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.collector.pid, sig)
        self.collector.wait(15)

    # -- the server ------------------------------------------------------------------------

    def kill_server(self) -> None:
        """SIGKILL: no shutdown hook runs, nothing is flushed that was not committed."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.server.pid, signal.SIGKILL)
        self.server.wait(15)

    def close(self) -> None:
        try:
            super().close()
        finally:
            if self.sshd is not None:
                self.sshd.stop()

    # -- reading ---------------------------------------------------------------------------

    def api_raw(self, path: str) -> Any:
        req = urllib.request.Request(
            self.url + path, headers={"Authorization": f"Bearer {self.viewer_token}"}
        )
        with urllib.request.urlopen(req, timeout=10) as r:
            return json.load(r)

    def pane_row(self, pane: str, host: str = HOST) -> dict[str, Any] | None:
        """The board's row for a tmux pane of the watched host (other collectors' panes
        may carry the same pane id)."""
        return next((p for p in self.panes() if p["pane"] == pane and p["host"] == host), None)

    def history(self, pane_id: int | str, limit: int = 1000) -> list[dict[str, Any]]:
        got = self.api_raw(f"/api/panes/{pane_id}/events?limit={limit}")
        return got if isinstance(got, list) else got.get("events", [])

    def new_pane(self, name: str, command: str | None = None) -> tuple[str, str]:
        """A new tmux window; (tmux pane id, paneboard id) once the server lists it."""
        assert self.tmux is not None
        pane = self.tmux.new_window("work", name, *([command] if command else []))
        row = wait_for(lambda: self.pane_row(pane), timeout=20, what=f"pane {pane} on the server")
        return pane, str(row["id"])


HEARTBEAT = Path(__file__).with_name("heartbeat.py")


class Beating:
    """A pane running heartbeat.py: its state is whatever was last `set`."""

    def __init__(self, stack: Stack, name: str, state: str = "working", msg: str = "") -> None:
        self.file = stack.tmp / f"beat-{name}"
        self.set(state, msg)
        self.pane, self.id = stack.new_pane(name, f"exec {sys.executable} {HEARTBEAT} {self.file}")

    def set(self, state: str, msg: str = "") -> None:
        tmp = self.file.with_suffix(".new")
        tmp.write_text(f"{state} {msg}")
        tmp.replace(self.file)


def open_board(browser: Any, stack: Stack) -> Any:
    """A page logged in with the read-only viewer token, its live stream connected."""
    ctx = browser.new_context()
    page = ctx.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(f"pageerror: {e}"))
    page.errors = errors  # type: ignore[attr-defined]
    page.goto(f"{stack.url}/?token={stack.viewer_token}")
    page.wait_for_selector("html[data-ready='1']")
    page.wait_for_selector("html[data-stream='live']")
    return page


def card_word(page: Any, pid: str) -> str | None:
    return page.evaluate(
        "(id) => { const w = document.querySelector(`.card[data-id='${id}'] .word`);"
        " return w ? w.textContent : null; }",
        pid,
    )


def wait_card(page: Any, pid: str, word: str, timeout: float = 20_000) -> None:
    page.wait_for_function(
        "([id, w]) => { const c = document.querySelector(`.card[data-id='${id}'] .word`);"
        " return c && c.textContent === w; }",
        arg=[pid, word],
        timeout=timeout,
    )
