"""The panes' processes from /proc (procfs.py) against the real `ps`, on real processes.

The walk must say what `ps -p PIDS -t TTYS` said about a pane's processes, whatever the
processes call themselves (a command name with parentheses and spaces, a command line
that carries a newline and text shaped like another process's record), and leave out
what runs below them in a terminal of its own. Where the host
cannot walk (here: no `grep` on the PATH), the same script must be `ps` itself.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from paneboard_agent import procfs
from paneboard_agent.panes import parse_ps, ps_argv
from paneboard_agent.procfs import parse_procfs, procs_answer, procs_argv
from support.tmux import TmuxServer
from support.tools import require_tool

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
    assert walked is not None
    assert walked == ps
    # the program and its two children on the pane's terminal; not what runs in script's own
    assert len(walked) == 3, walked
    assert walked[pid].args.endswith(" ok /proc/1/stat:1 (init) S 0 1 1 0 1")
    assert {p.ppid for p in walked.values() if p.pid != pid} == {pid}


def test_a_process_of_the_host_that_is_no_panes_is_not_read(pane: tuple[int, str]) -> None:
    res = _run(procs_argv([pane[0]], [], "n2"))
    walked = procs_answer(res.returncode, res.stdout, res.stderr, "n2", [pane[0]])
    assert walked is not None and os.getpid() not in walked and 1 not in walked


def test_a_pid_that_is_gone_is_absent_not_an_error() -> None:
    child = subprocess.Popen(["true"])
    child.wait()
    res = _run(procs_argv([child.pid, os.getpid()], [], "n3"))
    walked = procs_answer(res.returncode, res.stdout, res.stderr, "n3", [child.pid, os.getpid()])
    assert walked is not None and child.pid not in walked and os.getpid() in walked


def test_without_a_grep_that_splits_on_nul_the_script_is_ps(pane: tuple[int, str], tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("ps", "cat"):
        found = shutil.which(tool)
        assert found is not None
        (bin_dir / tool).symlink_to(found)
    argv = procs_argv([pane[0]], [pane[1]], "n4")
    argv[0] = shutil.which("sh") or "/bin/sh"
    res = _run(argv, env={"PATH": str(bin_dir)})
    assert not res.stdout.startswith(b"pb-procfs-")
    assert procs_answer(res.returncode, res.stdout, res.stderr, "n4", [pane[0]]) == parse_ps(res.stdout)
    assert len(parse_ps(res.stdout)) == 3


def test_records_that_are_not_the_walks_own_are_ignored() -> None:
    out = b"\0".join(
        [
            b"12/stat:12 (a) b) S 1 12 12 34816 12 4194560",
            b"16/stat:16 (on our tty) S 12 16 12 34816 12",
            b"17/stat:17 (own pty) S 12 17 17 34817 17",
            b"12/cmdline:bash",
            b"12/cmdline:-l",
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


def test_the_walk_stops_at_its_bound(pane: tuple[int, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """A pane with more processes than the bound is read up to the bound, not beyond."""
    monkeypatch.setattr(procfs, "MAX_PROCESSES", 2)
    res = _run(procs_argv([pane[0]], [pane[1]], "n5"))
    walked = procs_answer(res.returncode, res.stdout, res.stderr, "n5", [pane[0]])
    assert walked is not None and pane[0] in walked
    records = res.stdout.split(b"\n", 1)[1].split(b"\0")
    stats = [r for r in records if r.split(b"/", 1)[0].isdigit() and r.split(b"/", 1)[1].startswith(b"stat:")]
    assert len(stats) == 2, res.stdout  # the pane has five processes
