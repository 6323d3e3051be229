"""The collector: every pane of every watched tmux server, decoded and classified.

One `TmuxWatcher` per tmux server (a host plus a socket). It keeps one read-only
control client per tmux session (pane output arrives only through a client attached
to the pane's session), re-lists panes when tmux says something changed and once a
poll interval anyway, and observes foreground processes with one `ps` per poll for
all panes of that server. Each pane owns a `Decoder` and a `PaneClassifier`; what
the classifier concludes goes to the sink through the `Pump`.

What it sends to tmux: see `control.READ_COMMANDS`; the one-shot commands are
`tmux -V`, `list-sessions`, `list-panes`, `list-clients`, `capture-pane -p`, `ps`,
and `detach-client` for a stale control client this process itself attached earlier.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from paneboard_protocol.classifier import PaneClassifier
from paneboard_protocol.decoder import Decoder
from paneboard_protocol.events import AgentReport, ClearReport, StatusReport
from paneboard_protocol.pane import CLASSIFICATION_FIELDS, SIGNATURE_FIELDS

from paneboard_agent.control import (
    CommandError,
    ControlClient,
    Lost,
    Notice,
    Notification,
    Output,
    Pause,
    attach_argv,
    parse_version,
    tmux_base,
)
from paneboard_agent.panes import (
    DEFAULT_SHELLS,
    DEFAULT_TRANSPORTS,
    PANE_FORMAT,
    SESSION_FORMAT,
    Observation,
    PaneInfo,
    observe,
    parse_panes,
    parse_ps,
    parse_sessions,
    ps_argv,
    session_selected,
)
from paneboard_agent.pump import Pump
from paneboard_agent.sink import PaneKey, PaneUpdate, Sink
from paneboard_agent.transport import FatalTransportError, Transport, TransportError

#: What a pane update copies from the classification (records are copied as a tuple).
_FROM_CLASSIFICATION = tuple(k for k in CLASSIFICATION_FIELDS if k != "records")

log = logging.getLogger("paneboard.agent")

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
#: events that are attributed to the foreground process (see TmuxWatcher._hold)
_REPORTS = (StatusReport, ClearReport, AgentReport)
#: an observation younger than this (seconds) is taken as current for a report
FRESH_OBSERVATION = 0.1
#: at most one poll of panes and processes per this many seconds
POLL_SPACING = 0.05
#: what a wake-up waits for more notifications of the same burst before polling
BURST_PAUSE = 0.005
#: events held per pane while its process is looked at; more are fed unheld
MAX_HELD = 10000
_NO_SERVER = (b"no server running", b"error connecting to", b"no sessions")


@dataclass(frozen=True)
class Options:
    poll_interval: float = 1.0
    settle: float = 0.15  # quiet time before a pane's screen is captured
    pause_after: int = 5  # seconds tmux may buffer a pane for us before pausing it
    transports: Sequence[str] = DEFAULT_TRANSPORTS
    shells: frozenset[str] = DEFAULT_SHELLS
    rules: Any = None  # a RuleSet for every pane's classifier
    backoff_min: float = 1.0
    backoff_max: float = 60.0
    captures_at_once: int = 4  # concurrent capture-pane per host (each is a channel over SSH)


@dataclass
class TmuxTarget:
    """One tmux server to watch, and through which transport."""

    transport: Transport
    socket: str | None = None  # tmux -L
    socket_path: str | None = None  # tmux -S
    include: Sequence[str] = ()
    exclude: Sequence[str] = ()

    @property
    def label(self) -> str:
        return self.socket_path or self.socket or "default"


@dataclass(eq=False)
class _Pane:
    key: PaneKey
    session: str
    decoder: Any
    classifier: Any
    info: PaneInfo | None = None
    obs: Observation | None = None
    last_sig: Any = None
    last_update: PaneUpdate | None = None
    last_output: float = 0.0
    unlisted_polls: int = 0
    recapture: bool = True
    settle_handle: asyncio.TimerHandle | None = None
    deadline_handle: asyncio.TimerHandle | None = None
    deadline_at: float | None = None
    capture_task: asyncio.Task[None] | None = None
    capture_again: bool = False
    observed_at: float = 0.0  # monotonic time of the last process observation
    wants_screen: bool = False  # the classifier's wants_screen, cached after each change
    held: list[Any] | None = None  # events waiting for a fresh observation (see _hold)

    def cancel_timers(self) -> None:
        for h in (self.settle_handle, self.deadline_handle):
            if h is not None:
                h.cancel()
        self.settle_handle = self.deadline_handle = None
        self.deadline_at = None


@dataclass
class _Client:
    control: ControlClient
    pid: int | None = None
    watcher: asyncio.Task[None] | None = field(default=None, repr=False)


class TmuxWatcher:
    """Watches one tmux server; survives losing it, gives up only on fatal errors."""

    def __init__(self, target: TmuxTarget, options: Options, pump: Pump) -> None:
        self.target = target
        self.t = target.transport
        self.host = target.transport.host
        self.opt = options
        self.pump = pump
        self.base = tmux_base(target.socket, target.socket_path)
        self.panes: dict[str, _Pane] = {}
        self.clients: dict[str, _Client] = {}
        self.reachable: tuple[bool, str | None] = (False, "not connected yet")
        self.fatal: str | None = None
        self.version: tuple[int, int] = (0, 0)
        self._our_pids: set[int] = set()
        self._wake = asyncio.Event()
        self._need_sessions = True
        self._polls = 0
        self._warned_old = False
        self._capture_sem = asyncio.Semaphore(options.captures_at_once)
        self._attach_failures: dict[str, float] = {}
        self._held: set[_Pane] = set()
        self._full_due = 0.0
        # the classifier sees a name only; "docker exec"-style entries are judged here
        self._classifier_transports = [t for t in options.transports if " " not in t]

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
                if self.reachable[0] or attempt == 0:
                    log.warning("%s: lost (%s); reconnecting", self.host, exc)
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
        await self._detach_stale()
        self._connected_ok = True
        self._set_status(True, None)
        self._need_sessions = True
        while True:
            self._wake.clear()  # before the sync: a wake-up during it means "again"
            started = time.monotonic()
            await self._sync()
            if not self._wake.is_set():
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), self.opt.poll_interval)
            # Polls are capped at ~20/s under heavy reporting, and a burst (a new window
            # brings several notifications) gets a moment to become one re-list; but a
            # lone report after a quiet spell is not made to wait out the whole cap,
            # since a held report reaches nobody until this poll has run.
            await asyncio.sleep(max(BURST_PAUSE, POLL_SPACING - (time.monotonic() - started)))

    async def _teardown(self) -> None:
        self._release_held()  # no observation is coming: the classifier gets them as they are
        await asyncio.gather(*(self._detach(name, forget=False) for name in list(self.clients)))
        for pane in self.panes.values():
            pane.cancel_timers()
            if pane.capture_task and not pane.capture_task.done():
                pane.capture_task.cancel()
            pane.decoder = Decoder()  # bytes were missed: never join two halves of a sequence
            pane.recapture = True

    def _set_status(self, reachable: bool, error: str | None) -> None:
        if self.reachable != (reachable, error):
            self.reachable = (reachable, error)
            self.pump.host(self.host, reachable, time.time(), error)

    # --- control clients ---------------------------------------------------------

    async def _detach_stale(self) -> None:
        """Detach control clients this process attached before a lost connection."""
        if not self._our_pids:
            return
        res = await self.t.run(
            [*self.base, "list-clients", "-F", "#{client_pid}\t#{client_name}\t#{client_control_mode}"]
        )
        for line in res.stdout.decode(errors="replace").splitlines():
            parts = line.split("\t")
            if len(parts) == 3 and parts[0].isdigit() and int(parts[0]) in self._our_pids and parts[2] == "1":
                log.info("%s: detaching our stale control client %s", self.host, parts[1])
                await self.t.run([*self.base, "detach-client", "-t", parts[1]])
        self._our_pids.clear()

    async def _attach(self, session: str) -> None:
        argv = attach_argv(self.base, session, self.version, self.opt.pause_after)
        chan = await self.t.open_process(argv)
        control = ControlClient(chan, session, self._on_note)
        client = _Client(control)
        self.clients[session] = client
        try:
            block = await control.command("display-message -p '#{client_pid}'", timeout=10)
            text = b"".join(block.lines).decode(errors="replace").strip()
            if text.isdigit():
                client.pid = int(text)
                self._our_pids.add(client.pid)
        except (TransportError, CommandError) as exc:
            err = await chan.stderr_text()
            log.warning("%s: cannot attach to session %r: %s", self.host, session, err or exc)
            self._attach_failures[session] = time.monotonic()
            await self._detach(session)
            return
        client.watcher = asyncio.create_task(self._watch_client(session, client))

    async def _watch_client(self, session: str, client: _Client) -> None:
        await client.control.closed.wait()
        if self.clients.get(session) is client:
            del self.clients[session]
            if client.pid is not None and client.control.exit_reason is not None:
                # tmux said %exit: that client is gone. Without it (the link broke) the
                # remote client may linger, and is detached after reconnecting.
                self._our_pids.discard(client.pid)
            self._need_sessions = True
            self._wake.set()

    async def _detach(self, session: str, forget: bool = True) -> None:
        client = self.clients.pop(session, None)
        if client is None:
            return
        if client.watcher is not None:
            client.watcher.cancel()
        await client.control.close()
        if client.pid is not None and forget:
            self._our_pids.discard(client.pid)

    def _any_client(self) -> ControlClient | None:
        for c in self.clients.values():
            if not c.control.closed.is_set() and c.pid is not None:
                return c.control
        return None

    async def _on_note(self, client: ControlClient, note: Notification) -> None:
        if isinstance(note, Output):
            pane = self.panes.get(note.pane)
            if pane is None:
                # output from a pane not listed yet (a window just opened): keep its bytes
                pane = self._new_pane(note.pane, client.session)
                self._wake.set()
            elif pane.session != client.session:
                return  # a window linked into two sessions: one owner decodes it
            if not note.data:
                return
            now = time.time()
            events = pane.decoder.feed(note.data)
            if events:
                if pane.held is not None and len(pane.held) < MAX_HELD:
                    pane.held += events
                elif any(isinstance(e, _REPORTS) for e in events) and (
                    time.monotonic() - pane.observed_at > FRESH_OBSERVATION
                ):
                    self._hold(pane, events)
                else:
                    pane.classifier.feed(now, events)
                    self._evaluate(pane, now)
            if pane.wants_screen:
                self._settle(pane, now)
        elif isinstance(note, Pause):
            log.info(
                "%s: tmux paused %s (we fell %ds behind); continuing",
                self.host,
                note.pane,
                self.opt.pause_after,
            )
            pane = self.panes.get(note.pane)
            await client.send_nowait(f"refresh-client -A '{note.pane}:continue'")
            if pane is not None and pane.session == client.session:
                self._skipped(pane)
        elif isinstance(note, Lost):
            pane = self.panes.get(note.pane) if note.pane else None
            if pane is not None:
                self._skipped(pane)
        elif isinstance(note, Notice):
            if note.name in SESSION_NOTICES:
                self._need_sessions = True
            if note.name in PANE_NOTICES:
                self._wake.set()

    def _hold(self, pane: _Pane, events: list[Any]) -> None:
        """Look at the pane's foreground process before handing the classifier a report.

        A report belongs to the process in front when it was written (RI-2, RI-5); the
        poll lags by up to a second, so a program that reports right after starting
        would otherwise have its report filed under the shell and dropped as soon as
        the poll noticed the program. The held events wait for the next poll, which is
        started at once: one `list-panes` and one `ps` serve every pane held meanwhile,
        however many panes report.
        """
        pane.held = list(events)
        self._held.add(pane)
        self._wake.set()

    def _release_held(self) -> None:
        held, self._held = self._held, set()
        now = time.time()
        for pane in held:
            events, pane.held = pane.held or [], None
            if self.panes.get(pane.key.pane) is pane and events:
                pane.classifier.feed(now, events)
                self._evaluate(pane, now)

    def _skipped(self, pane: _Pane) -> None:
        """Output of this pane was lost (paused, or a line too long): resync from the screen."""
        pane.decoder = Decoder()
        if pane.classifier.wants_screen:
            self._settle(pane, time.time())

    # --- listing -----------------------------------------------------------------

    def _new_pane(self, pane_id: str, session: str) -> _Pane:
        pane = _Pane(
            key=PaneKey(self.host, self.target.label, pane_id),
            session=session,
            decoder=Decoder(),
            classifier=PaneClassifier(self.opt.rules, transports=self._classifier_transports),
        )
        self.panes[pane_id] = pane
        return pane

    async def _sync(self) -> None:
        """One poll. A full poll (every poll interval, or when sessions changed) runs
        `ps` for every pane; a light one (woken early by reports or notifications)
        lists panes (cheap: tmux answers from memory) and runs `ps` only for panes that
        are new or whose foreground command tmux now names differently, so that many
        panes reporting at once never turn into many `ps` runs on the watched host.
        """
        self._polls += 1
        now_m = time.monotonic()
        full = self._need_sessions or now_m >= self._full_due
        if full:
            self._full_due = now_m + self.opt.poll_interval
        if self._need_sessions or not self.clients or self._polls % 25 == 0:
            self._need_sessions = False
            await self._sync_sessions()
        infos = await self._list_panes()
        if full:
            look = infos
        else:
            look = []
            for info in infos:
                pane = self.panes.get(info.pane_id)
                if (
                    pane is None
                    or pane.info is None
                    or pane.info.command != info.command
                    or pane.info.pane_pid != info.pane_pid
                ):
                    look.append(info)
        procs = await self._ps(look) if look else {}
        self._apply(infos, procs, time.time(), {i.pane_id for i in look})
        self._release_held()

    async def _sync_sessions(self) -> None:
        sessions: list[tuple[str, str]] | None = None
        control = self._any_client()
        if control is not None:
            try:
                block = await control.command(f"list-sessions -F '{SESSION_FORMAT}'")
                sessions = parse_sessions(block.lines)
            except (TransportError, CommandError):
                sessions = None
        if sessions is None:
            res = await self.t.run([*self.base, "list-sessions", "-F", SESSION_FORMAT])
            if res.returncode != 0:
                if not any(s in res.stderr for s in _NO_SERVER):
                    err = res.stderr.decode(errors="replace").strip()
                    raise TransportError(f"{self.host}: tmux list-sessions failed: {err}")
                sessions = []
            else:
                sessions = parse_sessions(res.stdout.splitlines())
        wanted = [n for _, n in sessions if session_selected(n, self.target.include, self.target.exclude)]
        for name in list(self.clients):
            if name not in wanted:
                await self._detach(name)
        now = time.monotonic()
        todo = [
            name
            for name in wanted
            if name not in self.clients
            # it failed a moment ago: do not hammer tmux every poll
            and now - self._attach_failures.get(name, -1e9) >= 10
        ]
        # in parallel: over SSH each attach is a channel and a login shell start (~0.3 s+)
        results = await asyncio.gather(*(self._attach(n) for n in todo), return_exceptions=True)
        for r in results:
            if isinstance(r, BaseException):
                raise r

    async def _list_panes(self) -> list[PaneInfo]:
        control = self._any_client()
        lines: list[bytes]
        if control is not None:
            try:
                block = await control.command(f"list-panes -a -F '{PANE_FORMAT}'")
                lines = list(block.lines)
            except (TransportError, CommandError):
                control = None
        if control is None:
            res = await self.t.run([*self.base, "list-panes", "-a", "-F", PANE_FORMAT])
            if res.returncode != 0:
                if any(s in res.stderr for s in _NO_SERVER):
                    return []
                raise TransportError(
                    f"{self.host}: tmux list-panes failed: {res.stderr.decode(errors='replace')}"
                )
            lines = res.stdout.splitlines()
        return [
            p
            for p in parse_panes(lines)
            if session_selected(p.session, self.target.include, self.target.exclude)
        ]

    async def _ps(self, infos: list[PaneInfo]) -> dict[int, Any] | None:
        pids = {p.pane_pid for p in infos}
        for pane in self.panes.values():
            if pane.obs is not None and pane.obs.pid:
                pids.add(pane.obs.pid)  # the foreground leaders seen last time: their arguments
        procs = await self._ps_run(pids)
        if procs is None:
            return None
        # a foreground leader seen for the first time: one more `ps` for its arguments
        missing = {p.tpgid for p in procs.values() if p.tpgid > 0 and p.tpgid not in procs}
        if missing:
            more = await self._ps_run(missing)
            procs.update(more or {})
        return procs

    async def _ps_run(self, pids: set[int]) -> dict[int, Any] | None:
        res = await self.t.run(ps_argv(pids), timeout=10)
        if res.returncode not in (0, 1) or (res.returncode == 1 and not res.stdout and res.stderr):
            return None
        return parse_ps(res.stdout)

    def _apply(self, infos: list[PaneInfo], procs: dict[int, Any] | None, now: float, look: set[str]) -> None:
        """Update panes from a listing; observe processes of the panes in `look`."""
        seen: set[str] = set()
        for info in infos:
            pane = self.panes.get(info.pane_id)
            if pane is not None and pane.info is not None and pane.info.pane_pid != info.pane_pid:
                self._gone(pane, now)  # the tmux server restarted and reused the id
                pane = None
            if pane is None:
                pane = self._new_pane(info.pane_id, info.session)
            before = pane.info
            seen.add(info.pane_id)
            pane.unlisted_polls = 0
            if info.pane_id in look:
                self._observe(pane, info, procs, now)
            pane.info = info
            pane.session = info.session
            pane.observed_at = time.monotonic()  # tmux's listing confirms the command in front
            if pane.recapture:
                pane.recapture = False
                if pane.classifier.wants_screen:
                    self._capture(pane)
            if before is None or (before.session, before.window) != (info.session, info.window):
                self._evaluate(pane, now)  # otherwise nothing the update carries changed
        for pane_id, pane in list(self.panes.items()):
            if pane_id in seen:
                continue
            if pane.info is not None:
                self._gone(pane, now)
            else:
                pane.unlisted_polls += 1
                if pane.unlisted_polls > 3:  # output of a pane we never saw listed
                    pane.cancel_timers()
                    del self.panes[pane_id]

    def _observe(self, pane: _Pane, info: PaneInfo, procs: dict[int, Any] | None, now: float) -> None:
        pane.info = info
        pane.observed_at = time.monotonic()
        obs = observe(info, procs, self.opt.transports, self.opt.shells)
        if obs != pane.obs:
            pane.classifier.set_process(now, obs.name, obs.pid, obs.observable)
            pane.obs = obs
            self._evaluate(pane, now)

    def _gone(self, pane: _Pane, now: float) -> None:
        pane.cancel_timers()
        if pane.capture_task and not pane.capture_task.done():
            pane.capture_task.cancel()
        self.panes.pop(pane.key.pane, None)
        self.pump.gone(pane.key, now)

    # --- classification ----------------------------------------------------------

    def _evaluate(self, pane: _Pane, now: float) -> None:
        pane.wants_screen = pane.classifier.wants_screen
        if pane.info is None:
            return
        c = pane.classifier
        cls = c.classification(now)
        obs = pane.obs
        update = PaneUpdate(
            key=pane.key,
            session=pane.info.session,
            window=pane.info.window,
            t=now,
            process=obs.name if obs else None,
            evidence=c.evidence(),
            records=tuple(cls.records),
            **{k: getattr(cls, k) for k in _FROM_CLASSIFICATION},
        )
        sig = tuple(getattr(update, k) for k in SIGNATURE_FIELDS)
        if sig != pane.last_sig:
            pane.last_sig = sig
            pane.last_update = update
            self.pump.changed(update)
        self._schedule_deadline(pane, now)

    def _schedule_deadline(self, pane: _Pane, now: float) -> None:
        d = pane.classifier.next_deadline(now)
        if d == pane.deadline_at and pane.deadline_handle is not None:
            return
        if pane.deadline_handle is not None:
            pane.deadline_handle.cancel()
            pane.deadline_handle = None
        pane.deadline_at = d
        if d is not None:
            loop = asyncio.get_running_loop()
            pane.deadline_handle = loop.call_later(max(0.0, d - now) + 0.001, self._deadline, pane.key.pane)

    def _deadline(self, pane_id: str) -> None:
        pane = self.panes.get(pane_id)
        if pane is None:
            return
        pane.deadline_handle = None
        pane.deadline_at = None
        self._evaluate(pane, time.time())

    # --- screen capture ------------------------------------------------------------

    def _settle(self, pane: _Pane, now: float) -> None:
        pane.last_output = now
        if pane.settle_handle is None:
            loop = asyncio.get_running_loop()
            pane.settle_handle = loop.call_later(self.opt.settle, self._settled, pane.key.pane)

    def _settled(self, pane_id: str) -> None:
        pane = self.panes.get(pane_id)
        if pane is None:
            return
        pane.settle_handle = None
        quiet = time.time() - pane.last_output
        if quiet < self.opt.settle:
            loop = asyncio.get_running_loop()
            pane.settle_handle = loop.call_later(self.opt.settle - quiet, self._settled, pane_id)
            return
        self._capture(pane)

    def _capture(self, pane: _Pane) -> None:
        if pane.capture_task is not None and not pane.capture_task.done():
            pane.capture_again = True
            return
        pane.capture_task = asyncio.create_task(self._do_capture(pane))

    async def _do_capture(self, pane: _Pane) -> None:
        try:
            async with self._capture_sem:
                res = await self.t.run([*self.base, "capture-pane", "-p", "-t", pane.key.pane], timeout=10)
        except TransportError as exc:
            log.debug("%s: capture of %s failed: %s", self.host, pane.key.pane, exc)
            return
        if res.returncode == 0 and self.panes.get(pane.key.pane) is pane:
            now = time.time()
            pane.classifier.set_screen(now, res.stdout.decode("utf-8", "replace"))
            self._evaluate(pane, now)
        if pane.capture_again:
            pane.capture_again = False
            self._settle(pane, time.time())

    def mark_seen(self, pane_id: str, t: float) -> bool:
        """The user looked at this pane (the server says so): `done` becomes `idle`."""
        pane = self.panes.get(pane_id)
        if pane is None:
            return False
        now = max(t, time.time()) if t else time.time()
        pane.classifier.mark_seen(now)
        self._evaluate(pane, now)
        return True

    # --- snapshot ------------------------------------------------------------------

    def snapshot(self) -> list[PaneUpdate]:
        return [p.last_update for p in self.panes.values() if p.last_update is not None]


class Collector:
    """All watched tmux servers, one sink; a `SnapshotSource` for reconnecting sinks."""

    def __init__(self, targets: Sequence[TmuxTarget], sink: Sink, options: Options | None = None) -> None:
        self.options = options or Options()
        self.pump = Pump(sink)
        self.watchers = [TmuxWatcher(t, self.options, self.pump) for t in targets]

    def snapshot(self) -> tuple[list[PaneUpdate], dict[str, tuple[bool, str | None]]]:
        panes: list[PaneUpdate] = []
        hosts: dict[str, tuple[bool, str | None]] = {}
        for w in self.watchers:
            panes += w.snapshot()
            hosts[w.host] = w.reachable
        return panes, hosts

    def set_rules(self, rules: Any) -> None:
        """Swap in reloaded screen rules (TA-17: on request, without a restart)."""
        self.options = dataclasses.replace(self.options, rules=rules)
        now = time.time()
        for w in self.watchers:
            w.opt = self.options
            for pane in list(w.panes.values()):
                pane.classifier.set_rules(now, rules)
                w._evaluate(pane, now)
                if pane.wants_screen:
                    w._capture(pane)

    def mark_seen(self, key: PaneKey, t: float) -> None:
        """Forwarded by a sink (the uplink's `on_seen`): the user looked at `key`."""
        for w in self.watchers:
            if w.host == key.host and w.target.label == key.tmux and w.mark_seen(key.pane, t):
                return

    async def run(self) -> int:
        """Run until cancelled, or until every watcher failed fatally (returns 1)."""
        pump = asyncio.create_task(self.pump.run(), name="sink-pump")
        try:
            await asyncio.gather(*(w.run() for w in self.watchers))
            await asyncio.wait_for(self.pump.drained(), 5)
            return 1
        finally:
            pump.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await pump
            for w in self.watchers:
                with contextlib.suppress(Exception):
                    await w.t.close()
