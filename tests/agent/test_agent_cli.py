"""`paneboard agent` argument handling: one clear line on stderr, non-zero exit."""

from __future__ import annotations

import subprocess
import sys

import pytest


def _agent(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "paneboard.cli", "agent", *args], capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "paneboard agent: give exactly one of --stdout or --server URL"),
        (
            ("--stdout", "--server", "http://x", "--token", "t"),
            "give exactly one of --stdout or --server URL",
        ),
        (("--server", "http://x"), "paneboard agent: --server needs --token"),
        (("--stdout", "--ssh", "h:notaport"), "paneboard agent: --ssh 'h:notaport': bad port 'notaport'"),
        (
            ("--stdout", "--tmux-socket", "/tmp/x"),
            "paneboard agent: --tmux-socket: a socket name (tmux -L), not a path",
        ),
        (("--stdout", "--bogus"), "paneboard agent: unrecognized arguments: --bogus"),
        (("--stdout", "--config", "/nonexistent.toml"), "paneboard agent: /nonexistent.toml: cannot read"),
    ],
)
def test_bad_arguments_give_one_line(args: tuple[str, ...], message: str) -> None:
    res = _agent(*args)
    assert res.returncode == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], res.stderr
    assert res.stdout == ""
