"""Over SSH a poll's look is one command: tmux's listing, then `ps`, one round trip.

Every report waits for a poll's look at its pane's processes. That look was two round
trips in a row over SSH (`list-panes` through the control client, then `ps` through
the shell channel); now one `sh -c` runs both on the host, listing first (`ps` is the
later word, panes._observe_leader). Through a real sshd and real tmux, the transport's
commands and the control client's are recorded per poll (the functions are wrapped only
to record what they were asked); the emit-at-the-prompt scenario that needs `ps` to be
the later word runs over SSH too.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import test_collector_local as local
from helpers import osc7501, reporter
from paneboard_agent.collector import Collector, TmuxTarget
from paneboard_agent.tmux import ControlClient, PaneInfo, look
from paneboard_agent.transport.ssh import SSHTarget, SSHTransport
from paneboard_agent.watch import TmuxWatcher
from support.agentproc import AgentProcess
from support.sshd import Sshd
from support.tmux import TmuxServer
from test_collector_inprocess import Recorder, _until

pytestmark = [pytest.mark.tmux, pytest.mark.sshd]


def test_the_script_lists_then_reads_processes_and_the_marker_cannot_be_forged() -> None:
    argv = look.look_argv(["tmux", "-u", "-L", "s"], {"%3"}, {42, 7}, {"/dev/pts/4"}, "n0nce")
    assert argv[:2] == ["sh", "-c"]
    words = shlex.split(argv[2])
    # one shell, in sequence (`;` and `&&`, never a lone `&`): the listing ends before the
    # processes are read
    assert "&" not in re.sub(r"\d?>&\d", "", argv[2]).replace("&&", "")
    listing, walk = words.index("list-panes"), words.index("pb-procfs-n0nce")
    assert listing < words.index("printf") < walk and "grep" in words[walk:]
    # where the host cannot walk /proc (procfs.py), `ps` of the same pids and terminals
    ps = ["ps", "-ww", "-o", "pid=,ppid=,pgid=,tpgid=,args=", "-p", "7,42", "-t", "pts/4;"]
    at = words.index("ps", walk)
    assert words[at : at + len(ps)] == ps
    assert "for r in 7 42; do" in argv[2]
    # a window named like a marker, without the nonce, is listing text
    reply = b"P\tforged\npb-look-guess 0\n\npb-look-n0nce 1\n  42 1 42 42 bash\n"
    assert look.split_reply(reply, "n0nce") == (b"P\tforged\npb-look-guess 0\n", 1, b"  42 1 42 42 bash\n")
    assert look.split_reply(reply[:20], "n0nce") is None  # cut before ps: no answer


def test_a_new_or_respawned_pane_is_not_covered_by_the_selection() -> None:
    def pane(pid: int, tty: str, dead: bool = False) -> PaneInfo:
        return PaneInfo("$0", "@0", "0", "%1", pid, dead, tty, "main", "w", "bash")

    seen = look.Look([], {}, frozenset({10, 11}), frozenset({"/dev/pts/1"}))
    assert seen.covers([pane(10, "/dev/pts/1"), pane(11, "/dev/pts/9", dead=True)])
    assert not seen.covers([pane(12, "/dev/pts/1")])  # respawned: a new pid
    assert not seen.covers([pane(10, "/dev/pts/2")])  # a tty ps was not asked about


def test_held_reports_cost_one_round_trip_per_poll_over_ssh(
    tmux_server: TmuxServer, sshd: Sshd, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each poll serving held reports sends one command over the link: the look (no
    control-client listing, no `ps` of its own), and in it the listing comes first."""
    # Looks may overlap (overlap.py): each command is filed under the look whose task sent it.
    polls: dict[tuple[int, bool, bool], list[tuple[str, Any]]] = {}
    current: dict[asyncio.Task[Any], tuple[int, bool, bool]] = {}
    armed = [False]
    real_look, real_run, real_command = TmuxWatcher._look_for, SSHTransport.run, ControlClient.command

    async def look_for(self: TmuxWatcher, poll: Any) -> Any:
        key = (len(polls), bool(poll.waiting), armed[0])
        polls[key] = []
        task = asyncio.current_task()
        assert task is not None
        current[task] = key
        try:
            return await real_look(self, poll)
        finally:
            del current[task]

    def note(kind: str, what: Any) -> None:
        task = asyncio.current_task()
        key = current.get(task) if task is not None else None
        if key is not None and _is_look_part(kind, what):
            polls[key].append((kind, what))

    async def run(self: SSHTransport, argv: list[str], *args: Any, **kwargs: Any) -> Any:
        note("run", list(argv))
        return await real_run(self, argv, *args, **kwargs)

    async def command(self: ControlClient, cmd: str, *args: Any, **kwargs: Any) -> Any:
        note("control", cmd)
        return await real_command(self, cmd, *args, **kwargs)

    monkeypatch.setattr(TmuxWatcher, "_look_for", look_for)
    monkeypatch.setattr(SSHTransport, "run", run)
    monkeypatch.setattr(ControlClient, "command", command)
    steps = [(0.3, osc7501(f"state={'working' if i % 2 else 'done'}:app=builder")) for i in range(12)]

    async def scenario() -> str:
        sink = Recorder()
        target = SSHTarget("127.0.0.1", sshd.port, sshd.user, (str(sshd.client_key),), str(sshd.known_hosts))
        collector = Collector([TmuxTarget(SSHTransport(target), socket=tmux_server.name)], sink)
        task = asyncio.create_task(collector.run())
        try:
            await _until(lambda: any(h for _, h in sink.hosts), what="host reachable")
            pane = tmux_server.new_window("main", "r", "sleep 2; " + reporter(*steps))
            await _until(lambda: any(u.key.pane == pane for u in sink.updates), what="the pane listed")
            armed[0] = True  # from here the pane is known: its pid and tty are selected
            await _until(
                lambda: sum(1 for u in sink.updates if u.key.pane == pane and u.state) >= 8,
                what="the reports",
            )
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        return pane

    asyncio.run(scenario())
    served = [trips for (_, held, armed_then), trips in polls.items() if held and armed_then]
    assert len(served) >= 5, served
    for trips in served:
        assert len(trips) == 1, trips
        kind, argv = trips[0]
        assert kind == "run" and argv[:2] == ["sh", "-c"], trips
        script = argv[2]
        listing, walk, ps = (script.index(s) for s in (" list-panes ", " pb-procfs-", " ps -ww "))
        assert listing < walk < ps, script


def _is_look_part(kind: str, what: Any) -> bool:
    """A command that is part of a look: a listing or a question about processes (`ps`, or
    the /proc walk that runs it where it cannot walk; not a capture, not the round-trip
    probe beside a full poll, not the session list every 25 polls)."""
    if kind == "control":
        return str(what).startswith("list-panes")
    line = " ".join(what)
    return "list-panes" in line or what[0] == "ps" or " pb-procfs-" in line


@pytest.mark.parametrize("how", ["script", "command line"])
def test_emit_blocked_then_waiting_stays_blocked_over_ssh(
    tmux_server: TmuxServer, sshd: Sshd, tmp_path: Path, how: str
) -> None:
    """The scenario that needs `ps` to be the later word (test_collector_local), with the
    look in one command over SSH: emit typed at the prompt files its report under the
    shell, and the question stands while `read -p` waits."""
    proc = AgentProcess(*sshd.ssh_args(), "--tmux-socket", tmux_server.name)
    try:
        first = tmux_server.panes()[0]
        proc.wait_line(lambda o: o["pane"] == first, what="the first pane listed")
        local.test_emit_blocked_then_waiting_stays_blocked(tmux_server, proc, tmp_path, how)
    finally:
        proc.stop()
