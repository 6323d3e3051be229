"""A command the collector runs here and stops waiting for is not left running.

The collector runs `ps` and tmux queries through `LocalTransport.run`; when it stops (a
SIGTERM, a lost uplink), the task awaiting one is cancelled. The child was left alive
and unreaped then, and its pipes were closed only when the garbage collector found
them, after their event loop had gone (an "Event loop is closed" warning)."""

from __future__ import annotations

import asyncio
import os
import shlex
from pathlib import Path

import pytest
from paneboard_agent.transport import LocalTransport

pytestmark = pytest.mark.proc


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_a_cancelled_run_kills_and_reaps_its_child(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    script = f"echo $$ > {shlex.quote(str(pid_file))}; exec sleep 60"

    async def go() -> int:
        task = asyncio.create_task(LocalTransport().run(["sh", "-c", script], timeout=60))
        while not pid_file.exists() or not pid_file.read_text().strip():
            await asyncio.sleep(0.02)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return int(pid_file.read_text())

    pid = asyncio.run(go())
    # reaped, not a zombie: the pid is gone at once, not at some later wait
    assert not _alive(pid), f"sleep {pid} still there ({Path(f'/proc/{pid}/stat').read_text()!r})"
