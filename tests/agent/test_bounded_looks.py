"""A pane's program cannot make every look ship megabytes, nor make other panes read as exited.

Issue 40, finding 5: the process walk sent each descendant's whole command line, so a
program with huge arguments made every look carry them (over SSH each one crossed the
link), and a reply cut at the transport's limit lost the processes after the cut: a
pane whose process was not read was taken for one whose program had exited, and the
records that program owned ended. Here, on real tmux, locally and through a real sshd:
a pane whose program carries 1 MB of arguments and starts 30 children with 1.8 MB
more, and a pane started after it that reports `blocked`: that pane's program is seen,
its report stands, and no pane reads as exited or gone.
"""

from __future__ import annotations

import asyncio
import contextlib
import shlex
import sys
from pathlib import Path

import pytest
from helpers import b64, osc7501, reporter
from paneboard_agent.collector import Collector, TmuxTarget
from paneboard_agent.tmux import Procs
from paneboard_agent.tmux.panes import ProcInfo
from paneboard_agent.transport import LocalTransport, Transport
from paneboard_agent.transport.ssh import SSHTarget, SSHTransport
from paneboard_agent.uplink import PaneUpdate
from support.hang import within
from support.sshd import Sshd
from support.tmux import TmuxServer
from test_collector_inprocess import Recorder, _until

#: the flooding pane's program: it gives itself 1.1 MB of arguments (exec), then starts
#: 30 children with 60 KB of arguments each that wait on a builtin `read`, and waits
_FLOOD = """
import os, subprocess, sys
if len(sys.argv) == 1:
    os.execv(sys.executable, [sys.executable, "-c", SELF, *["x" * 110_000] * 10])
kids = [subprocess.Popen(["sh", "-c", "read x", "sh", "y" * 60_000]) for _ in range(30)]
sys.stdin.read()
"""


def _flood_command() -> str:
    return shlex.join([sys.executable, "-c", f"SELF = {_FLOOD!r}\n{_FLOOD}"])


def _descendants(pid: int) -> set[int]:
    kids = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        kids |= {int(k) for k in (task / "children").read_text().split()}
    return kids.union(*(_descendants(k) for k in kids)) if kids else kids


def _scenario(server: TmuxServer, transport: Transport) -> None:
    async def scenario() -> None:
        sink = Recorder()
        collector = Collector([TmuxTarget(transport, socket=server.name)], sink)
        task = asyncio.create_task(collector.run())
        try:
            await _until(lambda: any(up for _, up in sink.hosts), what="host reachable")
            flood = server.new_window("main", "flood", _flood_command())
            pid = int(server.cmd("display-message", "-p", "-t", flood, "#{pane_pid}"))
            await _until(lambda: len(_descendants(pid)) >= 30, timeout=30, what="the flood's children")
            assert len(Path(f"/proc/{pid}/cmdline").read_bytes()) > 1_000_000
            await _until(lambda: any(u.key.pane == flood for u in sink.updates), what="the flood listed")
            first = osc7501("state=blocked:kind=permission:app=builder")
            second = osc7501(f"state=blocked:kind=permission:app=builder:msg={b64('second')}")
            other = server.new_window("main", "other", reporter((0.5, first), (1.5, second), then_sleep=600))

            def of(pane: str) -> list[PaneUpdate]:
                return [u for u in sink.updates if u.key.pane == pane]

            # each report waits for a look at its pane's processes: the second comes out
            # of a look after the one that released the first
            await _until(lambda: any(u.msg == "second" for u in of(other)), timeout=60, what="the reports")
            updates = of(other)
            start = next(i for i, u in enumerate(updates) if u.state == "blocked")
            assert all(u.state == "blocked" for u in updates[start:]), updates
            assert all(u.process and "-c" in u.process for u in updates[start:]), updates
            assert not sink.gone
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await within(task, 30, "the collector's stop")

    asyncio.run(within(scenario(), 180, "the scenario"))


@pytest.mark.tmux
def test_a_flooding_pane_leaves_the_others_seen_locally(tmux_server: TmuxServer) -> None:
    _scenario(tmux_server, LocalTransport("here"))


@pytest.mark.tmux
@pytest.mark.sshd
def test_a_flooding_pane_leaves_the_others_seen_over_ssh(tmux_server: TmuxServer, sshd: Sshd) -> None:
    target = SSHTarget("127.0.0.1", sshd.port, sshd.user, (str(sshd.client_key),), str(sshd.known_hosts))
    _scenario(tmux_server, SSHTransport(target))


def test_a_walk_not_whole_judges_a_pane_only_on_what_it_read() -> None:
    """`Procs.tells`: a whole walk judges every pane (a missing process is gone); one cut
    short judges a pane only when its process and its foreground leader were read."""
    shell, leader = ProcInfo(10, 20, "bash", 1, 10), ProcInfo(20, 20, "claude", 10, 20)
    assert Procs({}).tells(10, 20)  # whole: the pane's process is gone
    assert not Procs({}, whole=False).tells(10, 20)
    assert not Procs({10: shell}, whole=False).tells(10, 20)  # its leader not read
    assert Procs({10: shell, 20: leader}, whole=False).tells(10, 20)
    assert not Procs({10: shell}, cut=[10]).tells(10, None)
    assert Procs({10: shell}, cut=[30]).tells(10, 20)  # another pane's walk stopped
    assert Procs({10: replace_tpgid(shell, -1)}, whole=False).tells(10, None)  # no foreground group


def replace_tpgid(p: ProcInfo, tpgid: int) -> ProcInfo:
    return ProcInfo(p.pid, tpgid, p.args, p.ppid, p.pgid)
