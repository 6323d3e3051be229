"""Screens of the panes pages are looking at: who watches what, and the latest of each.

A page asks for a pane's screen (`GET /api/panes/{id}/screen`, long-polled while the
page is open); that marks the pane watched for `WATCH_FOR` seconds and, the first
time, sends its collector `watch`. The collector then sends `screen` messages as the
pane changes; the newest is kept here, in memory only (a screen is never stored). When
no page has asked for `WATCH_FOR` seconds the collector is told `unwatch`, so an idle
board costs no captures. A collector that reconnects is sent its watches again.

Each `watch` makes the collector capture at once, so one is sent only when what is
watched changes: the pane starts being watched, or the scroll-back it is captured with
(the largest any page asked for within `WATCH_FOR`, rounded up to `SCROLLBACK_STEP`)
goes up or, once the larger asks lapse, down. Pages that ask for different scroll-backs
share the one watch; each gets back the lines it asked for (`screen_json`).

Screens live in the process the collector is connected to; with several server
replicas (PostgreSQL), `replicas.py` relays watches and screens to the others (`remote`).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from paneboard_protocol import wire as pwire
from paneboard_protocol.pane import PaneKey
from paneboard_protocol.reply import reply_end
from paneboard_protocol.rules import Manifest
from paneboard_protocol.rules.loading import load_rules
from paneboard_protocol.wire import Answered, Screen

from ..panes import Core

#: a watch lasts this long after a page last asked
WATCH_FOR = 30.0
SWEEP_EVERY = 5.0
#: the longest a page's request waits for a newer screen
LONG_POLL_MAX = 25.0
#: a watch's scroll-back is a multiple of this, so asks that differ by a few lines
#: (or that climb one line at a time) do not each change the watch
SCROLLBACK_STEP = 100


def scrollback_level(lines: int) -> int:
    """The scroll-back a watch captures for an ask of `lines`: rounded up to a step."""
    return -(-max(0, lines) // SCROLLBACK_STEP) * SCROLLBACK_STEP


@dataclass
class Shown:
    screen: Screen
    received: float  # server wall time
    rev: int = 0  # +1 per screen received for the pane (the page's `since`)


class ScreenHub:
    """The latest screen per watched pane, the watches, and the answers' replies."""

    def __init__(self, core: Core, clock: Callable[[], float] = time.monotonic) -> None:
        self.core = core
        self.clock = clock
        self.latest: dict[int, Shown] = {}
        self.until: dict[int, float] = {}  # pane id -> watched until (monotonic)
        self.scrollback: dict[int, int] = {}  # pane id -> lines of history its watch captures
        self.asks: dict[int, dict[int, float]] = {}  # pane id -> scroll-back level -> asked until
        self.changed: dict[int, asyncio.Event] = {}
        self.replies: dict[str, asyncio.Future[Answered]] = {}  # answer request id -> its reply
        self.stats = {"screens": 0, "watches": 0}
        self.remote: Any = None  # replicas.Replicas on PostgreSQL: panes held by a peer
        self.on_store: list[Callable[[int, Shown], None]] = []
        self.stopping = False

    # --- pages ----------------------------------------------------------------------
    def look(self, pane_id: int, scrollback: int = 0) -> bool:
        """A page looks at this pane: keep (or start) watching it, with `scrollback`
        lines of history (the largest any page asked for lately). False: its collector
        is not connected to this process."""
        target = self.core.collector_of(pane_id)
        if target is None:
            return False
        cid, key = target
        send = self.core.seen_routes.get(cid)
        now = self.clock()
        level = self._ask(pane_id, scrollback_level(scrollback), now)
        first = pane_id not in self.until or level != self.scrollback.get(pane_id)
        self.until[pane_id] = now + WATCH_FOR
        self.scrollback[pane_id] = level
        if send is None:
            if self.remote is None:
                return False
            self.remote.look(pane_id, level, first)  # held by a peer, perhaps
            return True
        if first:
            self.stats["watches"] += 1
            send(pwire.watch(PaneKey(key.host, key.tmux, key.pane), level))
        return True

    def _ask(self, pane_id: int, level: int, now: float) -> int:
        """Note an ask for `level`; the largest level asked for within `WATCH_FOR`."""
        asks = self.asks.setdefault(pane_id, {})
        asks[level] = now + WATCH_FOR
        for old in [lv for lv, until in asks.items() if until <= now]:
            del asks[old]
        return max(asks)

    def online(self, pane_id: int) -> bool:
        target = self.core.collector_of(pane_id)
        if target is not None and target[0] in self.core.seen_routes:
            return True
        return self.remote is not None and bool(self.remote.online(pane_id))

    async def wait(
        self, pane_id: int, after: str | None, timeout: float, since: int | None = None
    ) -> Shown | None:
        """The latest screen, once its fingerprint differs from `after` or it is newer
        than rev `since` (or `timeout` passes)."""
        deadline = self.clock() + min(timeout, LONG_POLL_MAX)
        while True:
            shown = self.latest.get(pane_id)
            if shown is not None and (
                (after is None and since is None)
                or (after is not None and shown.screen.fingerprint != after)
                or (since is not None and shown.rev > since)
            ):
                return shown
            left = deadline - self.clock()
            if left <= 0 or self.stopping:
                return shown
            ev = self.changed.setdefault(pane_id, asyncio.Event())
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(left):  # not wait_for: it can drop a cancel (staleness.py)
                    await ev.wait()

    def stop(self) -> None:
        """The server is stopping: every long poll answers now with what it has, and no
        new one waits (a stop waits for each request in flight; a poll holds 25 s)."""
        self.stopping = True
        for ev in self.changed.values():
            ev.set()

    # --- collectors -----------------------------------------------------------------
    def on_side(self, cid: int, msg: Screen | Answered) -> None:
        if isinstance(msg, Answered):
            fut = self.replies.get(msg.id)
            if fut is not None and not fut.done():
                fut.set_result(msg)
            return
        k = msg.key
        hid = self.core.host_ids.get((cid, k.host))
        pane_id = self.core.pane_ids.get((hid, k.tmux, k.pane)) if hid is not None else None
        if pane_id is None or pane_id not in self.until:
            return  # not a pane of this collector, or nobody watches it any more
        self.store(pane_id, msg)

    def store(self, pane_id: int, screen: Screen) -> None:
        """The pane's newest screen (from its collector, or relayed by a peer replica)."""
        self.stats["screens"] += 1
        old = self.latest.get(pane_id)
        rev = (old.rev if old is not None else 0) + 1
        shown = self.latest[pane_id] = Shown(screen, self.core.clock(), rev)
        ev = self.changed.pop(pane_id, None)
        if ev is not None:
            ev.set()
        for hook in self.on_store:
            hook(pane_id, shown)

    def on_attach(self, cid: int) -> None:
        """A collector (re)connected: it forgot what was watched."""
        send = self.core.seen_routes.get(cid)
        if send is None:
            return
        for pane_id in list(self.until):
            target = self.core.collector_of(pane_id)
            if target is not None and target[0] == cid:
                k = target[1]
                key = PaneKey(k.host, k.tmux, k.pane)
                send(pwire.watch(key, self.scrollback.get(pane_id, 0)))

    # --- time -----------------------------------------------------------------------
    def sweep(self) -> None:
        now = self.clock()
        for pane_id, until in list(self.until.items()):
            if until > now:
                continue
            del self.until[pane_id]
            self.scrollback.pop(pane_id, None)
            self.asks.pop(pane_id, None)
            self.latest.pop(pane_id, None)
            target = self.core.collector_of(pane_id)
            send = self.core.seen_routes.get(target[0]) if target is not None else None
            if target is not None and send is not None:
                k = target[1]
                send(pwire.unwatch(PaneKey(k.host, k.tmux, k.pane)))

    async def run(self) -> None:
        while True:
            await asyncio.sleep(SWEEP_EVERY)
            self.sweep()


@functools.cache
def _manifest(agent: str) -> Manifest | None:
    """The bundled manifest of an agent: where its input prompt is (`reply_end`)."""
    return load_rules(bundled=True).for_agent(agent)


def screen_json(
    shown: Shown | None,
    pane_id: int,
    online: bool,
    scrollback: int | None = None,
    agent: str | None = None,
) -> dict[str, Any]:
    """`GET /api/panes/{id}/screen`'s answer (docs/answers.md): the visible rows and at
    most `scrollback` lines of history above them (all the screen has when None), since
    the watch may capture more for another page; `reply_end`, the row where the agent's
    last reply ends (above its input box, as `agent`'s manifest places it), is where a
    done pane's page opens."""
    if shown is None:
        return {
            "pane_id": pane_id,
            "lines": [],
            "fingerprint": None,
            "answers": [],
            "text": False,
            "input": False,
            "follow_up": False,
            "process": None,
            "online": online,
            "pending": online,
            "error": None if online else "the pane's collector is not connected to this server",
        }
    sc = shown.screen
    lines = list(sc.lines)
    if scrollback is not None:
        lines = lines[len(lines) - min(len(lines), sc.height + scrollback) :]
    return {
        "pane_id": pane_id,
        "lines": lines,
        "fingerprint": sc.fingerprint or None,
        "answers": [{"id": a.id, "label": a.label} for a in sc.answers],
        "text": sc.text,
        "input": sc.input,
        "follow_up": sc.follow_up,
        "process": sc.process,
        "state": sc.state,
        "prompt": sc.prompt,
        "width": sc.width,
        "height": sc.height,
        "cursor": list(sc.cursor),
        "t": sc.t,
        "received": shown.received,
        "rev": shown.rev,
        "online": online,
        "pending": False,
        "error": sc.error,
        "reply_end": reply_end(lines, sc.height, _manifest(agent) if agent else None),
    }
