"""The real `ps` keeps a whole command line, whatever `$COLUMNS` the collector inherited.

procps cuts `args` to `$COLUMNS` (80 in many CI and cron environments): a cut line hid
`paneboard emit` behind a long virtualenv path, and the emitted question was lost.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys

import pytest
from paneboard_agent.tmux import processes
from paneboard_agent.transport import LocalTransport


@pytest.mark.proc
def test_a_long_command_line_survives_a_narrow_columns(monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    tail = "x" * 300 + " the-end"
    child = subprocess.Popen([sys.executable, "-c", "import sys, time; time.sleep(60)", tail])
    try:
        procs = asyncio.run(processes(LocalTransport("here"), [child.pid]))
    finally:
        child.kill()
        child.wait()
    assert procs is not None
    assert procs[child.pid].args.endswith(" the-end"), procs[child.pid].args
    assert os.environ["COLUMNS"] == "80"
