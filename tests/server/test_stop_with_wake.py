"""The server's waiting loops end when cancelled in the same turn as they are woken.

On Python 3.11 `asyncio.wait_for` drops a cancellation that arrives as the awaited
event is set (python/cpython#86296); the collector's poll loop hung that way (see
`tests/agent/test_watcher_stop.py`). The staleness timer and a screen's long poll wait
on events too: a server stopping as a deadline is scheduled, or a page's request
cancelled as its screen arrives, must not carry on. Each test puts its loop into
exactly that turn.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Coroutine
from typing import Any, cast

from paneboard_protocol.pane import PaneKey
from paneboard_protocol.wire import Screen
from paneboard_server.answers.screens import ScreenHub, Shown
from paneboard_server.panes import Core
from paneboard_server.panes.staleness import Deadlines

SAME = "a" * 64


def _ends_when_cancelled_as_woken(
    start: Callable[[], Coroutine[Any, Any, Any]], wake: Callable[[], None]
) -> bool:
    async def go() -> bool:
        task = asyncio.create_task(start())
        await asyncio.sleep(0.05)  # parked in its wait
        wake()
        task.cancel()  # ... and the stop, in the same turn
        done, _ = await asyncio.wait({task}, timeout=2)
        if not done:
            task.cancel()  # parked again: this second cancel lands
            with contextlib.suppress(asyncio.CancelledError):
                await task
        return bool(done) and task.cancelled()

    return asyncio.run(go())


def test_the_staleness_timer_stops_when_a_stop_comes_with_a_deadline() -> None:
    due: list[list[int]] = []
    deadlines = Deadlines(time.monotonic, due.append)
    # A deadline an hour off, earlier than none: `schedule` sets the timer's event.
    assert _ends_when_cancelled_as_woken(
        deadlines.run, lambda: deadlines.schedule(1, time.monotonic() + 3600)
    )
    assert due == []


def test_a_screens_long_poll_stops_when_cancelled_as_its_screen_changes() -> None:
    hub = ScreenHub(cast(Core, None))  # `wait` reads only the hub's own screens

    def arrive() -> None:
        # A screen the request does not want yet (the same fingerprint), with its event.
        hub.latest[7] = Shown(_screen(SAME), received=0.0, rev=1)
        hub.changed[7].set()

    async def poll() -> Shown | None:
        return await hub.wait(7, after=SAME, timeout=20)

    hub.latest[7] = Shown(_screen(SAME), received=0.0)
    assert _ends_when_cancelled_as_woken(poll, arrive)


def _screen(fingerprint: str) -> Screen:
    return Screen(
        key=PaneKey("h", "t", "%1"),
        t=0.0,
        lines=[],
        width=80,
        height=24,
        cursor=[0, 0],
        fingerprint=fingerprint,
    )
