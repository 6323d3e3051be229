"""`paneboard demo`: the whole path on one machine, started and torn down by one command.

It is a newcomer's first minute, so it must never touch anything of theirs: a private
tmux server on its own socket, a throw-away SQLite database in a temporary directory,
and the real `serve` and `agent` commands as child processes (the demo is the product
running, not a simulation of it). Ctrl-C stops every child and removes the directory.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import webbrowser
from collections.abc import Sequence
from pathlib import Path

from paneboard_protocol.cli_args import OneLineParser

# (window name, demo agent) — one pane per kind of evidence paneboard reads.
DEMO_PANES: tuple[tuple[str, str], ...] = (
    ("claude", "claude"),  # OSC 7501 reports the way Claude Code sends them, under `paneboard run`
    ("thinkterm", "thinkterm"),  # the THINKTERM_AGENT user variable only
    ("codex", "codex"),  # says nothing: detected by the bundled screen rules alone
    ("claude-native", "native"),  # Claude Code without the relay: OSC 9;4, title spinner, screen
    ("remote", "remote"),  # quiet behind an ssh-like transport: goes stale
    ("approve", "asker"),  # Claude-Code-like permission prompt, answerable from the board
)


class DemoError(Exception):
    """A step of the demo failed; the message says which and why."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _paneboard(*args: str) -> list[str]:
    return [sys.executable, "-m", "paneboard.cli", *args]


def _run(args: list[str], env: dict[str, str], stdin: str | None = None) -> str:
    result = subprocess.run(
        args, env=env, input=stdin, capture_output=True, text=True, timeout=120, check=False
    )
    if result.returncode != 0:
        detail = (result.stderr.strip().splitlines() or ["(no message)"])[-1]
        raise DemoError(f"`{' '.join(args[2:])}` failed: {detail}")
    return result.stdout.strip()


def _wait_healthy(url: str, proc: subprocess.Popen[bytes], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise DemoError(f"the server exited early (status {proc.returncode})")
        with (
            contextlib.suppress(urllib.error.URLError, OSError),
            urllib.request.urlopen(f"{url}/healthz", timeout=2) as response,
        ):
            if response.status == 200:
                return
        time.sleep(0.2)
    raise DemoError(f"the server did not answer {url}/healthz within {timeout:.0f} s")


class Demo:
    """Owns every process and file the demo starts, so that `close()` can remove them all."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self.workdir = Path(tempfile.mkdtemp(prefix="paneboard-demo-"))
        self.tmux_socket = f"paneboard-demo-{os.getpid()}"
        self.env = dict(os.environ)
        self.env["PANEBOARD_DB"] = f"sqlite:///{self.workdir / 'demo.db'}"
        self.env["PANEBOARD_RULES"] = str(self.workdir / "rules")  # bundled rules only
        self.env.pop("TMUX", None)
        self.children: list[subprocess.Popen[bytes]] = []
        self.viewer_token = ""
        self.password = secrets.token_urlsafe(12)

    def start(self) -> None:
        self._log("preparing a throw-away database in " + str(self.workdir))
        _run(_paneboard("db", "upgrade"), self.env)
        collector_token = _run(_paneboard("token", "create", "demo-collector"), self.env)
        self.viewer_token = _run(_paneboard("token", "create", "demo-viewer", "--viewer"), self.env)
        # an operator: the demo's login may answer the asker's prompt from the board
        _run(_paneboard("user", "add", "demo", "--operator"), self.env, stdin=self.password + "\n")
        self._seed_sample_week()

        self._log(f"starting the server on {self.url}")
        server = self._spawn(
            _paneboard("serve", "--host", "127.0.0.1", "--port", str(self.port)), "server.log"
        )
        _wait_healthy(self.url, server)

        self._log(f"starting a private tmux server (socket {self.tmux_socket})")
        tmux = ["tmux", "-L", self.tmux_socket, "-f", "/dev/null"]
        self._tmux(
            *tmux,
            "new-session",
            "-d",
            "-s",
            "demo",
            "-n",
            "welcome",
            "-x",
            "160",
            "-y",
            "40",
            self._pane_command("welcome"),
        )

        self._log("starting the collector")
        self._spawn(
            _paneboard(
                "agent",
                "--server",
                self.url,
                "--token",
                collector_token,
                "--local",
                "--tmux-socket",
                self.tmux_socket,
                # answers are typed into the demo's own private tmux only: the collector
                # watches no other tmux server
                "--allow-input",
            ),
            "agent.log",
        )
        # tmux keeps no raw output for late readers: start the agents only once the
        # collector is attached, or their first reports would never be seen.
        self._wait_for_panes(1)
        self._log("starting the demo agents")
        for window, agent in DEMO_PANES:
            self._tmux(*tmux, "new-window", "-d", "-t", "demo", "-n", window, self._pane_command(agent))

    def _seed_sample_week(self) -> None:
        """A week of sample waits (hosts `sample-…`, session "sample day"), so the stats
        page of this throw-away database shows something beside the live agents."""
        import asyncio

        from paneboard_server.ledger.seed import seed_sample
        from paneboard_server.store.database import create_engine
        from paneboard_server.store.database import resolve_url as _url

        async def go() -> int:
            engine = create_engine(_url(self.env["PANEBOARD_DB"]))
            try:
                return await seed_sample(engine, time.time())
            finally:
                await engine.dispose()

        n = asyncio.run(go())
        self._log(f"seeded {n} sample waits (hosts sample-…, labelled 'sample day') for the stats page")

    def _tmux(self, *args: str) -> None:
        subprocess.run(list(args), env=self.env, check=True, timeout=30, capture_output=True)

    def _wait_for_panes(self, count: int, timeout: float = 60.0) -> None:
        request = urllib.request.Request(
            f"{self.url}/api/panes", headers={"Authorization": f"Bearer {self.viewer_token}"}
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for proc in self.children:
                if proc.poll() is not None:
                    what = " ".join(proc.args[2:4]) if isinstance(proc.args, list) else "a child"
                    raise DemoError(f"`{what}` exited early; see its log")
            with (
                contextlib.suppress(urllib.error.URLError, OSError, ValueError),
                urllib.request.urlopen(request, timeout=2) as response,
            ):
                if len(json.load(response)) >= count:
                    return
            time.sleep(0.3)
        raise DemoError(f"the collector did not report the demo's panes within {timeout:.0f} s")

    def _pane_command(self, agent: str) -> str:
        """The shell command a demo pane runs.

        `claude` runs behind `paneboard run`, as the README tells real Claude Code users
        to; `codex` and `remote` are exec'd with the argv[0] of the program they play,
        which is what tmux's `#{pane_current_command}` shows (the venv is passed on as
        PYTHONPATH because a renamed interpreter no longer finds its pyvenv.cfg).
        """
        python = shlex.quote(sys.executable)
        if agent == "claude":
            return f"{python} -m paneboard.cli run -- {python} -m paneboard.demo_agents claude"
        if agent in {"codex", "native", "remote", "asker"}:
            argv0 = {"codex": "codex", "native": "claude", "remote": "ssh", "asker": "claude"}[agent]
            path = shlex.quote(os.pathsep.join(p for p in sys.path if p))
            module = "demo_ask permission" if agent == "asker" else f"demo_agents {agent}"
            inner = f"PYTHONPATH={path} exec -a {argv0} {python} -m paneboard.{module}"
            return f"bash -c {shlex.quote(inner)}"
        return f"{python} -m paneboard.demo_agents {agent}"

    def _spawn(self, args: list[str], log_name: str) -> subprocess.Popen[bytes]:
        log = open(self.workdir / log_name, "wb")  # noqa: SIM115 - lives as long as the child
        proc = subprocess.Popen(
            args, env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        self.children.append(proc)
        return proc

    def wait(self) -> int:
        """Block until Ctrl-C, or until a child dies (then say which, and its log's tail)."""
        while True:
            for proc in self.children:
                if proc.poll() is not None:
                    name = Path(proc.args[3]).name if isinstance(proc.args, list) else "child"
                    self._log(f"`paneboard {name}` exited with status {proc.returncode}")
                    return 1
            time.sleep(0.5)

    def close(self) -> None:
        # A second Ctrl-C (people press it twice; `uv run` also forwards the first one)
        # must not cut the clean-up short and leave a tmux server and files behind.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        for proc in reversed(self.children):
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGTERM)
        for proc in reversed(self.children):
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        subprocess.run(
            ["tmux", "-L", self.tmux_socket, "kill-server"],
            capture_output=True,
            timeout=30,
            check=False,
        )
        shutil.rmtree(self.workdir, ignore_errors=True)

    @staticmethod
    def _log(message: str) -> None:
        print(f"paneboard demo: {message}", file=sys.stderr, flush=True)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: Sequence[str] | None = None) -> int:
    parser = OneLineParser(
        prog="paneboard demo",
        help_hint=False,
        description="Run the server, a collector and scripted demo agents on a private tmux "
        "server and a throw-away SQLite database; Ctrl-C removes everything.",
    )
    parser.add_argument("--port", type=int, default=0, help="server port (default: a free one)")
    parser.add_argument("--no-browser", action="store_true", help="do not open a browser")
    args = parser.parse_args(argv)
    if shutil.which("tmux") is None:
        print("paneboard demo: tmux is not installed (apt-get install tmux)", file=sys.stderr)
        return 1
    demo = Demo(args.port or _free_port())
    # SIGTERM ends the demo as Ctrl-C does, so a supervisor's stop also cleans up.
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        demo.start()
        board = f"{demo.url}/?token={demo.viewer_token}"
        print("paneboard demo is running. The board (read-only viewer link):", flush=True)
        print(board, flush=True)
        print(f"Sign in at {demo.url}/ as 'demo' with password {demo.password}", flush=True)
        print(f"Watch the panes: tmux -L {demo.tmux_socket} attach", flush=True)
        print(f"Time waiting on you: {demo.url}/stats.html (with a seeded sample week)", flush=True)
        print("Press Ctrl-C to stop and remove everything.", flush=True)
        if not args.no_browser:
            with contextlib.suppress(webbrowser.Error):
                webbrowser.open(board)
        return demo.wait()
    except DemoError as exc:
        print(f"paneboard demo: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    finally:
        demo.close()
