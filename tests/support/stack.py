"""A real paneboard for browser tests: a migrated SQLite, an account, tokens, a
`paneboard serve` subprocess on a free port, a private tmux server and a real
collector (`paneboard agent --server ... --local`) watching it.

Everything started here is stopped by `close()`; processes run in their own process
group so nothing outlives the test.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from support.tmux import TmuxServer, printf_cmd
from support.tools import CHROMIUM
from support.wait import wait_for

PASSWORD = "correct horse battery staple"
USER = "ann"
CHROMIUM_ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
PANEBOARD = [sys.executable, "-c", "import sys; from paneboard.cli import main; sys.exit(main())"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def osc7501(**fields: str) -> bytes:
    """One OSC 7501 report; msg/title are base64-encoded here (P7501-19)."""
    import base64

    parts = []
    for k, v in fields.items():
        if k in ("msg", "title"):
            v = base64.b64encode(v.encode()).decode()
        parts.append(f"{k}={v}")
    return b"\x1b]7501;" + ":".join(parts).encode() + b"\x1b\\"


class Paneboard:
    def __init__(self, tmp: Path, notify: dict[str, Any] | None = None) -> None:
        self.tmp = tmp
        self.db = tmp / "pb.db"
        self.env = {**os.environ, "PANEBOARD_DB": str(self.db), "PYTHONUNBUFFERED": "1"}
        self.env.pop("TMUX", None)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.notify = notify or {}
        self.procs: list[subprocess.Popen[bytes]] = []
        self.tmux: TmuxServer | None = None
        self.logs: dict[str, Path] = {}

    # -- commands ----------------------------------------------------------------------

    def cli(self, *args: str, stdin: str | None = None) -> str:
        res = subprocess.run(
            [*PANEBOARD, *args], input=stdin, capture_output=True, text=True, env=self.env, timeout=60
        )
        if res.returncode != 0:
            raise RuntimeError(f"paneboard {' '.join(args)}: {res.stderr.strip()}")
        return res.stdout.strip()

    def _spawn(self, name: str, args: list[str]) -> subprocess.Popen[bytes]:
        log = self.tmp / f"{name}.log"
        self.logs[name] = log
        p = subprocess.Popen(
            args,
            env=self.env,
            stdout=log.open("wb"),
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        self.procs.append(p)
        return p

    def log(self, name: str) -> str:
        p = self.logs.get(name)
        return p.read_text(errors="replace")[-4000:] if p and p.exists() else ""

    # -- life cycle --------------------------------------------------------------------

    def _prepare_db(self) -> None:
        """Schema, account and tokens, in-process (the CLI's own tests cover the commands)."""
        import asyncio

        from paneboard_server import accounts
        from paneboard_server.database import create_engine, resolve_url
        from paneboard_server.migrate import upgrade

        url = resolve_url(str(self.db))

        async def go() -> tuple[str, str]:
            engine = create_engine(url)
            try:
                await accounts.add_viewer(engine, USER, PASSWORD)
                return (
                    await accounts.create_token(engine, "c1", "collector"),
                    await accounts.create_token(engine, "wall", "viewer"),
                )
            finally:
                await engine.dispose()

        # In a thread of its own: Playwright's sync API keeps an event loop in this one.
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(1) as pool:
            pool.submit(upgrade, url).result(120)
            self.collector_token, self.viewer_token = pool.submit(asyncio.run, go()).result(120)

    def start(self, collector: bool = True) -> Paneboard:
        self._prepare_db()
        self.config = self.tmp / "server.toml"
        # A short grace period so "host unreachable" shows within a test.
        self.config.write_text(_toml({"server": {"grace_period": 2}, "notify": self.notify}))
        self.start_server()
        if collector:
            self.tmux = TmuxServer().start("work")
            self.pane = self.tmux.panes()[0]
            self.start_collector()
        return self

    def start_collector(self) -> None:
        assert self.tmux is not None
        args = [*PANEBOARD, "agent", "--server", self.url, "--token", self.collector_token]
        self.collector = self._spawn("collector", [*args, "--local", "--tmux-socket", self.tmux.name])
        what = f"the collector's snapshot\n{self.log('collector')}"
        wait_for(lambda: any(p.get("reachable") for p in self.panes()), timeout=30, what=what)

    def stop_collector(self) -> None:
        os.killpg(self.collector.pid, signal.SIGTERM)
        self.collector.wait(20)

    def start_server(self) -> None:
        args = [*PANEBOARD, "serve", "--port", str(self.port), "--config", str(self.config)]
        self.server = self._spawn("server", args)
        wait_for(self._healthy, timeout=60, what=f"server on {self.url}\n{self.log('server')}")

    def stop_server(self) -> None:
        os.killpg(self.server.pid, signal.SIGTERM)
        self.server.wait(20)

    def _healthy(self) -> bool:
        if self.server.poll() is not None:
            raise AssertionError(f"server exited: {self.log('server')}")
        try:
            with urllib.request.urlopen(self.url + "/healthz", timeout=2) as r:
                return r.status == 200
        except (urllib.error.URLError, OSError):
            return False

    def close(self) -> None:
        for p in reversed(self.procs):
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                except ProcessLookupError:
                    continue
        for p in self.procs:
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait(5)
        if self.tmux:
            self.tmux.kill()

    # -- the API, as a viewer token --------------------------------------------------------

    def api(self, path: str) -> Any:
        req = urllib.request.Request(
            self.url + path, headers={"Authorization": f"Bearer {self.viewer_token}"}
        )
        with urllib.request.urlopen(req, timeout=5) as r:
            return json.load(r)

    def panes(self) -> list[dict[str, Any]]:
        d = self.api("/api/panes")
        return d if isinstance(d, list) else d.get("panes", [])

    def report(self, pane: str | None = None, **fields: str) -> None:
        """Write an OSC 7501 report in the tmux pane, as a program in it would."""
        assert self.tmux is not None
        self.tmux.send(pane or self.pane, printf_cmd(osc7501(**fields)))

    def wait_state(self, state: str | None, pane: str | None = None, timeout: float = 15) -> dict[str, Any]:
        target = pane or self.pane

        def hit() -> dict[str, Any] | None:
            for p in self.panes():
                if p.get("pane") == target and p.get("state") == state:
                    return p
            return None

        return wait_for(hit, timeout=timeout, what=f"pane {target} state {state}")


def _toml(d: dict[str, Any], prefix: str = "") -> str:
    """Just enough TOML for the test config: tables, arrays of tables, strings, numbers, lists."""
    lines: list[str] = []
    scalars = {k: v for k, v in d.items() if not isinstance(v, dict | list) or _is_scalar_list(v)}
    if prefix and scalars:
        lines.append(f"[{prefix}]")
    for k, v in scalars.items():
        lines.append(f"{k} = {json.dumps(v)}")
    for k, v in d.items():
        name = f"{prefix}.{k}" if prefix else k
        if isinstance(v, dict):
            lines.append(_toml(v, name) or f"[{name}]")
        elif isinstance(v, list) and not _is_scalar_list(v):
            for item in v:
                lines.append(f"[[{name}]]")
                lines.extend(f"{ik} = {json.dumps(iv)}" for ik, iv in item.items())
    return "\n".join(lines) + "\n"


def _is_scalar_list(v: Any) -> bool:
    return isinstance(v, list) and all(not isinstance(x, dict) for x in v)
