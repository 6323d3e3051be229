"""The panes' processes from /proc (procfs.py) against the real `ps`, on real processes.

The walk must say what `ps -p PIDS -t TTYS` said about a pane's processes, whatever the
processes call themselves (a command name with parentheses and spaces, a command line
that carries a newline and text shaped like another process's record), and leave out
what runs below them in a terminal of its own. Where the host
cannot walk (here: no `grep` on the PATH), the same script must be `ps` itself.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from paneboard_agent.tmux import procfs
from paneboard_agent.tmux.panes import parse_ps, ps_argv
from paneboard_agent.tmux.procfs import parse_procfs, procs_answer, procs_argv
from support.tmux import TmuxServer
from support.tools import require_tool
from support.wait import wait_for

pytestmark = pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux's /proc")

#: a pane's program that renames itself, forks a child on the pane's terminal and one in a
#: pseudo-terminal of its own (as agents run their tools), and waits
_TREE = """
import os, subprocess, sys, time
with open("/proc/self/comm", "w") as f:
    f.write(") x (y z")
subprocess.Popen(["sleep", "60"])
subprocess.Popen(["script", "-qfc", "sleep 61", "/dev/null"], stdout=subprocess.DEVNULL)
time.sleep(60)
"""
_FORGED = "ok\n/proc/1/stat:1 (init) S 0 1 1 0 1"


def _run(argv: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(argv, capture_output=True, timeout=10, env=env)


def _descendants(pid: int) -> set[int]:
    kids = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        kids |= {int(k) for k in (task / "children").read_text().split()}
    return kids.union(*(_descendants(k) for k in kids)) if kids else kids


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


@pytest.fixture
def pane(tmux_server: TmuxServer) -> Iterator[tuple[int, str]]:
    """A pane running _TREE: its shell's pid and its terminal, once all five processes run."""
    require_tool("script")
    target = tmux_server.new_window("main", "tree", shlex.join([sys.executable, "-c", _TREE, _FORGED]))
    pid, tty = tmux_server.cmd("display-message", "-p", "-t", target, "#{pane_pid} #{pane_tty}").split()
    deadline = time.monotonic() + 10
    while {b"sleep\x0060\x00", b"sleep\x0061\x00"} - {_cmdline(p) for p in _descendants(int(pid))}:
        assert time.monotonic() < deadline, "the pane's program never forked"
        time.sleep(0.02)
    yield int(pid), tty


def test_the_walk_says_what_ps_says_of_a_pane(pane: tuple[int, str]) -> None:
    pid, tty = pane
    res = _run(procs_argv([pid], [tty], "n1"))
    assert res.stdout.startswith(b"pb-procfs-n1\n")  # this host walks: it is Linux with GNU grep
    walked = procs_answer(res.returncode, res.stdout, res.stderr, "n1", [pid])
    ps = parse_ps(_run(ps_argv([pid], [tty])).stdout)
    assert walked is not None and walked.whole and not walked.cut
    # what ps says, but of a command line only its first line (cut on the host, below):
    # here the program's ends inside its script, before the text shaped like a record
    assert {p: replace(v, args="") for p, v in walked.items()} == {
        p: replace(v, args="") for p, v in ps.items()
    }
    assert {p: v.args for p, v in walked.items() if p != pid} == {
        p: v.args for p, v in ps.items() if p != pid
    }
    assert walked[pid].args == f"{sys.executable} -c"
    # the program and its two children on the pane's terminal; not what runs in script's own
    assert len(walked) == 3, walked
    assert {p.ppid for p in walked.values() if p.pid != pid} == {pid}


def test_a_process_of_the_host_that_is_no_panes_is_not_read(pane: tuple[int, str]) -> None:
    res = _run(procs_argv([pane[0]], [], "n2"))
    walked = procs_answer(res.returncode, res.stdout, res.stderr, "n2", [pane[0]])
    assert walked is not None and os.getpid() not in walked and 1 not in walked


@pytest.mark.proc
def test_a_pid_that_is_gone_is_absent_not_an_error() -> None:
    child = subprocess.Popen(["true"])
    child.wait()
    res = _run(procs_argv([child.pid, os.getpid()], [], "n3"))
    walked = procs_answer(res.returncode, res.stdout, res.stderr, "n3", [child.pid, os.getpid()])
    assert walked is not None and child.pid not in walked and os.getpid() in walked


def test_without_a_grep_that_splits_on_nul_the_script_is_ps(pane: tuple[int, str], tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("ps", "cat", "cut", "head"):
        found = shutil.which(tool)
        assert found is not None
        (bin_dir / tool).symlink_to(found)
    argv = procs_argv([pane[0]], [pane[1]], "n4")
    argv[0] = shutil.which("sh") or "/bin/sh"
    res = _run(argv, env={"PATH": str(bin_dir)})
    assert not res.stdout.startswith(b"pb-procfs-")
    assert res.stdout.endswith(b"\npb-procfs-n4 ps 0\n")  # ps's own status, after its last line
    got = procs_answer(res.returncode, res.stdout, res.stderr, "n4", [pane[0]])
    assert got == parse_ps(res.stdout) and got is not None and got.whole
    assert len(got) == 3


def test_records_that_are_not_the_walks_own_are_ignored() -> None:
    out = b"\n".join(
        [
            b"12/stat:12 (a) b) S 1 12 12 34816 12 4194560",
            b"12/stat:12 (second) S 1 99 99 34816 99",  # a file's first record counts
            b"16/stat:16 (on our tty) S 12 16 12 34816 12",
            b"17/stat:17 (own pty) S 12 17 17 34817 17",
            b"12/cmdline:bash\0-l\0",
            b"12/cmdline:a second line is not the first",
            b"/etc/13/stat:13 (x) S 1 13 0 0 13",  # not a pid's file
            b"14/stat:14 (y) S 1 14",  # cut short
            b"15/stat:15 (z) S 1 15 0 0 15",  # no command line: exiting
            b"16/cmdline:sleep",
            b"17/cmdline:sh",
            b"x/cmdline:evil",
            b"18/environ:SECRET=1",  # not a file the walk reads
            b"18/stat:18 (z) S 12 18 12 34816 12",
            b"",
        ]
    )
    procs = parse_procfs(out, [12, 14, 15])
    assert set(procs) == {12, 16}
    assert procs[12].args == "bash -l" and procs[12].ppid == 1 and procs[12].pgid == 12
    assert procs[12].tpgid == 12


def test_a_cut_reply_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    """A reply that stops before its end line (cut by the transport), or whose records
    fill `head`'s allowance or stop inside a line (cut on the host), says it is not
    whole, and a line cut in the middle is not read."""
    mark = b"pb-procfs-n6"
    records = (
        b"12/stat:12 (bash) S 1 12 12 34816 12\n12/cmdline:bash\0\n"
        b"16/stat:16 (sleep) S 12 16 12 34816 16\n16/cmdline:sleep\x00600\0\n"
    )
    whole = mark + b"\n" + mark + b" cut 40\n" + records + mark + b" end\n"
    got = procs_answer(0, whole, b"", "n6", [12, 40])
    assert got is not None and got.whole and got.cut == {40} and set(got) == {12, 16}
    assert got.sure([12]) and not got.sure([12, 40])
    for n in (len(whole) - 1, whole.index(b"600")):  # cut by the transport
        cut = procs_answer(0, whole[:n], b"", "n6", [12, 40])
        assert cut is not None and not cut.whole and not cut.sure([12])
        assert cut.get(16) is None or cut[16].args == "sleep 600"
    inside = whole.replace(b"600\0\n", b"6")  # head stopped inside the last record
    cut = procs_answer(0, inside, b"", "n6", [12])
    assert cut is not None and not cut.whole and set(cut) == {12}
    monkeypatch.setattr(procfs, "REPLY_MAX", len(records))  # records as long as the allowance
    cut = procs_answer(0, whole, b"", "n6", [12])
    assert cut is not None and not cut.whole


def _spawning_pane(server: TmuxServer, name: str, command: str, kids: int) -> tuple[int, str]:
    """A pane running `command`: its process's pid and its terminal, once `kids` processes
    run below it."""
    target = server.new_window("main", name, command)
    pid, tty = server.cmd("display-message", "-p", "-t", target, "#{pane_pid} #{pane_tty}").split()
    wait_for(lambda: len(_descendants(int(pid))) >= kids, timeout=20, what=f"{name}'s processes")
    return int(pid), tty


def _run_via(via: str, request: pytest.FixtureRequest, argv: list[str]) -> tuple[int | None, bytes, bytes]:
    """Run the script here, or on this machine through a real sshd (`via`)."""
    if via == "local":
        res = _run(argv)
        return res.returncode, res.stdout, res.stderr
    from paneboard_agent.transport.ssh import SSHTarget, SSHTransport

    sshd = request.getfixturevalue("sshd")
    target = SSHTarget("127.0.0.1", sshd.port, sshd.user, (str(sshd.client_key),), str(sshd.known_hosts))

    async def run() -> tuple[int | None, bytes, bytes]:
        t = SSHTransport(target)
        try:
            got = await t.run(argv, 30)
        finally:
            await t.close()
        return got.returncode, got.stdout, got.stderr

    return asyncio.run(run())


VIA = ["local", pytest.param("ssh", marks=pytest.mark.sshd)]


@pytest.mark.parametrize("via", VIA)
def test_a_pane_that_spawns_huge_command_lines_costs_a_bounded_reply(
    tmux_server: TmuxServer, via: str, request: pytest.FixtureRequest
) -> None:
    """Issue 40, finding 5: 30 children with 1.8 MB of arguments made every look carry them
    all. Each command line is cut on the host, and the reply stays bounded; the other
    pane's processes are all there."""
    spawner = shlex.join([sys.executable, "-c", _SPAWN, "30", "60000"])
    big = _spawning_pane(tmux_server, "big", spawner, 30)
    kids = _descendants(big[0])
    assert sum(len(_cmdline(k)) for k in kids) > 1_800_000
    other = _spawning_pane(tmux_server, "other", "sh -c 'sleep 61; :'", 1)
    code, out, err = _run_via(via, request, procs_argv([big[0], other[0]], [big[1], other[1]], "n7"))
    walked = procs_answer(code, out, err, "n7", [big[0], other[0]])
    assert walked is not None and walked.whole and not walked.cut
    assert walked[other[0]].args == "sh -c sleep 61; :"
    assert [walked[p].args for p in _descendants(other[0])] == ["sleep 61"]
    assert kids <= set(walked) and all(len(walked[k].args) <= procfs.ARGS_MAX for k in kids)
    assert len(out) < 32 * (procfs.ARGS_MAX + 100), len(out)


def test_where_the_host_cannot_walk_ps_lines_are_cut_on_the_host(
    tmux_server: TmuxServer, tmp_path: Path
) -> None:
    """The `ps` fallback is bounded alike: each line cut at ARGS_MAX bytes on the host."""
    spawner = shlex.join([sys.executable, "-c", _SPAWN, "30", "60000"])
    big = _spawning_pane(tmux_server, "big", spawner, 30)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("ps", "cut", "head"):
        found = shutil.which(tool)
        assert found is not None
        (bin_dir / tool).symlink_to(found)
    argv = procs_argv([big[0]], [big[1]], "n9")
    argv[0] = shutil.which("sh") or "/bin/sh"
    res = _run(argv, env={"PATH": str(bin_dir)})
    got = procs_answer(res.returncode, res.stdout, res.stderr, "n9", [big[0]])
    assert got is not None and got.whole and _descendants(big[0]) <= set(got)
    assert len(res.stdout) < 32 * (procfs.ARGS_MAX + 1), len(res.stdout)
    assert all(len(line) <= procfs.ARGS_MAX for line in res.stdout.splitlines())


@pytest.mark.parametrize("via", VIA)
def test_one_panes_fork_bomb_does_not_hide_anothers_processes(
    tmux_server: TmuxServer, monkeypatch: pytest.MonkeyPatch, via: str, request: pytest.FixtureRequest
) -> None:
    """The bound is per start pid (per pane), not one for all: a pane with more processes
    than its share is walked to its share and said to be cut; the pane walked after it is
    walked whole."""
    monkeypatch.setattr(procfs, "PANE_MAX", 8)
    bomb = _spawning_pane(tmux_server, "bomb", shlex.join([sys.executable, "-c", _SPAWN, "20", "10"]), 20)
    other = _spawning_pane(tmux_server, "other", "sh -c 'sleep 61; :'", 1)
    assert bomb[0] < other[0]  # the bomb's walk comes first
    code, out, err = _run_via(via, request, procs_argv([bomb[0], other[0]], [bomb[1], other[1]], "n8"))
    walked = procs_answer(code, out, err, "n8", [bomb[0], other[0]])
    assert walked is not None
    assert {other[0], *_descendants(other[0])} <= set(walked)  # the other pane's processes, all
    stats = sum(1 for r in out.split(b"\n") if b"/stat:" in r)
    assert stats == 8 + 2, out  # and the bomb's share
    assert walked.cut == {bomb[0]} and not walked.sure([bomb[0]]) and walked.sure([other[0]])


#: a pane's program that starts N children, each with one argument of SIZE bytes, that
#: wait on their stdin (a builtin `read`: no process of their own)
_SPAWN = """
import subprocess, sys
n, size = int(sys.argv[1]), int(sys.argv[2])
kids = [subprocess.Popen(["sh", "-c", "read x", "sh", "y" * size]) for _ in range(n)]
sys.stdin.read()
"""


def test_the_walk_stops_at_its_bound(pane: tuple[int, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """A pane with more processes than the bound is read up to the bound, not beyond."""
    monkeypatch.setattr(procfs, "PANE_MAX", 2)
    res = _run(procs_argv([pane[0]], [pane[1]], "n5"))
    walked = procs_answer(res.returncode, res.stdout, res.stderr, "n5", [pane[0]])
    assert walked is not None and pane[0] in walked and walked.cut == {pane[0]}
    records = res.stdout.split(b"\n")
    assert sum(1 for r in records if b"/stat:" in r) == 2, res.stdout  # the pane has five processes
