"""The session manager: one tmux server, its control clients, listings and processes.

One `TmuxWatcher` per tmux server (a host plus a socket). It keeps one read-only
control client per tmux session (pane output arrives only through a client attached
to the pane's session), re-lists panes when tmux says something changed and once a
poll interval anyway, and observes foreground processes with one `ps` per poll for
all panes of that server. Everything about one pane (decoder, classifier, held
reports, when to capture, when to re-evaluate) is decided by its pure
`tracker.PaneTracker`: the watcher feeds it every input through its one runner,
`pane_tasks.PaneTasks`, which carries out what comes back (timers, `capture-pane`, the
sink through the `Pump`).

What it sends to tmux: see `control.READ_COMMANDS`; the one-shot commands are
`tmux -V`, `list-sessions`, `list-panes`, `list-clients`, `capture-pane -p`, `ps`,
and `detach-client` for a stale control client this process itself attached earlier.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from dataclasses import dataclass
from typing import Any

from paneboard_protocol.identity import process_identity

from paneboard_agent.screens import PaneScreens, Side
from paneboard_agent.tmux import (
    CommandError,
    ControlClient,
    ControlClients,
    ListingRefused,
    Lost,
    Notice,
    Notification,
    Observation,
    Output,
    PaneCapture,
    PaneInfo,
    Pause,
    Procs,
    list_panes,
    list_sessions,
    no_server,
    observe,
    one_trip_look,
    parse_version,
    processes,
    session_selected,
    tmux_base,
    with_leaders,
)
from paneboard_agent.transport import FatalTransportError, RefusedTransportError, TransportError
from paneboard_agent.uplink import HealthMeter, PaneKey, PaneUpdate, Reports
from paneboard_agent.watch import late_state
from paneboard_agent.watch.effects import (
    Disconnected,
    Listed,
    Polling,
    Released,
    RulesChanged,
    Seen,
    Skipped,
    Wrote,
)
from paneboard_agent.watch.overlap import LookPipeline
from paneboard_agent.watch.pace import PollPace
from paneboard_agent.watch.pane_tasks import PaneTasks, WatchedPane
from paneboard_agent.watch.targets import Options, TmuxTarget
from paneboard_agent.watch.tracker import PaneTracker

log = logging.getLogger("paneboard.agent")

#: what a look saw: tmux's listing, the processes (None: no usable `ps`), the round trip
_Seen = tuple[list[PaneInfo], dict[int, Any] | None, float | None]


@dataclass(frozen=True, slots=True)
class _Poll:
    """One poll: the panes whose held reports its look serves, and whether it lists all."""

    waiting: set[WatchedPane]
    full: bool


#: notifications after which the session list may have changed
SESSION_NOTICES = frozenset(
    {"sessions-changed", "session-changed", "session-renamed", "client-session-changed", "client-detached"}
)
#: notifications after which panes or windows may have changed
PANE_NOTICES = SESSION_NOTICES | {
    "window-add",
    "window-close",
    "unlinked-window-add",
    "unlinked-window-close",
    "window-renamed",
    "unlinked-window-renamed",
    "layout-change",
    "window-pane-changed",
    "session-window-changed",
}
#: at most one poll of panes and processes per this many seconds, on average (pace.py)
POLL_SPACING = 0.05
#: polls that may run back to back after a quiet spell (pace.py)
POLL_BURST = 2
#: looks (listing and `ps`) under way at once per tmux server (overlap.py). The poll
#: budget already caps how often one starts (20 a second); this caps what one slow host
#: piles up. On a slow link several reports within one round trip are common, and with a
#: lower cap the last waited for the first's answer: a round trip on top of its own look.
LOOKS_AT_ONCE = 4
#: what a wake-up waits for more notifications of the same burst before polling
BURST_PAUSE = 0.005
#: every this many polls the sessions are listed even though tmux announced no change
ROUTINE_SESSIONS = 25
#: seconds between two log lines about refused listings (each burst is one line)
REFUSED_LOG_EVERY = 60.0


class NoTmuxServer(FatalTransportError):
    """No tmux server runs on the socket to watch, and waiting for one was not asked for."""


def _reason(host: str, exc: Exception) -> str:
    """The error's text without a leading `host: ` (the line names the host already)."""
    text = str(exc) or type(exc).__name__
    return text.removeprefix(f"{host}: ")


class TmuxWatcher:
    """Watches one tmux server; survives losing it, gives up only on fatal errors."""

    def __init__(self, target: TmuxTarget, options: Options, pump: Reports, side: Side | None = None) -> None:
        self.target = target
        self.t = target.transport
        self.host = target.transport.host
        self.opt = options
        self.pump = pump
        self.base = tmux_base(target.socket, target.socket_path)
        self.panes: dict[str, WatchedPane] = {}  # by tmux pane id
        self.clients = ControlClients(self.t, self.base, self._on_note, self._client_closed)
        self.reachable: tuple[bool, str | None] = (False, "not connected yet")
        self.fatal: str | None = None
        self.version: tuple[int, int] = (0, 0)
        self._wake = asyncio.Event()
        self._need_sessions = True
        self._need_listing = True  # the next poll lists every pane (a light one: only some)
        self._polls = 0
        self._pace = PollPace(POLL_SPACING, POLL_BURST)
        self._warned_old = False
        self._refused = 0  # listings refused since the last line said so
        self._refused_said = -REFUSED_LOG_EVERY
        # the one capture path of this tmux server: the trackers' and the pages' screens
        self.capture = PaneCapture(self.t, self.base, options.captures_at_once)
        self.tasks = PaneTasks(self.panes, self._changed, self.capture, self.host, options.discarded)
        self._first: late_state.HeldPump | None = None  # pane changes held by the first sync
        self._held: set[WatchedPane] = set()  # panes holding reports until the next poll
        self._looks = LookPipeline(LOOKS_AT_ONCE, self._wake.set)
        self._routine: asyncio.Task[None] | None = None  # the sessions listed beside a poll
        self._full_due = 0.0
        # the classifier sees a name only; "docker exec"-style entries are judged here
        self._classifier_transports = [t for t in options.transports if " " not in t]
        self.screens = PaneScreens(self, side)  # pages' screens, answers; what they send to tmux
        self.health = HealthMeter()  # the link's round trip, last contact, reconnects

    def _changed(self, update: PaneUpdate) -> None:
        """A pane's update goes to the pump, unless the first sync holds it (`_first_sync`)."""
        (self._first or self.pump).changed(update)

    # --- lifecycle ---------------------------------------------------------------

    async def run(self) -> None:
        attempt = 0
        while True:
            try:
                await self._connected()
            except FatalTransportError as exc:
                self.fatal = str(exc)
                log.error("%s", exc)
                self._set_status(False, str(exc))
                await self._teardown()
                return
            except TransportError as exc:
                self.health.lost()
                if isinstance(exc, RefusedTransportError):
                    # once per different refusal: the back-off tries again, and a fixed
                    # known_hosts (read afresh at each connect) brings the host back
                    if self.reachable[1] != str(exc):
                        log.error("%s; trying again with back-off, no restart needed once fixed", exc)
                elif self.reachable[0] or attempt == 0:
                    if self._ever_connected:
                        log.warning("%s: lost (%s); reconnecting", self.host, _reason(self.host, exc))
                    else:
                        log.warning("%s: cannot connect (%s); retrying", self.host, _reason(self.host, exc))
                self._set_status(False, str(exc))
            except asyncio.CancelledError:
                await self._teardown()
                raise
            await self._teardown()
            if self._connected_ok:
                attempt = 0
            delay = min(self.opt.backoff_max, self.opt.backoff_min * 2**attempt)
            attempt += 1
            await asyncio.sleep(delay * random.uniform(0.5, 1.0))

    _connected_ok = False
    _ever_connected = False
    _server_up: bool | None = None  # None: not asked yet

    async def _connected(self) -> None:
        self._connected_ok = False
        await self.t.connect()
        res = await self.t.run([*self.base, "-V"])
        if res.returncode != 0:
            raise TransportError(
                f"{self.host}: tmux not runnable: {res.stderr.decode(errors='replace').strip()}"
            )
        self.version = parse_version(res.stdout.decode(errors="replace"))
        if self.version < (3, 2) and not self._warned_old:
            self._warned_old = True
            log.warning(
                "%s: tmux %d.%d lacks control-client flags (read-only, pause-after): attaching with -r only",
                self.host,
                *self.version,
            )
        await self.clients.detach_stale()
        if not self._ever_connected:
            await self._first_server_check()
        again = self._ever_connected
        if again:
            self.health.reconnected()
        self._connected_ok = self._ever_connected = True
        log.info(
            "%s: connected%s (tmux %d.%d, tmux server %s)",
            self.host,
            " again" if again else "",
            *self.version,
            self.target.label,
        )
        self._need_sessions = True
        since, first = time.time(), True
        while True:
            self._wake.clear()  # before the sync: a wake-up during it means "again"
            self._pace.spend(time.monotonic())
            if first:  # ... and then the state stored before we came (late_state.py)
                first = False
                await self._first_sync(since)
                # Reachable once its panes are known as they are: the sink's first view
                # of the host is whole, never a pane without the state it still shows.
                self._set_status(True, None)
            else:
                await self._poll()
            if not self._wake.is_set():
                await _wait_at_most(self._wake, self.opt.poll_interval)
            self._looks.check()  # a look that failed woke us: the link is down
            # Polls are capped at ~20/s under heavy reporting, and a burst (a new window
            # brings several notifications) gets a moment to become one re-list; but a
            # lone report after a quiet spell goes at once (pace.py), since a held report
            # reaches nobody until this poll has run.
            await asyncio.sleep(max(BURST_PAUSE, self._pace.wait(time.monotonic())))

    async def _first_sync(self, since: float) -> None:
        """The first sync of a connection: list panes and processes with their changes
        held, feed the panes the state they stored (`late_state.restore`), wait for the
        screens the listing asked for (`late_state.first_screens`), then let it all go."""
        held = self._first = late_state.HeldPump(self.pump)
        try:
            await self._sync()
            for pane, restored in await late_state.restore(self.t, self.base, self.panes, since):
                self.tasks.feed(pane, restored)
            await late_state.first_screens(self.panes.values())
        finally:
            self._first = None
            held.release()

    async def _first_server_check(self) -> None:
        """No tmux server to watch at start is a mistake to report, not to wait out
        (a wrong socket name would otherwise watch nothing forever), unless asked to
        wait for one. Later, a tmux server that goes away is waited for as always."""
        missing = await no_server(self.t, self.base)
        if missing is None:
            return
        if not self.opt.wait_for_tmux:
            raise NoTmuxServer(
                f"{self.host}: no tmux server to watch ({missing}); start tmux first, "
                "or pass --wait-for-tmux to wait for one"
            )
        log.info("%s: no tmux server yet (%s); waiting for one", self.host, missing)

    async def _teardown(self) -> None:
        await self._looks.cancel()
        await self._stop_routine()
        self._release_held(set(self._held), everything=True)  # no look is coming: as they are
        await asyncio.gather(*(self.clients.detach(name, forget=False) for name in self.clients))
        for pane in self.panes.values():
            pane.cancel()
            self.tasks.feed(pane, Disconnected())

    def _set_status(self, reachable: bool, error: str | None) -> None:
        if self.reachable != (reachable, error):
            self.reachable = (reachable, error)
            self._report_health()  # first: the status's op carries the health of its moment
            self.pump.host(self.host, reachable, time.time(), error)

    # --- control clients ---------------------------------------------------------

    def _client_closed(self) -> None:
        """A control client ended (its session closed, or the link broke): re-list."""
        self._need_sessions = True
        self._wake.set()

    async def _on_note(self, client: ControlClient, note: Notification) -> None:
        if isinstance(note, Output):
            pane = self.panes.get(note.pane)
            if pane is None:
                # output from a pane not listed yet (a window just opened): keep its bytes
                pane = self._new_pane(note.pane, client.session)
                self._need_listing = True
                self._wake.set()
            elif pane.tracker.session != client.session:
                return  # a window linked into two sessions: one owner decodes it
            if not note.data:
                return
            self.screens.output(note.pane)
            if self.tasks.feed(pane, Wrote(time.time(), note.data)).look:
                self._held.add(pane)  # one poll, started at once, serves every held pane
                self._wake.set()
        elif isinstance(note, Pause):
            log.info(
                "%s: tmux paused %s (we fell %ds behind); continuing",
                self.host,
                note.pane,
                self.opt.pause_after,
            )
            pane = self.panes.get(note.pane)
            await client.send_nowait(f"refresh-client -A '{note.pane}:continue'")
            if pane is not None and pane.tracker.session == client.session:
                self.tasks.feed(pane, Skipped(time.time()))
        elif isinstance(note, Lost):
            pane = self.panes.get(note.pane) if note.pane else None
            if pane is not None:
                self.tasks.feed(pane, Skipped(time.time()))
        elif isinstance(note, Notice):
            if note.name in SESSION_NOTICES:
                self._need_sessions = True
            if note.name in PANE_NOTICES:
                self._need_listing = True  # a light poll would not see the new layout
                self._wake.set()

    def _release_held(self, waiting: set[WatchedPane], everything: bool = False) -> None:
        """The poll these panes waited for has run: their reports go to the classifier.

        A pane whose output brought a report while the poll ran still holds that one
        (the poll may have looked before its writer started): it waits for the next poll.
        """
        self._held -= waiting
        now = time.time()
        for pane in waiting:
            if self.panes.get(pane.tracker.key.pane) is pane:
                if self.tasks.feed(pane, Released(now, everything)).look:
                    self._held.add(pane)
                    self._wake.set()
            else:
                pane.tracker.drop_held()

    # --- listing -----------------------------------------------------------------

    def _new_pane(self, pane_id: str, session: str) -> WatchedPane:
        pane = WatchedPane(
            PaneTracker(
                PaneKey(self.host, self.target.label, pane_id),
                session,
                self.opt.rules,
                self._classifier_transports,
                self.opt.settle,
                self.opt.reread,
                explain=self.opt.discarded is not None,
                hold_reports=self.opt.hold_reports,
            )
        )
        self.panes[pane_id] = pane
        return pane

    async def _sync(self) -> None:
        """One poll, from start to applied (the connection's first, before any other)."""
        poll = await self._begin_poll(self._sessions_due())
        self._end_poll(poll, await self._look_for(poll))

    async def _poll(self) -> None:
        """One poll, its look overlapping the one still under way (overlap.py): the
        reports held since that one started need not wait for it to come back."""
        sessions = self._sessions_due()
        if sessions:
            await self._stop_routine()  # this poll's own listing supersedes it
            await self._looks.drain()  # control clients come and go: not under a look
        else:
            await self._looks.room()
        poll = await self._begin_poll(sessions)
        if poll.full or poll.waiting:
            self._looks.start(self._look_for(poll), lambda got: self._end_poll(poll, got))
        else:
            self._end_poll(poll, None)
        if not sessions and self._polls % ROUTINE_SESSIONS == 0:
            self._start_routine()

    async def _begin_poll(self, sessions: bool) -> _Poll:
        """A poll starts. A full poll (every poll interval, when sessions changed, or when
        tmux announced a change of windows or panes) lists every pane and runs `ps` for
        every pane. A light one (woken early by held reports) asks tmux only about the
        panes holding reports (`list-panes -f`, tmux 3.2+) and runs `ps` only for them:
        many panes reporting at once cost one short listing and one `ps` on the watched
        host, and the collector's share of a poll no longer grows with every pane the
        server has (it was a listing of all of them, up to 20 times a second). Over SSH
        the listing and its `ps` are one command, one round trip (`_look`).
        """
        self._polls += 1
        # Only the reports held before this poll starts are served by its look: one that
        # arrives while it runs waits for the next (see PaneTracker.output); one a look
        # already under way serves is not this poll's.
        waiting = {pane for pane in self._held if pane.tracker.unserved()}
        for pane in waiting:
            self.tasks.feed(pane, Polling())
        now_m = time.monotonic()
        full = (
            self._need_sessions
            or self._need_listing
            or now_m >= self._full_due
            or not self._light_ok(waiting)
        )
        if full:
            self._full_due = now_m + self.opt.poll_interval
            self._need_listing = False
        if sessions:  # decided before any look under way was waited for
            self._need_sessions = False
            await self._sync_sessions()
        return _Poll(waiting, full)

    def _sessions_due(self) -> bool:
        """The next poll lists the sessions before its look: when tmux said they changed,
        or when no control client is attached (none would say)."""
        return self._need_sessions or not self.clients

    def _start_routine(self) -> None:
        """List the sessions although tmux announced no change, in case one went unsaid.

        Beside the poll, not before it: a report held meanwhile reaches nobody until its
        look comes back, and a listing in front of every 25th look put a whole round trip
        on each report held then: on a slow link, the far tail of report → board
        (bench/fleet.py).
        It only reads; a difference makes the next poll list and attach as tmux's own
        notice would."""
        if self._routine is None or self._routine.done():
            self._routine = asyncio.create_task(self._routine_sessions())
            self._routine.add_done_callback(self._routine_done)

    def _routine_done(self, task: asyncio.Task[None]) -> None:
        """A fault of ours in the listing is said, not lost with a task nobody awaits (a
        broken link is not one: the next poll's own listing meets it)."""
        if not task.cancelled() and (exc := task.exception()) is not None:
            log.error("%s: the routine listing of sessions failed", self.host, exc_info=exc)

    async def _routine_sessions(self) -> None:
        try:
            sessions = await list_sessions(self.t, self.base, self.clients.any())
        except TransportError:
            sessions = None  # the poll's own listing will say what is wrong
        wanted = None
        if sessions is not None:
            wanted = {n for _, n in sessions if session_selected(n, self.target.include, self.target.exclude)}
        if wanted is None or any(self.clients.may_attach(n) for n in wanted) or set(self.clients) - wanted:
            self._need_sessions = True
            self._wake.set()

    async def _stop_routine(self) -> None:
        task, self._routine = self._routine, None
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _look_for(self, poll: _Poll) -> _Seen | None:
        """The poll's look, or None: nothing to look at, or a listing refused as not
        tmux's own (then nothing of it is applied: no pane moves or is made gone)."""
        try:
            if poll.full:
                return await self._look(None)
            if poll.waiting:
                return await self._look({p.tracker.key.pane for p in poll.waiting})
        except ListingRefused as exc:
            self._listing_refused(exc)
        return None

    def _listing_refused(self, exc: ListingRefused) -> None:
        """One warning per burst: a program that breaks every listing must not fill the log."""
        self._refused += 1
        now = time.monotonic()
        if now - self._refused_said >= REFUSED_LOG_EVERY:
            log.warning(
                "%s: refused %d pane listing(s) not written by tmux as asked (%s); panes kept as they were",
                self.host,
                self._refused,
                exc,
            )
            self._refused, self._refused_said = 0, now

    def _end_poll(self, poll: _Poll, seen: _Seen | None) -> None:
        """The poll's look came back: apply it, then let its held reports go."""
        rtt = None
        if seen is not None:
            infos, procs, rtt = seen
            if poll.full:
                self._apply(infos, procs, time.time(), {i.pane_id for i in infos})
            else:
                ids = {p.tracker.key.pane for p in poll.waiting}
                self._apply(infos, procs, time.time(), ids, partial=True)
        self._release_held(poll.waiting)
        self.health.answered(time.time(), rtt)
        self._report_health()

    def _report_health(self) -> None:
        due = self.health.due(time.time())
        if due is not None:
            self.pump.health(self.host, due)

    def _light_ok(self, waiting: set[WatchedPane]) -> bool:
        """A light poll can serve these panes: tmux filters listings (3.2+) and every
        one of them was listed before (a new pane needs the full listing)."""
        return self.version >= (3, 2) and all(p.tracker.info is not None for p in waiting)

    async def _sync_sessions(self) -> None:
        sessions = await list_sessions(self.t, self.base, self.clients.any())
        self._server_running(sessions is not None)
        sessions = sessions or []
        wanted = [n for _, n in sessions if session_selected(n, self.target.include, self.target.exclude)]
        for name in self.clients:
            if name not in wanted:
                await self.clients.detach(name)
        todo = [name for name in wanted if self.clients.may_attach(name)]
        if todo:  # a client whose link broke unseen may linger: detach it first
            await self.clients.detach_stale()
        # in parallel: over SSH each attach is a channel and a login shell start, slow on a busy host
        results = await asyncio.gather(
            *(self.clients.attach(n, self.version, self.opt.pause_after) for n in todo),
            return_exceptions=True,
        )
        for r in results:
            if isinstance(r, BaseException):
                raise r

    def _server_running(self, running: bool) -> None:
        """One line when the tmux server goes away or (back) up while the host stays."""
        if running == self._server_up:
            return
        if self._server_up is not None or not running:
            if running:
                log.info("%s: tmux server %s is up", self.host, self.target.label)
            else:
                log.warning("%s: tmux server %s is gone; waiting for it", self.host, self.target.label)
        self._server_up = running

    async def _look(self, only: set[str] | None) -> _Seen:
        """The panes (every one, or those `only` names) and then their processes: `ps` is
        the later word (see panes._observe_leader). With the round trip a full poll's
        look took through the link (health.py), None for a light one.

        Over SSH one command does both (look.py): one round trip, not two in a row. It
        asks `ps` about the panes already known; only a pane new or respawned since then
        costs a second `ps`. Locally, or before any pane is known, the control client
        lists and `ps` follows."""
        sel = self._selection(only) if self.t.round_trips else None
        if sel is None:
            t0 = time.monotonic()
            infos = await self._list_panes(only)
            rtt = time.monotonic() - t0 if only is None else None  # through the link and back
            return infos, (await self._ps(infos) if infos else {}), rtt
        control = self.clients.any()
        ping = asyncio.create_task(_round_trip(control)) if only is None and control is not None else None
        try:
            t0 = time.monotonic()
            got = await one_trip_look(self.t, self.base, only, *sel)
            took = time.monotonic() - t0
            rtt = await ping if ping is not None else (took if only is None else None)
        finally:
            if ping is not None and not ping.done():
                ping.cancel()
        if got is None:  # the reply was cut before `ps`: ask the two questions apart
            infos = await self._list_panes(only)
            return infos, (await self._ps(infos) if infos else {}), rtt
        infos = self._selected(got.infos)
        if not infos:
            return [], {}, rtt
        if got.procs is not None and not got.covers(infos):
            return infos, await self._ps(infos), rtt  # a new or respawned pane: `ps` again, after
        return infos, await with_leaders(self.t, got.procs), rtt

    def _selection(self, only: set[str] | None) -> tuple[set[int], set[str]] | None:
        """What a look's `ps` is asked about: the known panes (their pid and tty are fixed
        for a pane's life), as `_ps` asks after a listing; None when no pane is known yet."""
        known = [
            p.tracker.info
            for pane_id, p in self.panes.items()
            if p.tracker.info is not None and (only is None or pane_id in only)
        ]
        return self._ps_targets(known) if known else None

    def _ps_targets(self, infos: list[PaneInfo]) -> tuple[set[int], set[str]]:
        """The pids and ttys `ps` is asked about for these panes: each pane's process and
        terminal, and the foreground leader seen last time (its arguments)."""
        pids = {p.pane_pid for p in infos}
        ttys = {p.tty for p in infos if not p.dead}
        for info in infos:
            pane = self.panes.get(info.pane_id)
            obs = pane.tracker.obs if pane is not None else None
            if obs is not None and obs.pid:
                pids.add(obs.pid)
        return pids, ttys

    def _selected(self, infos: list[PaneInfo]) -> list[PaneInfo]:
        return [p for p in infos if session_selected(p.session, self.target.include, self.target.exclude)]

    async def _list_panes(self, only: set[str] | None = None) -> list[PaneInfo]:
        return self._selected(await list_panes(self.t, self.base, self.clients.any(), only))

    async def _ps(self, infos: list[PaneInfo]) -> dict[int, Any] | None:
        return await processes(self.t, *self._ps_targets(infos))

    def _apply(
        self,
        infos: list[PaneInfo],
        procs: dict[int, Any] | None,
        now: float,
        look: set[str],
        partial: bool = False,
    ) -> None:
        """Update panes from a listing; observe processes of the panes in `look`.
        `partial`: a listing of some panes only, so a pane missing from it is not gone."""
        seen: set[str] = set()
        for info in infos:
            pane = self.panes.get(info.pane_id)
            known = pane.tracker.info if pane is not None else None
            if pane is not None and known is not None and known.pane_pid != info.pane_pid:
                self._gone(pane, now)  # the tmux server restarted and reused the id
                pane = None
            if pane is None:
                pane = self._new_pane(info.pane_id, info.session)
            seen.add(info.pane_id)
            obs = None
            if info.pane_id in look and _tells(procs, info, pane.tracker.obs):
                obs = observe(
                    info, procs, self.opt.transports, self.opt.shells, pane.tracker.obs, self._agent_of
                )
            pane.unlisted_polls = 0
            self.tasks.feed(pane, Listed(now, info, obs))
        if partial:
            return
        for pane_id, pane in list(self.panes.items()):
            if pane_id in seen:
                continue
            if pane.tracker.info is not None:
                self._gone(pane, now)
            else:
                pane.unlisted_polls += 1
                if pane.unlisted_polls > 3:  # output of a pane we never saw listed
                    pane.cancel()
                    del self.panes[pane_id]

    def _agent_of(self, name: str) -> str | None:
        """RI-1's manifest match of a process name (for a wrapper's group members)."""
        rules = self.opt.rules
        ident = process_identity(name)
        if rules is None or ident is None or ident in self._classifier_transports:
            return None
        manifest = rules.for_process(ident)
        return manifest.agent if manifest is not None else None

    def _gone(self, pane: WatchedPane, now: float) -> None:
        pane.cancel()
        self.panes.pop(pane.tracker.key.pane, None)
        (self._first or self.pump).gone(pane.tracker.key, now)

    # --- from outside ----------------------------------------------------------------

    def mark_seen(self, pane_id: str, t: float) -> bool:
        """The user looked at this pane (the server says so): `done` becomes `idle`."""
        pane = self.panes.get(pane_id)
        if pane is None:
            return False
        self.tasks.feed(pane, Seen(max(t, time.time()) if t else time.time()))
        return True

    def set_rules(self, options: Options) -> None:
        """Reloaded screen rules (in `options`) for every pane, screens re-read where they apply."""
        self.opt = options
        now = time.time()
        for pane in list(self.panes.values()):
            self.tasks.feed(pane, RulesChanged(now, options.rules))

    # --- snapshot ------------------------------------------------------------------

    def snapshot(self) -> list[PaneUpdate]:
        return [p.tracker.last_update for p in self.panes.values() if p.tracker.last_update is not None]


def _tells(procs: dict[int, Any] | None, info: PaneInfo, previous: Observation | None) -> bool:
    """Whether `procs` may judge this pane's processes; when not (a walk cut short on
    the host, procfs.py), the pane keeps its last observation, as a pane not looked at."""
    if info.dead or not isinstance(procs, Procs):
        return True
    return procs.tells(info.pane_pid, previous.pid if previous is not None else None)


async def _round_trip(control: ControlClient) -> float | None:
    """Seconds a read command took through the control client: the link's round trip
    plus tmux answering from memory (health.py), or None when it failed. Sent beside a
    full poll's look, which also starts processes on the host and so is no measure."""
    t0 = time.monotonic()
    try:
        await control.command("display-message -p ''")
    except (TransportError, CommandError):
        return None
    return time.monotonic() - t0


async def _wait_at_most(event: asyncio.Event, seconds: float) -> None:
    """Until `event` is set, or `seconds` have passed.

    Not `asyncio.wait_for`: on Python 3.11 it returns normally when the task is
    cancelled in the same turn of the loop as the event is set (it sees the inner wait
    done and drops the cancellation; python/cpython#86296, fixed in 3.12), and this
    loop then polled on for ever: a collector asked to stop (a test's teardown, a
    signal) that never did. `asyncio.timeout` lets the cancellation through."""
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(seconds):
            await event.wait()
