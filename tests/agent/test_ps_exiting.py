"""The real `ps` on a process that has exited but is not yet reaped.

Its command line is gone, and ps prints `[comm] <defunct>` (or `[comm]` while it exits).
The collector caught `paneboard emit` so, took `[paneboard]` for a program of the pane's
own, filed emit's report under it and ended the report a poll later.
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest
from paneboard_agent.tmux import processes
from paneboard_agent.transport import LocalTransport


@pytest.mark.proc
def test_a_zombie_is_not_listed_as_a_process() -> None:
    child = os.fork()
    if child == 0:
        os._exit(0)
    try:
        deadline = time.monotonic() + 10
        while not Path(f"/proc/{child}/stat").read_text().split(") ")[1].startswith("Z"):
            assert time.monotonic() < deadline, "the child never became a zombie"
            time.sleep(0.01)
        procs = asyncio.run(processes(LocalTransport("here"), [child, os.getpid()]))
    finally:
        os.waitpid(child, 0)
    assert procs is not None
    assert os.getpid() in procs
    assert child not in procs, procs.get(child)
