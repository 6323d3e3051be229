"""A stalled collector never makes tmux buffer without bound (pause-after), and recovers.

The stall is real: the agent process is stopped with SIGSTOP while a pane floods
output, so tmux's control-client buffer for that pane would grow for as long as the
stall lasts. With pause-after tmux stops sending that pane instead (`%pause`); after
SIGCONT the collector catches up, asks tmux to continue, and a report written after
the flood is decoded.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time

import pytest
from helpers import osc7501
from paneboard_agent.tmux.control import ControlClient, Notification, Output, Pause, attach_argv, tmux_base
from paneboard_agent.transport import LocalTransport
from support.agentproc import AgentProcess
from support.tmux import TerminalClient, TmuxServer

pytestmark = pytest.mark.tmux

FLOOD = "python3 -c \"import os; [os.write(1, b'x' * 4000 + b'\\\\n') for _ in range(500000)]\""


def test_control_client_is_paused_while_stalled_and_continues(tmux_server: TmuxServer) -> None:
    async def scenario() -> tuple[list[str], int]:
        pane = ""
        notes: list[Notification] = []
        stall = asyncio.Event()

        async def handler(client: ControlClient, note: Notification) -> None:
            notes.append(note)
            if isinstance(note, Output) and note.pane == pane and not stall.is_set():
                stall.set()
                await asyncio.sleep(4)  # a consumer that stops reading for 4 s

        term = TerminalClient(tmux_server)  # keeps tmux reading the pane (see TerminalClient)
        t = LocalTransport()
        argv = attach_argv(tmux_base(tmux_server.name, None), "main", (3, 3), 1)
        client = ControlClient(await t.open_process(argv), "main", handler)
        await client.wait_ready(10)
        pane = tmux_server.new_window("main", "flood", FLOOD)
        deadline = time.monotonic() + 30
        while not any(isinstance(n, Pause) and n.pane == pane for n in notes):
            assert time.monotonic() < deadline, "tmux never paused the flooding pane"
            await asyncio.sleep(0.05)
        before = sum(1 for n in notes if isinstance(n, Output) and n.pane == pane)
        await client.send_nowait(f"refresh-client -A '{pane}:continue'")
        while sum(1 for n in notes if isinstance(n, Output) and n.pane == pane) <= before:
            assert time.monotonic() < deadline, "no output after continue"
            await asyncio.sleep(0.05)
        await client.close()
        await t.close()
        term.close()
        return [type(n).__name__ for n in notes], before

    kinds, _ = asyncio.run(scenario())
    assert "Pause" in kinds
    assert kinds.index("Pause") < len(kinds) - 1  # output came after it


def _flood_then_report(seconds: float, report: bytes) -> str:
    # the report is re-sent every second after the flood (as TA-14 asks of long states):
    # output written while tmux has the pane paused is dropped by design
    code = (
        "import os,time; t=time.time(); "
        f"exec('while time.time()-t<{seconds}: os.write(1, bytes([120])*4000+bytes([10]))'); "
        f"exec('for _ in range(120): os.write(1, bytes.fromhex(\\'{report.hex()}\\')); time.sleep(1)')"
    )
    return f'python3 -c "{code}"'


def test_stopped_agent_recovers_and_decodes_after_the_flood(tmux_server: TmuxServer) -> None:
    term = TerminalClient(tmux_server)
    proc = AgentProcess("--local", "--tmux-socket", tmux_server.name)
    try:
        proc.wait_line(lambda o: o["pane"] == "%0", what="first pane")
        flood = tmux_server.new_window(
            "main", "flood", _flood_then_report(10, osc7501("state=working:app=late"))
        )
        proc.wait_line(lambda o: o["pane"] == flood, what="flood pane listed")
        os.killpg(proc.proc.pid, signal.SIGSTOP)
        try:
            time.sleep(7)  # beyond pause-after (5 s): tmux pauses the pane instead of buffering
        finally:
            os.killpg(proc.proc.pid, signal.SIGCONT)
        # the report comes after the flood: seen only if the collector asked tmux to continue
        line = proc.wait_line(
            lambda o: o["pane"] == flood and o["state"] == "working", timeout=30, what="late"
        )
        assert line["agent"] == "late"
        # and a busy collector still answers SIGTERM promptly (its read loop yields)
        assert proc.stop() == 0 and not proc.needed_kill
    finally:
        proc.stop()
        term.close()
