"""`paneboard agent --stdout --local --tmux-socket NAME` against a real tmux server.

The CLI runs as a subprocess exactly as a user runs it; panes run real programs that
write OSC 7501 reports and THINKTERM_AGENT variables, change their foreground
process, exit, and windows and sessions come and go after the agent started.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import b64, osc7501, reporter, thinkterm
from support.agentproc import AgentProcess, polled
from support.tmux import TmuxServer
from support.wait import wait_for

pytestmark = pytest.mark.tmux

MSG = "Apply 3 to add, 1 to change, 0 to destroy?"


@pytest.fixture
def agent(tmux_server: TmuxServer) -> Iterator[AgentProcess]:
    proc = AgentProcess("--local", "--tmux-socket", tmux_server.name)
    try:
        first = tmux_server.panes()[0]
        proc.wait_line(lambda o: o["pane"] == first, what="the first pane listed")
        yield proc
    finally:
        proc.stop()


def test_osc7501_report_in_a_window_opened_after_start(tmux_server: TmuxServer, agent: AgentProcess) -> None:
    report = osc7501(f"state=blocked:kind=permission:app=terraform:msg={b64(MSG)}")
    pane = tmux_server.new_window("main", "tf", reporter((0.5, report)))
    line = agent.wait_line(lambda o: o["pane"] == pane and o["state"] == "blocked", what="the blocked report")
    assert line["kind"] == "permission"
    assert line["msg"] == MSG
    assert line["agent"] == "terraform"  # RI-1 (3): the report's app names the agent
    assert line["source"] == "protocol"
    assert line["observable"] is True
    assert line["session"] == "main" and line["window"].endswith(":tf")
    assert set(line) == {
        "host", "session", "window", "pane", "agent", "state", "kind", "msg", "source", "observable", "t"
    }  # fmt: skip


def test_thinkterm_agent_variable_in_a_new_session(tmux_server: TmuxServer, agent: AgentProcess) -> None:
    # (output written before the new session's control client attached is not seen)
    pane = tmux_server.new_session("second", reporter((1.5, thinkterm("my-agent", "working"))))
    line = agent.wait_line(lambda o: o["pane"] == pane and o["agent"] == "my-agent", what="the contract")
    assert line["state"] == "working"
    assert line["session"] == "second"


def test_process_exit_drops_live_records_but_keeps_done(tmux_server: TmuxServer, agent: AgentProcess) -> None:
    working = tmux_server.new_window("main", "w", reporter((0.5, osc7501("state=working:app=builder"))))
    shell = tmux_server.new_window("main", "d")
    agent.wait_line(lambda o: o["pane"] == shell, what="the shell pane")
    tmux_server.send(shell, reporter((0.5, osc7501("state=done:app=builder")), then_sleep=1.5))
    agent.wait_line(lambda o: o["pane"] == working and o["state"] == "working", what="working")
    agent.wait_line(lambda o: o["pane"] == shell and o["state"] == "done", what="done")
    tmux_server.cmd("send-keys", "-t", working, "C-c")  # the program dies and its pane closes
    agent.wait_line(
        lambda o: o["pane"] == working and o.get("gone"), what="the pane gone after its program exited"
    )
    # the reporter in `shell` exits by itself: its result stays until seen (RI-5)
    wait_for(
        lambda: (
            tmux_server.cmd("display-message", "-p", "-t", shell, "#{pane_current_command}").strip() == "bash"
        ),
        what="the reporter to exit",
    )
    polled(agent, tmux_server, 2)  # two polls after the change
    assert agent.latest(shell)["state"] == "done"


def test_leaving_program_takes_its_working_state(tmux_server: TmuxServer, agent: AgentProcess) -> None:
    pane = tmux_server.new_window("main", "sh")
    agent.wait_line(lambda o: o["pane"] == pane, what="the new shell pane")
    tmux_server.send(pane, reporter((0.3, osc7501("state=working:app=builder")), then_sleep=2))
    agent.wait_line(lambda o: o["pane"] == pane and o["state"] == "working", what="working")
    # the reporter exits by itself; back at the shell, its working record ends (P7501-8)
    wait_for(lambda: (agent.latest(pane) or {}).get("state") is None, timeout=15, what="unclassified again")
    assert agent.latest(pane)["agent"] is None


def test_windows_and_sessions_close(tmux_server: TmuxServer, agent: AgentProcess) -> None:
    win = tmux_server.new_window("main", "short")
    sess = tmux_server.new_session("gone-soon")
    agent.wait_line(lambda o: o["pane"] == win, what="window pane")
    agent.wait_line(lambda o: o["pane"] == sess and o["session"] == "gone-soon", what="session pane")
    tmux_server.cmd("kill-window", "-t", "main:short")
    tmux_server.cmd("kill-session", "-t", "gone-soon")
    agent.wait_line(lambda o: o["pane"] == win and o.get("gone"), what="window gone")
    agent.wait_line(lambda o: o["pane"] == sess and o.get("gone"), what="session gone")


def test_transport_in_front_makes_the_pane_unobservable(tmux_server: TmuxServer, tmp_path: Path) -> None:
    cfg = tmp_path / "agent.toml"
    cfg.write_text('transports = ["sleep"]\n')  # configurable: here `sleep` plays the transport
    proc = AgentProcess("--config", str(cfg), "--local", "--tmux-socket", tmux_server.name)
    try:
        pane = tmux_server.new_window("main", "hop", "sleep 60")
        line = proc.wait_line(lambda o: o["pane"] == pane and o["observable"] is False, what="unobservable")
        assert line["agent"] is None
    finally:
        proc.stop()


def test_config_error_names_the_key(tmp_path: Path) -> None:
    cfg = tmp_path / "agent.toml"
    cfg.write_text('[[hosts]]\nhost = "x"\nport = "22"\n')
    proc = AgentProcess("--config", str(cfg))
    rc = proc.wait_exit()
    assert rc == 2
    assert proc.stderr.strip() == (
        f"paneboard agent: {cfg}: hosts[0].port: expected an integer from 1 to 65535,"
        ' got the string "22"; e.g. port = 22'
    )
    assert proc.lines == []


def test_sighup_reloads_the_rules(tmux_server: TmuxServer, tmp_path: Path) -> None:
    rules = tmp_path / "rules"
    rules.mkdir()
    cfg = tmp_path / "agent.toml"
    cfg.write_text(f'rules_dir = "{rules}"\n')
    proc = AgentProcess("--config", str(cfg), "--local", "--tmux-socket", tmux_server.name)
    try:
        proc.wait_line(lambda o: o["pane"] == "%0", what="first pane")
        assert "broken.toml" not in proc.stderr
        (rules / "broken.toml").write_text("this is [not toml\n")
        os.kill(proc.proc.pid, signal.SIGHUP)
        wait_for(lambda: "rules reloaded" in proc.stderr, what="the reload")
        assert f"paneboard agent: rules: {rules / 'broken.toml'}" in proc.stderr
        # still watching after the reload
        pane = tmux_server.new_window("main", "after", reporter((0.5, osc7501("state=working:app=x"))))
        proc.wait_line(lambda o: o["pane"] == pane and o["state"] == "working", what="report after reload")
    finally:
        proc.stop()


PANEBOARD = str(Path(sys.executable).parent / "paneboard")


@pytest.mark.parametrize("how", ["script", "command line"])
def test_emit_blocked_then_waiting_stays_blocked(
    tmux_server: TmuxServer, agent: AgentProcess, tmp_path: Path, how: str
) -> None:
    """`paneboard emit blocked` and then `read -p`: the question stands while it waits.

    emit is a helper that reports for whoever ran it: from a script, for the script (its
    process group, in front all along); typed at the prompt, for the shell it returns to.
    """
    emit = f'{shlex.quote(PANEBOARD)} emit blocked --msg "Deploy to prod?"'
    if how == "script":
        script = tmp_path / "deploy.sh"
        script.write_text(f'#!/bin/bash\n{emit}\nread -p "Deploy? [y/N] " answer\n')
        script.chmod(0o755)
        line = str(script)
    else:
        line = f'{emit}; read -p "Deploy? [y/N] " answer'
    pane = tmux_server.new_window("main", "deploy")
    agent.wait_line(lambda o: o["pane"] == pane, what="the shell pane")
    tmux_server.send(pane, line)
    agent.wait_line(lambda o: o["pane"] == pane and o["state"] == "blocked", what="blocked")
    # emit has left the terminal and the collector has looked since: it waits for the answer
    tty = tmux_server.cmd("display-message", "-p", "-t", pane, "#{pane_tty}").strip()
    wait_for(
        lambda: (
            " emit "
            not in subprocess.run(["ps", "-t", tty, "-o", "args="], capture_output=True, text=True).stdout
        ),
        what="emit to exit",
    )
    polled(agent, tmux_server, 3)
    latest = agent.latest(pane)
    if latest is None or latest["state"] != "blocked":  # the whole story, uncut, for a failure
        print("".join(agent.raw), "\nstderr:\n", agent.stderr)
    assert latest is not None and latest["state"] == "blocked" and latest["msg"] == "Deploy to prod?"
    tmux_server.send(pane, "y")  # answered: the script ends; back at the prompt it is over
    if how == "script":
        wait_for(lambda: agent.latest(pane)["state"] is None, timeout=15, what="the record ended")
