"""`paneboard agent` says what it does: connections made, lost and regained, with the
reason, and exits with the reason where waiting cannot help. Real CLI, real tmux,
and a real `paneboard serve` where a server is needed."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.agentproc import AgentProcess
from support.forked import spawn
from support.tmux import TmuxServer
from support.wait import wait_for

pytestmark = pytest.mark.tmux

HOST = socket.gethostname()
AGENT = [sys.executable, "-m", "paneboard.cli", "agent"]


class Agent:
    """The CLI with its stderr in a file: what a person watching it reads."""

    def __init__(self, tmp: Path, *args: str, env: dict[str, str] | None = None) -> None:
        self.err = tmp / f"agent-{time.monotonic_ns()}.err"
        environ = {k: v for k, v in os.environ.items() if k not in ("TMUX", "PANEBOARD_TOKEN")}
        out = os.open(os.devnull, os.O_WRONLY)
        err = os.open(self.err, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:  # forked ready-loaded (support.forked)
            self.proc = spawn(["agent", *args], env={**environ, **(env or {})}, stdout=out, stderr=err)
        finally:
            os.close(out)
            os.close(err)

    def lines(self) -> list[str]:
        return self.err.read_text(errors="replace").splitlines()

    def wait_line(self, text: str, timeout: float = 30) -> str:
        return wait_for(
            lambda: next((line for line in self.lines() if text in line), None),
            timeout=timeout,
            what=f"{text!r} on stderr; so far: {self.lines()}",
        )

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(timeout=20)


def test_no_tmux_server_at_all_exits_with_the_reason(tmp_path: Path) -> None:
    """`paneboard agent --stdout` and nothing to watch: no tmux server runs here (the
    default socket, in an empty TMUX_TMPDIR). It used to run forever, printing nothing."""
    res = subprocess.run(
        [*AGENT, "--stdout"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "TMUX_TMPDIR": str(tmp_path)},
    )
    assert res.returncode == 1, res.stderr
    assert res.stdout == ""
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    assert lines[0].startswith(f"paneboard agent: {HOST}: no tmux server to watch (")
    assert str(tmp_path) in lines[0]  # tmux's own words name the socket it looked for
    assert "--wait-for-tmux" in lines[0]


def test_a_socket_that_does_not_exist_exits_with_the_reason() -> None:
    proc = AgentProcess("--local", "--tmux-socket", "pb-test-no-such-socket")
    try:
        assert proc.wait_exit(60) == 1
    finally:
        proc.stop()
    assert "no tmux server to watch" in proc.stderr and "pb-test-no-such-socket" in proc.stderr
    assert proc.lines == []


def test_wait_for_tmux_waits_then_watches(tmp_path: Path) -> None:
    tmux = TmuxServer()
    proc = AgentProcess("--local", "--tmux-socket", tmux.name, "--wait-for-tmux")
    try:
        wait_for(lambda: "waiting for one" in proc.stderr, timeout=30, what=f"the wait: {proc.stderr}")
        assert proc.proc.poll() is None
        tmux.start()
        pane = tmux.panes()[0]
        proc.wait_line(lambda o: o["pane"] == pane, timeout=30, what="the pane of the tmux started later")
    finally:
        proc.stop()
        tmux.kill()


def test_connecting_says_so_and_verbose_says_what_it_attaches_to(tmux_server: TmuxServer) -> None:
    quiet = AgentProcess("--local", "--tmux-socket", tmux_server.name)
    loud = AgentProcess("--local", "--tmux-socket", tmux_server.name, "-v")
    try:
        for proc in (quiet, loud):
            proc.wait_line(lambda o: o["pane"] == "%0", what="the first pane")
            wait_for(lambda p=proc: "connected" in p.stderr, what="the connected line")
    finally:
        quiet.stop()
        loud.stop()
    connected = f"paneboard agent: {HOST}: connected (tmux "
    assert [line for line in quiet.stderr.splitlines() if line.startswith(connected)], quiet.stderr
    assert f"tmux server {tmux_server.name})" in quiet.stderr
    assert "attached to session" not in quiet.stderr
    assert f"{HOST}: attached to session 'main' (" in loud.stderr, loud.stderr


def test_losing_and_regaining_tmux_is_said(tmux_server: TmuxServer) -> None:
    """The tmux server goes away while watched: no exit (it was there at the start), a
    line when the collector notices, and one when it is back."""
    proc = AgentProcess("--local", "--tmux-socket", tmux_server.name, "-v")
    try:
        proc.wait_line(lambda o: o["pane"] == "%0", what="the first pane")
        tmux_server.kill()
        proc.wait_line(lambda o: o.get("gone"), what="the pane gone with its server")
        assert proc.proc.poll() is None
        gone = f"paneboard agent: {HOST}: tmux server {tmux_server.name} is gone; waiting for it"
        wait_for(lambda: gone in proc.stderr, what=f"the line saying so: {proc.stderr}")
        tmux_server.start()
        up = f"paneboard agent: {HOST}: tmux server {tmux_server.name} is up"
        wait_for(lambda: up in proc.stderr.split(gone, 1)[-1], timeout=30, what=f"back: {proc.stderr}")
    finally:
        proc.stop()


# --- the server -------------------------------------------------------------------------


@pytest.fixture
def board(tmp_path: Path) -> Iterator:
    from support.stack import Paneboard

    pb = Paneboard(tmp_path).start(collector=False)
    try:
        yield pb
    finally:
        pb.close()


def test_a_refused_token_exits_with_the_reason(board, tmux_server: TmuxServer, tmp_path: Path) -> None:
    agent = Agent(
        tmp_path, "--server", board.url, "--token", "not-a-token", "--tmux-socket", tmux_server.name
    )
    try:
        rc = agent.proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"still running after 60 s; stderr: {agent.lines()}") from None
    finally:
        agent.stop()
    assert rc == 1, agent.lines()
    last = agent.lines()[-1]
    assert last.startswith("paneboard agent: server closed the uplink: 4401 (the token was refused)")
    assert last.endswith("; exiting"), last


def test_a_viewer_token_is_named_as_one(board, tmux_server: TmuxServer, tmp_path: Path) -> None:
    """Issue 24 item 9: a viewer token given to `agent` was refused as any bad token; the
    line now says what it is and which token a collector needs."""
    agent = Agent(
        tmp_path, "--server", board.url, "--token", board.viewer_token, "--tmux-socket", tmux_server.name
    )
    try:
        rc = agent.proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"still running after 60 s; stderr: {agent.lines()}") from None
    finally:
        agent.stop()
    assert rc == 1, agent.lines()
    last = agent.lines()[-1]
    assert (
        "4401 (the token was refused)" in last
        and "; this is a viewer token; collectors need a collector token" in last
    ), last
    assert "paneboard token create NAME" in last and board.viewer_token not in last, last


def test_server_lost_and_back_is_said_in_words(board, tmux_server: TmuxServer, tmp_path: Path) -> None:
    agent = Agent(
        tmp_path,
        "--server",
        board.url,
        "--tmux-socket",
        tmux_server.name,
        env={"PANEBOARD_TOKEN": board.collector_token},
    )
    try:
        first = agent.wait_line("connected to the server")
        assert first == f"paneboard agent: connected to the server ws://127.0.0.1:{board.port}/api/ingest"
        board.stop_server()
        agent.wait_line("server closed the uplink: 1012 (the server is restarting)")
        agent.wait_line("cannot reach server")
        board.start_server()
        wait_for(
            lambda: agent.lines()[-1].endswith("/api/ingest again"),
            timeout=60,
            what=f"the last line to say the server is back: {agent.lines()}",
        )
        assert agent.proc.poll() is None
    finally:
        agent.stop()
