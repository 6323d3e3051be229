"""The Collector object in-process on a real tmux: snapshot and mark_seen (uplink hooks)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import AsyncIterator

import pytest
from helpers import osc7501, reporter
from paneboard_agent.collector import Collector, TmuxTarget
from paneboard_agent.transport import LocalTransport
from paneboard_agent.uplink import PaneKey, PaneUpdate
from support.hang import within
from support.tmux import TmuxServer

pytestmark = pytest.mark.tmux


class Recorder:
    def __init__(self) -> None:
        self.updates: list[PaneUpdate] = []
        self.gone: list[PaneKey] = []
        self.hosts: list[tuple[str, bool]] = []

    async def pane_changed(self, update: PaneUpdate) -> None:
        self.updates.append(update)

    async def pane_gone(self, key: PaneKey, t: float) -> None:
        self.gone.append(key)

    async def host_status(self, host: str, reachable: bool, t: float, error: str | None) -> None:
        self.hosts.append((host, reachable))

    async def host_health(self, host: str, health: object) -> None:
        return None  # the link's health is not what this test reads


async def _until(pred, timeout: float = 15.0, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while not (value := pred()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.05)
    return value


@contextlib.asynccontextmanager
async def watching(server: TmuxServer) -> AsyncIterator[Recorder]:
    """A collector watching `server` here, reachable, recording into the sink it yields;
    stopped (within 30 s) on the way out."""
    sink = Recorder()
    collector = Collector([TmuxTarget(LocalTransport("here"), socket=server.name)], sink)
    task = asyncio.create_task(collector.run())
    try:
        await _until(lambda: sink.hosts == [("here", True)], what="host reachable")
        yield sink
        assert not task.done()  # the watch went on throughout
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await within(task, 30, "the collector's stop")


def test_snapshot_and_mark_seen(tmux_server: TmuxServer) -> None:
    async def scenario() -> None:
        sink = Recorder()
        collector = Collector([TmuxTarget(LocalTransport("here"), socket=tmux_server.name)], sink)
        task = asyncio.create_task(collector.run())
        try:
            await _until(lambda: sink.hosts == [("here", True)], what="host reachable")
            await _until(lambda: any(u.key.pane == "%0" for u in sink.updates), what="first pane")
            pane = tmux_server.new_window("main", "r", reporter((0.5, osc7501("state=done:app=builder"))))

            def latest():
                found = [u for u in sink.updates if u.key.pane == pane]
                return found[-1] if found else None

            await _until(lambda: latest() and latest().state == "done", what="done")
            update = latest()
            assert update.key == PaneKey("here", tmux_server.name, pane)
            # an interpreter is named by its whole command line (RI-1); its program may be a
            # full path (pyenv's shim execs /root/.pyenv/versions/…/bin/python3)
            assert update.process and os.path.basename(update.process.split()[0]).startswith("python3")
            assert update.evidence  # the classifier's evidence travels with every update
            panes, hosts = collector.snapshot()
            assert hosts == {"here": (True, None)}
            assert {u.key.pane for u in panes} >= {"%0", pane}
            collector.mark_seen(update.key, time.time())
            await _until(lambda: latest().state != "done", what="seen: done is over")
            assert latest().state in ("idle", None)
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await within(task, 30, "the collector's stop")

    asyncio.run(within(scenario(), 120, "the scenario"))
