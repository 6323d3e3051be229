"""The suite's one full-stack harness: a migrated SQLite, an account, tokens, a
`paneboard serve` subprocess on a free port, a private tmux server and a real
collector (`paneboard agent --server ...`) watching it -- on the same machine
(`--local`, the browser tests) or through a real OpenSSH sshd on loopback (`ssh=True`,
the end-to-end and fault tests, whose `Stack` in tests/e2e/stack.py sets it).

Everything started here is stopped by `close()`; processes run in their own process
group so nothing outlives the test.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import shutil
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from support.clirun import run_cli_text
from support.forked import spawn
from support.listening import listens
from support.sshd import Sshd, free_port
from support.tmux import TmuxServer, printf_cmd
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
    """server <- collector <- tmux (<- sshd with `ssh=True`); the browser is the caller's.

    `server` is the config's [server] section (a short grace period by default, so "host
    unreachable" shows within a test), `notify` its [notify] section; `template` is an
    already migrated database to copy (migrating costs seconds on a loaded machine)."""

    def __init__(
        self,
        tmp: Path,
        notify: dict[str, Any] | None = None,
        *,
        server: dict[str, Any] | None = None,
        template: Path | None = None,
        ssh: bool = False,
        limits: dict[str, Any] | None = None,
    ) -> None:
        self.tmp = tmp
        self.db = tmp / "pb.db"
        self.env = {**os.environ, "PANEBOARD_DB": str(self.db), "PYTHONUNBUFFERED": "1"}
        self.env.pop("TMUX", None)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.notify = notify
        self.limits = limits
        self.server_section = server if server is not None else {"grace_period": 2}
        self.template = template
        self.ssh = ssh
        self.procs: list[Any] = []  # subprocess.Popen, or support.forked.Forked
        self.tmux: TmuxServer | None = None
        self.sshd: Sshd | None = None
        self.collector: Any = None
        self.collector_runs = 0
        self.logs: dict[str, Path] = {}

    # -- commands ----------------------------------------------------------------------

    def cli(self, *args: str, stdin: str | None = None) -> str:
        """`paneboard *args` on this stack's database, called in this process
        (support.clirun): the users and tokens the tests make this way are the stack's
        set-up; the commands themselves are tested in tests/server/test_server_cli*.py."""
        call = functools.partial(run_cli_text, *args, stdin=stdin or "", env=self.env)
        # In a thread of its own: Playwright's sync API keeps an event loop in this one.
        with ThreadPoolExecutor(1) as pool:
            res = pool.submit(call).result(60)
        if res.returncode != 0:
            raise RuntimeError(f"paneboard {' '.join(args)}: {res.stderr.strip()}")
        return res.stdout.strip()

    def _spawn(self, name: str, args: list[str]) -> Any:
        """`args` started with its output in `name`'s log; a `paneboard` command is forked
        ready-loaded (support.forked), anything else (a wrapper) is a new process."""
        log = self.tmp / f"{name}.log"
        self.logs[name] = log
        if args[: len(PANEBOARD)] == PANEBOARD:
            p: Any = spawn(args[len(PANEBOARD) :], log=log, env=self.env, truncate=True)
            self.procs.append(p)
            return p
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
        """Schema, account and tokens, in-process (the CLI's own tests cover the commands);
        a second collector token for tests that play a collector beside the real one."""
        import asyncio

        from paneboard_server.auth import accounts
        from paneboard_server.store.database import create_engine, resolve_url
        from paneboard_server.store.migrate import upgrade

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

        # In a thread of its own: Playwright's sync API keeps an event loop in this one.
        with ThreadPoolExecutor(1) as pool:
            if self.template is not None:
                shutil.copy(self.template, self.db)
            else:
                pool.submit(upgrade, url).result(120)
            self.collector_token, self.viewer_token, self.second_token = pool.submit(
                asyncio.run, go()
            ).result(120)

    def start(self, collector: bool = True) -> Paneboard:
        """Server, then (over SSH: always; locally: with the collector) tmux, then the
        collector, each waited for."""
        self._prepare_db()
        self.config = self.tmp / "server.toml"
        sections: dict[str, Any] = {"server": self.server_section}
        if self.notify is not None:
            sections["notify"] = self.notify
        if self.limits is not None:
            sections["limits"] = self.limits
        self.config.write_text(_toml(sections))
        self.start_server()
        if collector or self.ssh:
            self.tmux = TmuxServer().start("work")
            self.pane = self.tmux.panes()[0]
        if self.ssh:
            self.sshd = Sshd(self.tmp / "sshd").start()
        if collector:
            self.start_collector()
        return self

    def start_collector(self, *extra: str) -> None:
        """Start the collector (again); returns once its first snapshot has arrived."""
        assert self.tmux is not None
        self.collector_runs += 1
        name = f"collector{self.collector_runs}"
        args = [*PANEBOARD, "agent", "--server", self.url, "--token", self.collector_token]
        args += ["--tmux-socket", self.tmux.name]
        if self.ssh:
            assert self.sshd is not None
            args += self.sshd.ssh_args()
        else:
            args.append("--local")
        self.collector = self._spawn(name, [*args, *extra])
        wait_for(
            lambda: any(p["reachable"] for p in self.panes()),
            timeout=30,
            what=f"the collector's first snapshot\n{self.log(name)}",
        )

    def kill_collector(self, sig: int = signal.SIGKILL) -> None:
        assert self.collector is not None
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.collector.pid, sig)
        self.collector.wait(20)

    def stop_collector(self) -> None:
        self.kill_collector(signal.SIGTERM)

    def start_server(self) -> None:
        args = [*PANEBOARD, "serve", "--port", str(self.port), "--config", str(self.config)]
        self.server = self._spawn("server", args)
        wait_for(self._healthy, timeout=60, what=f"server on {self.url}\n{self.log('server')}")

    def kill_server(self, sig: int = signal.SIGKILL) -> None:
        """SIGKILL by default: no shutdown hook runs, nothing is flushed that was not committed."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.server.pid, sig)
        self.server.wait(20)

    def stop_server(self) -> None:
        self.kill_server(signal.SIGTERM)

    def _healthy(self) -> bool:
        if self.server.poll() is not None:
            raise AssertionError(f"server exited: {self.log('server')}")
        try:
            with urllib.request.urlopen(self.url + "/healthz", timeout=2) as r:
                healthy = r.status == 200
        except (urllib.error.URLError, OSError):
            return False
        return healthy and listens(self.server.pid, self.port)  # not another test process's server

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
        try:
            if self.tmux:
                self.tmux.kill()
        finally:
            if self.sshd is not None:
                self.sshd.stop()

    # -- the API, as a viewer token --------------------------------------------------------

    def api(self, path: str) -> Any:
        req = urllib.request.Request(
            self.url + path, headers={"Authorization": f"Bearer {self.viewer_token}"}
        )
        with urllib.request.urlopen(req, timeout=10) as r:
            return json.load(r)

    def panes(self) -> list[dict[str, Any]]:
        """`GET /api/panes`: the list of live panes."""
        return self.api("/api/panes")

    def pane_row(self, pane: str, host: str = "127.0.0.1") -> dict[str, Any] | None:
        """The board's row for a tmux pane of the watched host (other collectors' panes
        may carry the same pane id)."""
        return next((p for p in self.panes() if p["pane"] == pane and p["host"] == host), None)

    def history(self, pane_id: int | str, limit: int = 1000) -> list[dict[str, Any]]:
        """`GET /api/panes/ID/events`: its `events`, newest first."""
        return self.api(f"/api/panes/{pane_id}/events?limit={limit}")["events"]

    def new_pane(self, name: str, command: str | None = None) -> tuple[str, str]:
        """A new tmux window; (tmux pane id, paneboard id) once the server lists it."""
        assert self.tmux is not None
        pane = self.tmux.new_window("work", name, *([command] if command else []))
        row = wait_for(lambda: self.pane_row(pane), timeout=20, what=f"pane {pane} on the server")
        return pane, str(row["id"])

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
