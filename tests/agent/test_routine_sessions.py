"""The sessions listed every 25th poll, in case tmux's notice of a change went unsaid,
are listed beside the poll, not in front of its look.

In front of it, a report held during that poll waited a whole round trip more for
nothing (the listing nearly always finds no change): on a 150 ms link the p99 of report
to board went from 316 to 426 ms (`bench/fleet.py`, docs/collector.md). On a real tmux,
the listing is made slow (wrapped: it waits, then asks tmux), and looks for held reports
go on while it is under way; with tmux's session notices ignored, the routine listing
still finds a new session and attaches to it.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from helpers import osc7501
from paneboard_agent.watch import TmuxWatcher, watcher
from support.hang import within
from support.tmux import TmuxServer
from test_collector_inprocess import _until, watching

pytestmark = pytest.mark.tmux

#: how long the wrapped listing waits before asking tmux: a far link's round trip
SLOW = 0.4


def _steady_reports(n: int) -> str:
    """A pane that reports every 50 ms, n times: a poll (and a look) for nearly every one."""
    working, done = (osc7501(f"state={s}:app=builder").hex() for s in ("working", "done"))
    write = f"os.write(1, bytes.fromhex(('{working}', '{done}')[i % 2]))"
    loop = f"[(time.sleep(0.05), {write}) for i in range({n})]"
    return f'python3 -c "import os, time; {loop}; time.sleep(120)"'


def _saying_done_every(seconds: float, n: int) -> str:
    """A pane that says `done` again and again: a report written before the collector is
    attached to its session is not seen, and when the routine listing comes round is the
    loaded machine's to say, so one of these falls after it however late it is."""
    done = osc7501("state=done:app=builder").hex()
    loop = f"[(time.sleep({seconds}), os.write(1, bytes.fromhex('{done}'))) for i in range({n})]"
    return f'python3 -c "import os, time; {loop}; time.sleep(120)"'


def test_looks_for_held_reports_go_on_while_the_routine_listing_is_out(
    tmux_server: TmuxServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    events: list[tuple[float, str]] = []
    real_list, real_look = watcher.list_sessions, TmuxWatcher._look_for

    async def slow_list(*args: Any, **kwargs: Any) -> Any:
        events.append((time.monotonic(), "listing"))
        await asyncio.sleep(SLOW)
        try:
            return await real_list(*args, **kwargs)
        finally:
            events.append((time.monotonic(), "listed"))

    async def look_for(self: TmuxWatcher, poll: Any) -> Any:
        if poll.waiting:
            events.append((time.monotonic(), "look"))
        return await real_look(self, poll)

    monkeypatch.setattr(watcher, "list_sessions", slow_list)
    monkeypatch.setattr(TmuxWatcher, "_look_for", look_for)

    async def scenario() -> None:
        async with watching(tmux_server):
            start = len(events)
            tmux_server.new_window("main", "r", _steady_reports(400))
            await _until(
                lambda: sum(1 for _, e in events[start:] if e == "listing") >= 3,
                timeout=60,
                what="three session listings after the reporter started",
            )

        # the first listings after the start may be tmux's own notice of the new window's
        # session change (those are waited for, rightly); the routine ones are not
        spans, opened = [], None
        for t, what in events[start:]:
            if what == "listing":
                opened = t
            elif what == "listed" and opened is not None:
                spans.append((opened, t))
                opened = None
        looks = [t for t, what in events[start:] if what == "look"]
        overlapped = [s for s in spans if any(s[0] < t < s[1] for t in looks)]
        assert overlapped, (spans, looks[:20])

    asyncio.run(within(scenario(), 120, "the scenario"))


def test_the_routine_listing_finds_a_session_tmux_did_not_announce(
    tmux_server: TmuxServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Only the routine listing can find the new session now: tmux's notices of it are
    # read as a change of panes at most, never of sessions.
    monkeypatch.setattr(watcher, "SESSION_NOTICES", frozenset())

    async def scenario() -> None:
        async with watching(tmux_server) as sink:
            tmux_server.new_window("main", "r", _steady_reports(1200))  # keeps the polls coming
            late = tmux_server.new_session("late", _saying_done_every(0.5, 240))
            await _until(
                lambda: any(u.key.pane == late and u.state == "done" for u in sink.updates),
                timeout=60,
                what="the unannounced session's report",
            )

    asyncio.run(within(scenario(), 120, "the scenario"))


def test_a_fault_in_the_routine_listing_is_logged_and_the_watch_goes_on(
    tmux_server: TmuxServer, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    real_list = watcher.list_sessions
    faults = [0]

    async def listing(*args: Any, **kwargs: Any) -> Any:
        task = asyncio.current_task()
        if task is not None and task.get_coro().__qualname__ == "TmuxWatcher._routine_sessions":
            faults[0] += 1
            raise RuntimeError("a fault of ours")
        return await real_list(*args, **kwargs)

    monkeypatch.setattr(watcher, "list_sessions", listing)

    async def scenario() -> None:
        async with watching(tmux_server) as sink:  # which asserts the watch went on
            pane = tmux_server.new_window("main", "r", _steady_reports(1200))
            await _until(lambda: faults[0] >= 2, timeout=60, what="two routine listings")
            seen = sum(1 for u in sink.updates if u.key.pane == pane)
            await _until(
                lambda: sum(1 for u in sink.updates if u.key.pane == pane) > seen + 5,
                what="reports after the faults",
            )

    with caplog.at_level("ERROR", logger="paneboard.agent"):
        asyncio.run(within(scenario(), 120, "the scenario"))
    said = [r.exc_info for r in caplog.records if "routine listing of sessions failed" in r.getMessage()]
    assert said, [r.getMessage() for r in caplog.records]
    assert said[0] is not None and isinstance(said[0][1], RuntimeError)
