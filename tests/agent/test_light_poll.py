"""A poll woken by held reports asks tmux only about the panes that hold them.

Before, every light poll (up to 20 a second while reports flow) listed every pane of
the server and applied the whole listing: the collector's cost per poll grew with the
number of panes, however few reported. Now tmux filters the listing (`list-panes -f`)
and only the held panes are looked at; a change of windows or panes still brings a
full listing. Real tmux throughout; the listing function is wrapped only to record
what it was asked and what tmux answered.
"""

from __future__ import annotations

import asyncio
import contextlib

import pytest
from helpers import osc7501, reporter
from paneboard_agent.collector import Collector, TmuxTarget
from paneboard_agent.tmux import queries
from paneboard_agent.tmux.control import ControlClient, attach_argv, tmux_base
from paneboard_agent.transport import LocalTransport
from paneboard_agent.watch import watcher
from support.tmux import TmuxServer
from test_collector_inprocess import Recorder, _until

pytestmark = pytest.mark.tmux


def test_only_filter_names_exactly_the_panes() -> None:
    assert queries.only_filter({"%7", "%12"}) == "#{m:*|#{pane_id}|*,|%12|%7|}"
    for bad in ("7", "%7}", "%", "%1|*", "%1,#{pane_pid}"):
        with pytest.raises(ValueError):
            queries.only_filter({bad})


def test_filtered_listing_through_a_command_and_a_control_client(tmux_server: TmuxServer) -> None:
    panes = [tmux_server.new_window("main", f"w{i}") for i in range(5)]
    wanted = {panes[1], panes[3]}

    async def scenario() -> tuple[set[str], set[str], int]:
        t = LocalTransport()
        base = tmux_base(tmux_server.name, None)
        by_command = await queries.list_panes(t, base, None, only=wanted)
        client = ControlClient(await t.open_process(attach_argv(base, "main", (3, 3), 5)), "main", _ignore)
        await client.wait_ready(10)
        by_control = await queries.list_panes(t, base, client, only=wanted)
        every = await queries.list_panes(t, base, client)
        await client.close()
        await t.close()
        return {p.pane_id for p in by_command}, {p.pane_id for p in by_control}, len(every)

    by_command, by_control, every = asyncio.run(scenario())
    assert by_command == wanted
    assert by_control == wanted
    assert every == 6


async def _ignore(client: ControlClient, note: object) -> None:
    return None


def test_reports_poll_only_their_pane_and_new_windows_are_still_listed(
    tmux_server: TmuxServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    for i in range(8):
        tmux_server.new_window("main", f"idle{i}")
    asked: list[tuple[frozenset[str] | None, int]] = []
    real = watcher.list_panes

    async def recording(t, base, control, only=None):  # type: ignore[no-untyped-def]
        infos = await (real(t, base, control) if only is None else real(t, base, control, only))
        asked.append((frozenset(only) if only is not None else None, len(infos)))
        return infos

    monkeypatch.setattr(watcher, "list_panes", recording)  # as the watcher calls it
    steps = [(0.3, osc7501(f"state={'working' if i % 2 else 'done'}:app=builder")) for i in range(12)]

    async def scenario() -> None:
        sink = Recorder()
        collector = Collector([TmuxTarget(LocalTransport("here"), socket=tmux_server.name)], sink)
        task = asyncio.create_task(collector.run())
        try:
            await _until(lambda: sink.hosts == [("here", True)], what="host reachable")
            await _until(lambda: len({u.key.pane for u in sink.updates}) >= 9, what="the idle panes")
            pane = tmux_server.new_window("main", "r", reporter(*steps))
            await _until(
                lambda: sum(1 for u in sink.updates if u.key.pane == pane and u.state) >= 6,
                what="the reports",
            )
            light = [(only, n) for only, n in asked if only is not None]
            assert light, "no light poll was filtered"
            assert all(only == {pane} and n == 1 for only, n in light), light
            # a window opened while reports flow is listed (its notice asks for a full listing)
            late = tmux_server.new_window("main", "late")
            await _until(lambda: any(u.key.pane == late for u in sink.updates), what="the new window")
            tmux_server.cmd("rename-window", "-t", "main:late", "renamed")
            await _until(
                lambda: any(u.key.pane == late and u.window.endswith(":renamed") for u in sink.updates),
                what="the rename",
            )
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    asyncio.run(scenario())
