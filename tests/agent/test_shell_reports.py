"""A shell's own report holds while its commands run, in a real tmux, bash and zsh.

The protocol author's snippet: a `status` shell function writes OSC 7501 with `printf`,
then `status working "Syncing photos"; rsync … && status done … || status error …`.
The report is the shell's, the command in front is its child: RI-2 keeps the report
while the shell is an ancestor of what is in front, and the shell's next prompt (the
foreground back at it: these shells send no OSC 133 marks) ends its `working`.
`sleep` stands in for `rsync` (a command the shell runs, for as long as it likes).
"""

from __future__ import annotations

import re
import shlex
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.agentproc import AgentProcess, polled
from support.tmux import TmuxServer
from support.wait import wait_for

pytestmark = pytest.mark.tmux

SHELLS = {
    "bash": "bash --noprofile --norc",
    "zsh": "zsh -f",  # no rc files: no prompt marks, nothing that reports by itself
}
STATUS = (
    r"""status() { printf '\e]7501;state=%s:msg=%s\e\\' "$1" "$(printf '%s' "$2" | base64 | tr -d '\n')"; }"""
)
WORKING = 'status working "Syncing photos"'
COMMAND = 'sleep 3 && status done "Photos synced" || status error "rsync failed"'
PANEBOARD = str(Path(sys.executable).parent / "paneboard")


@pytest.fixture(params=["local", pytest.param("ssh", marks=pytest.mark.sshd)])
def agent(request: pytest.FixtureRequest, tmux_server: TmuxServer) -> Iterator[AgentProcess]:
    """The collector on this machine, or through a real sshd on loopback (the parent
    chain is read on the watched host either way)."""
    where = ["--local"] if request.param == "local" else request.getfixturevalue("sshd").ssh_args()
    proc = AgentProcess(*where, "--tmux-socket", tmux_server.name, "--explain")
    try:
        first = tmux_server.panes()[0]
        proc.wait_line(lambda o: o["pane"] == first, what="the first pane listed")
        yield proc
    finally:
        proc.stop()


def _shell_pane(tmux_server: TmuxServer, agent: AgentProcess, shell: str) -> str:
    pane = tmux_server.new_window("main", shell, SHELLS[shell])
    agent.wait_line(lambda o: o["pane"] == pane, what="the shell pane")
    tmux_server.send(pane, STATUS)
    return pane


def _states(agent: AgentProcess, pane: str) -> list[tuple[str | None, str | None]]:
    """(state, process) of every line the collector wrote for `pane`, in order."""
    return [(o["state"], o["process"]) for o in agent.snapshot() if o["pane"] == pane]


def _held_then(agent: AgentProcess, pane: str, last: str, msg: str) -> None:
    """From the first `working` on, the pane said `working` while `sleep` ran (seen in
    front at least once), then `last` with `msg`.

    Between the command's end and the result, the shell computes the report (the
    snippet's `$(… | base64 …)`, or `paneboard emit` starting): it is in front again
    with nothing of its own live, and a look then shows the pane with no state. That
    gap is allowed here, nothing else: no other state, no other process."""
    lines = [o for o in agent.snapshot() if o["pane"] == pane]
    start = next(i for i, o in enumerate(lines) if o["state"] == "working")
    end = next(i for i, o in enumerate(lines) if o["state"] == last)
    story = _states(agent, pane)
    assert start < end, story
    ran = [i for i in range(start, end) if lines[i]["process"] == "sleep"]
    assert ran, story
    assert all(o["state"] == "working" for o in lines[start : ran[-1] + 1]), story
    assert all(o["state"] is None and o["process"] is None for o in lines[ran[-1] + 1 : end]), story
    assert lines[end]["msg"] == msg, story


@pytest.mark.parametrize("shell", sorted(SHELLS))
def test_typed_snippet_holds_working_through_the_command(
    tmux_server: TmuxServer, agent: AgentProcess, shell: str
) -> None:
    pane = _shell_pane(tmux_server, agent, shell)
    tmux_server.send(pane, WORKING)
    agent.wait_line(lambda o: o["pane"] == pane and o["state"] == "working", what="working")
    polled(agent, tmux_server, 2)  # a person types the next line: the shell is at its prompt meanwhile
    tmux_server.send(pane, COMMAND)
    agent.wait_line(lambda o: o["pane"] == pane and o["state"] == "done", timeout=30, what="done")
    _held_then(agent, pane, "done", "Photos synced")
    _said_by_the_shell(agent, pane, shell)


def _said_by_the_shell(agent: AgentProcess, pane: str, shell: str) -> None:
    """While `sleep` ran, `--explain` said what the board says: the shell wrote the
    report, by name and pid (read on the watched host: here, this machine), as the
    parent of the command in front."""
    lines = agent.snapshot()
    said = [
        o["decided"]
        for o in lines
        if o["pane"] == pane and o["process"] == "sleep" and o["state"] == "working"
    ]
    assert said, _states(agent, pane)
    for text in said:
        m = re.fullmatch(rf"reported by `{shell}` \(pid (\d+)\), the parent of `sleep`", text)
        assert m is not None, said
        assert Path(f"/proc/{m.group(1)}/comm").read_text().strip() == shell


@pytest.mark.parametrize("shell", sorted(SHELLS))
def test_pasted_snippet_holds_working_through_the_command(
    tmux_server: TmuxServer, agent: AgentProcess, shell: str
) -> None:
    pane = _shell_pane(tmux_server, agent, shell)
    wait_for(lambda: "$" in tmux_server.cmd("capture-pane", "-p", "-t", pane), what="the prompt")
    # pasted as two lines: the shell reads the second at once
    tmux_server.cmd(
        "send-keys", "-t", pane, "-l", f"{WORKING}\n{COMMAND.replace('sleep 3', 'sleep 3; false')}\n"
    )
    agent.wait_line(lambda o: o["pane"] == pane and o["state"] == "error", timeout=30, what="error")
    _held_then(agent, pane, "error", "rsync failed")


@pytest.mark.parametrize("shell", sorted(SHELLS))
def test_ctrl_c_leaves_no_live_record(tmux_server: TmuxServer, agent: AgentProcess, shell: str) -> None:
    pane = _shell_pane(tmux_server, agent, shell)
    tmux_server.send(pane, WORKING)
    agent.wait_line(lambda o: o["pane"] == pane and o["state"] == "working", what="working")
    tmux_server.send(pane, COMMAND.replace("sleep 3", "sleep 60"))
    agent.wait_line(
        lambda o: o["pane"] == pane and o["process"] == "sleep" and o["state"] == "working",
        what="working while sleep runs",
    )
    tmux_server.cmd("send-keys", "-t", pane, "C-c")
    wait_for(lambda: agent.latest(pane)["state"] is None, timeout=15, what="the record ended")
    assert agent.latest(pane)["process"] is None  # back at the shell, nothing live
    assert not any(s in ("done", "error") for s, _ in _states(agent, pane)), _states(agent, pane)


@pytest.mark.parametrize("shell", sorted(SHELLS))
def test_emit_from_a_shell_function_holds_too(
    tmux_server: TmuxServer, agent: AgentProcess, shell: str
) -> None:
    """`paneboard emit` inside a shell function: emit reports for the shell that ran it."""
    pane = tmux_server.new_window("main", shell, SHELLS[shell])
    agent.wait_line(lambda o: o["pane"] == pane, what="the shell pane")
    pb = shlex.quote(PANEBOARD)
    tmux_server.send(pane, f'st() {{ {pb} emit "$1" --msg "$2"; }}')
    tmux_server.send(pane, 'st working "Syncing photos"')
    agent.wait_line(lambda o: o["pane"] == pane and o["state"] == "working", timeout=30, what="working")
    polled(agent, tmux_server, 2)
    tmux_server.send(pane, 'sleep 3 && st done "Photos synced" || st error "rsync failed"')
    agent.wait_line(lambda o: o["pane"] == pane and o["state"] == "done", timeout=30, what="done")
    _held_then(agent, pane, "done", "Photos synced")
