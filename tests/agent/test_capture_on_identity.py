"""A prompt drawn before its program is known is read as soon as the program is.

The shell prints a Claude-like permission prompt and keeps the foreground for a few
polls (so the collector sees `bash`, wants no screen and captures nothing), then execs
a program named `claude` that prints nothing more and waits. Only a capture when the
identity arrives can read the prompt; no later output will ask for one."""

from __future__ import annotations

import asyncio
import contextlib
import shlex

import pytest
from paneboard_agent.collector import Collector, Options, TmuxTarget
from paneboard_agent.transport import LocalTransport
from paneboard_protocol.rules import load_rules
from support.hang import within
from support.tmux import TmuxServer
from test_collector_inprocess import Recorder, _until

pytestmark = pytest.mark.tmux

PROMPT = "Bash command\\n\\n  touch pb-ran\\n\\nDo you want to proceed?\\n❯ 1. Yes\\n  2. No\\n"


def test_prompt_printed_before_the_program_is_known_reads_blocked(tmux_server: TmuxServer) -> None:
    # `read -t` keeps bash itself in front (no child process) for 3 s after the prompt
    inner = f"printf '{PROMPT}'; read -t 3 _ < /dev/tty; exec -a claude sleep 600"
    command = f"bash -c {shlex.quote(inner)}"

    async def scenario() -> None:
        sink = Recorder()
        target = TmuxTarget(LocalTransport("here"), socket=tmux_server.name)
        collector = Collector([target], sink, Options(rules=load_rules(None), poll_interval=0.5))
        task = asyncio.create_task(collector.run())
        try:
            await _until(lambda: sink.hosts == [("here", True)], what="host reachable")
            pane = tmux_server.new_window("main", "ask", command)

            def latest():
                found = [u for u in sink.updates if u.key.pane == pane]
                return found[-1] if found else None

            await _until(lambda: latest() is not None, what="the pane reported")
            assert latest().state != "blocked"  # while bash is in front the screen is not read
            await _until(lambda: latest().agent == "claude", timeout=20, what="the program known")
            await _until(lambda: latest().state == "blocked", timeout=10, what="blocked")
            assert "Do you want to proceed?" in (latest().msg or "")
            assert latest().kind == "permission"
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await within(task, 30, "the collector's stop")

    asyncio.run(within(scenario(), 120, "the scenario"))
