"""Discarded reports in the live collector, against a real tmux server.

The collector must read a pane's bytes as `paneboard replay` reads them: a
THINKTERM_AGENT contract with an unknown state is discarded, yet still names the
agent (RI-6), and `--stdout --explain` says of each discarded report why, as
`paneboard replay --explain` does.
"""

from __future__ import annotations

import pytest
from helpers import b64, osc7501, reporter, thinkterm
from support.agentproc import AgentProcess
from support.tmux import TmuxServer
from support.wait import wait_for

pytestmark = pytest.mark.tmux


def _start(tmux_server: TmuxServer, *extra: str) -> AgentProcess:
    proc = AgentProcess("--local", "--tmux-socket", tmux_server.name, *extra)
    first = tmux_server.panes()[0]
    proc.wait_line(lambda o: o["pane"] == first, what="the first pane listed")
    return proc


def test_contract_with_unknown_state_names_the_agent(tmux_server: TmuxServer) -> None:
    proc = _start(tmux_server)
    try:
        pane = tmux_server.new_window("main", "tt", reporter((0.5, thinkterm("my-agent", "pondering"))))
        line = proc.wait_line(lambda o: o["pane"] == pane and o["agent"] == "my-agent", what="the agent")
        # RI-6: named, but "pondering" is never taken: the agent reads as idle
        assert line["state"] == "idle"
    finally:
        proc.stop()


def test_explain_says_why_a_report_is_discarded(tmux_server: TmuxServer) -> None:
    proc = _start(tmux_server, "--explain")
    try:
        report = osc7501(f"state=pondering:msg={b64('hm')}")
        pane = tmux_server.new_window("main", "bad", reporter((0.5, report)))
        line = wait_for(
            lambda: next((o for o in list(proc.discarded) if o["pane"] == pane), None),
            timeout=15,
            what="the discarded line",
        )
        assert line["discarded"] == "osc7501"
        assert "pondering" in line["reason"]
        assert line["host"] == proc.latest(tmux_server.panes()[0])["host"]
        assert set(line) == {"host", "pane", "t", "discarded", "reason"}
    finally:
        proc.stop()
