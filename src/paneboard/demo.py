"""`paneboard demo`: the whole path on one machine, started and torn down by one command.

It is a newcomer's first minute, so it must never touch anything of theirs: a private
tmux server on its own socket, a throw-away SQLite database in a temporary directory,
and the real `serve` and `agent` commands as child processes (the demo is the product
running, not a simulation of it). Ctrl-C, SIGTERM and SIGHUP (the terminal closing) all
stop every process it started, remove the directory and the tmux socket file, and end
with a line saying so; a demo left running after its terminal is gone would be a server
with a printed operator password and a collector that types answers, unattended.

The collector gets its token through `PANEBOARD_TOKEN`, never on its command line,
where every local user could read it in `ps`.
"""

from __future__ import annotations

import argparse
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

from . import demo_procs

# (window name, demo agent) — one pane per kind of evidence paneboard reads.
DEMO_PANES: tuple[tuple[str, str], ...] = (
    ("claude", "claude"),  # OSC 7501 reports the way Claude Code sends them, under `paneboard run`
    ("thinkterm", "thinkterm"),  # the THINKTERM_AGENT user variable only
    ("codex", "codex"),  # says nothing: detected by the bundled screen rules alone
    ("claude-native", "native"),  # Claude Code without the relay: OSC 9;4, title spinner, screen
    ("remote", "remote"),  # quiet behind an ssh-like transport: goes stale
    ("approve", "asker"),  # Claude-Code-like permission prompt, answerable from the board
)


#: How much of a child's log is read for its last words, and how long a line of it is kept.
LOG_TAIL_BYTES = 4096
LOG_LINE_MAX = 300


class DemoError(Exception):
    """A step of the demo failed; the message says which and why."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _port_problem(port: int) -> str | None:
    """Why the server could not listen on 127.0.0.1:`port`, found by binding it the way
    the server will (SO_REUSEADDR), before anything is started; None if it can."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError as exc:
            return exc.strerror or str(exc)
    return None


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"port {port} is out of range (1-65535, or 0 for a free one)")
    return port


def last_words(log: Path) -> str:
    """The last non-empty line of a child's log, printable and bounded: what it said as it
    died, kept in the demo's own message because the log goes with the demo's directory."""
    try:
        with open(log, "rb") as f:
            f.seek(max(0, f.seek(0, os.SEEK_END) - LOG_TAIL_BYTES))
            tail = f.read(LOG_TAIL_BYTES).decode("utf-8", "replace")
    except OSError:
        return ""
    for line in reversed(tail.splitlines()):
        text = "".join(ch if ch.isprintable() else "?" for ch in line).strip()
        if text:
            return text if len(text) <= LOG_LINE_MAX else text[: LOG_LINE_MAX - 1] + "…"
    return ""


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


class Child:
    """A `paneboard` command the demo runs, with the log its output goes to."""

    def __init__(self, name: str, proc: subprocess.Popen[bytes], log: Path) -> None:
        self.name = name
        self.proc = proc
        self.log = log

    def ended(self) -> str | None:
        """None while it runs; else how it ended, with its last words."""
        if self.proc.poll() is None:
            return None
        said = last_words(self.log)
        return f"`paneboard {self.name}` exited with status {self.proc.returncode}" + (
            f": {said}" if said else " and said nothing"
        )


def _wait_healthy(url: str, server: Child, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if (ended := server.ended()) is not None:
            raise DemoError(ended)
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
        self.children: list[Child] = []
        self.tmux_started = False
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
        server = self._spawn("serve", "--host", "127.0.0.1", "--port", str(self.port))
        _wait_healthy(self.url, server)

        self._log(f"starting a private tmux server (socket {self.tmux_socket})")
        tmux = ["tmux", "-L", self.tmux_socket, "-f", "/dev/null"]
        self.tmux_started = True  # from here on, close() looks for a server and its socket
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
            "agent",
            "--server",
            self.url,
            "--local",
            "--tmux-socket",
            self.tmux_socket,
            # answers are typed into the demo's own private tmux only: the collector
            # watches no other tmux server
            "--allow-input",
            env={"PANEBOARD_TOKEN": collector_token},  # not --token: argv is public in `ps`
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

        from paneboard_server.ledger import seed_sample
        from paneboard_server.store import create_engine
        from paneboard_server.store import resolve_url as _url

        async def go() -> int:
            engine = create_engine(_url(self.env["PANEBOARD_DB"]))
            try:
                return await seed_sample(engine, time.time())
            finally:
                await engine.dispose()

        n = asyncio.run(go())
        self._log(f"seeded {n} sample waits (hosts sample-…, labelled 'sample day') for the stats page")

    def _tmux(self, *args: str) -> None:
        # held: a tmux command cut short may leave a server up that close() cannot yet ask
        with demo_procs.STOP.held():
            subprocess.run(list(args), env=self.env, check=True, timeout=30, capture_output=True)

    def _wait_for_panes(self, count: int, timeout: float = 60.0) -> None:
        request = urllib.request.Request(
            f"{self.url}/api/panes", headers={"Authorization": f"Bearer {self.viewer_token}"}
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for child in self.children:
                if (ended := child.ended()) is not None:
                    raise DemoError(ended)
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

    def _spawn(self, name: str, *args: str, env: dict[str, str] | None = None) -> Child:
        path = self.workdir / f"{name}.log"
        # held: a child forked but not yet in self.children would outlive the demo
        with demo_procs.STOP.held(), open(path, "wb") as log:  # the child keeps its own copy of the fd
            proc = subprocess.Popen(
                _paneboard(name, *args),
                env={**self.env, **(env or {})},
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            child = Child(name, proc, path)
            self.children.append(child)
        return child

    def wait(self) -> int:
        """Block until Ctrl-C, or until a child dies (then say which, and its last words)."""
        while True:
            for child in self.children:
                if (ended := child.ended()) is not None:
                    self._log(ended)
                    return 1
            time.sleep(0.5)

    def _tmux_query(self, *args: str) -> list[str]:
        """A tmux command's output lines on the demo's socket; [] when no server answers."""
        result = subprocess.run(
            ["tmux", "-L", self.tmux_socket, *args], capture_output=True, text=True, timeout=30, check=False
        )
        return result.stdout.splitlines() if result.returncode == 0 else []

    def _tmux_socket_path(self) -> Path:
        """Where the socket is: tmux's own answer, else its rule ($TMUX_TMPDIR or /tmp,
        then tmux-UID) for a server that already died."""
        said = self._tmux_query("display-message", "-p", "#{socket_path}")
        if said:
            return Path(said[0])
        base = self.env.get("TMUX_TMPDIR") or "/tmp"
        return Path(base) / f"tmux-{os.getuid()}" / self.tmux_socket

    def close(self) -> None:
        """Stop everything the demo started and remove its files; then say what went, or
        what could not. No stop signal interrupts this."""
        demo_procs.STOP.ignore()
        owned: set[demo_procs.Proc] = set()  # every process to see gone, whoever its parent
        panes = 0
        socket_path = None
        if self.tmux_started:
            socket_path = self._tmux_socket_path()
            panes = len(self._tmux_query("list-panes", "-a", "-F", "#{pane_id}"))
            for pid in self._tmux_query("display-message", "-p", "#{pid}"):
                owned |= demo_procs.tree(int(pid))
        for child in self.children:
            owned |= demo_procs.tree(child.proc.pid)
        for child in reversed(self.children):
            if child.proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(child.proc.pid, signal.SIGTERM)
        for child in reversed(self.children):
            try:
                child.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(child.proc.pid, signal.SIGKILL)
                child.proc.wait()
        if self.tmux_started:
            self._tmux_query("kill-server")  # the panes' programs get SIGHUP, as from a closed terminal
        left = demo_procs.wait_gone(owned, timeout=10)
        if left:
            demo_procs.signal_all(left, signal.SIGKILL)
            left = demo_procs.wait_gone(left, timeout=5)
        if socket_path is not None:
            with contextlib.suppress(FileNotFoundError):
                socket_path.unlink()  # tmux leaves it behind when its server ends
        shutil.rmtree(self.workdir, ignore_errors=True)
        self._log(self._closing_line(left, panes, socket_path))

    def _closing_line(self, left: set[demo_procs.Proc], panes: int, socket_path: Path | None) -> str:
        """The last thing the demo says: what it stopped and removed, or what it could not."""
        files = [self.workdir] + ([socket_path] if socket_path is not None else [])
        stuck = [str(f) for f in files if os.path.lexists(f)]
        if left or stuck:
            pids = ", ".join(str(pid) for pid, _ in sorted(left))
            return "stopped, but left behind: " + "; ".join(([f"processes {pids}"] if pids else []) + stuck)
        ended = ["the server", "the collector"][: len(self.children)]
        if self.tmux_started:
            ended.append(f"the tmux server and its {panes} pane{'' if panes == 1 else 's'}")
        what = ", ".join(ended) if ended else "nothing was running yet"
        removed = " and ".join(str(f) for f in files)
        return f"stopped: {what}; removed {removed}. Nothing is left running."

    @staticmethod
    def _log(message: str) -> None:
        # After SIGHUP the terminal is gone and writing to it fails (EIO): the clean-up
        # must go on regardless.
        with contextlib.suppress(OSError):
            print(f"paneboard demo: {message}", file=sys.stderr, flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = OneLineParser(
        prog="paneboard demo",
        help_hint=False,
        description="Run the server, a collector and scripted demo agents on a private tmux "
        "server and a throw-away SQLite database; Ctrl-C (or closing the terminal) removes everything.",
    )
    parser.add_argument("--port", type=_port, default=0, help="server port (default: a free one)")
    parser.add_argument("--no-browser", action="store_true", help="do not open a browser")
    args = parser.parse_args(argv)
    if shutil.which("tmux") is None:
        print("paneboard demo: tmux is not installed (apt-get install tmux)", file=sys.stderr)
        return 1
    if args.port and (problem := _port_problem(args.port)):
        print(
            f"paneboard demo: port {args.port} on 127.0.0.1 is not free ({problem}): choose another "
            "with --port, or leave --port out for a free one",
            file=sys.stderr,
        )
        return 1
    # SIGTERM (a supervisor's stop) and SIGHUP (the terminal closed) end the demo as
    # Ctrl-C does; its children run in sessions of their own and would outlive it.
    demo_procs.STOP.install()
    demo: Demo | None = None
    try:
        with demo_procs.STOP.held():  # a stop now comes once `demo` can remove its directory
            demo = Demo(args.port or _free_port())
        demo.start()
        board = f"{demo.url}/?token={demo.viewer_token}"
        login = f"{demo.url}/login"
        # The operator's login first: it shows screens and answers, the headline feature;
        # the browser opens the login page, so no token sits on its command line (public in ps).
        print("paneboard demo is running.", flush=True)
        operator = f"as 'demo' with password {demo.password} (an operator: screens and answers)"
        print(f"Sign in at {login} {operator}", flush=True)
        print("Or watch read-only (a viewer link, no screens):", flush=True)
        print(board, flush=True)
        print(f"Watch the panes: tmux -L {demo.tmux_socket} attach", flush=True)
        print(f"Time waiting on you: {demo.url}/stats.html (with a seeded sample week)", flush=True)
        print("Press Ctrl-C (or close this terminal) to stop and remove everything.", flush=True)
        if not args.no_browser:
            with contextlib.suppress(webbrowser.Error):
                webbrowser.open(login)
        return demo.wait()
    except DemoError as exc:
        Demo._log(str(exc))
        return 1
    except KeyboardInterrupt:
        return 0
    finally:
        if demo is not None:
            demo.close()
