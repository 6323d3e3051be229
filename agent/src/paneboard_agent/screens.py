"""Screens of watched panes, and answers typed into them: the only writes to a pane.

One `PaneScreens` per tmux server (`TmuxWatcher.screens`). The server says which panes
a page is looking at (`watch`/`unwatch`, docs/wire.md); only those are captured
(`capture-pane -e`, so an idle board costs nothing), at once and again when their
output settles (or at most `MAX_WAIT` after output that never settles, a spinner),
and when their state changes (a prompt's answers depend on it). A screen is sent only
when it differs from the last one sent.

An `answer` is typed only if every check passes, in this order, on a fresh capture:
the host allows input (`--allow-input` / `allow_input = true`), the command has not
expired, the pane is still `blocked`, its screen still has the fingerprint the
operator was shown, that screen was not answered already, and the answer is one its
prompt takes (declared answer ids from the collector's own manifests; free text only
where the prompt takes text). Keys are pressed with `send-keys` of tmux key names from
the manifest's short list; free text with `send-keys -l` (literal: `Enter` or `C-c`
inside it are letters), then one `Enter`. The outcome goes back as `answered`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from paneboard_protocol import server_messages as sm
from paneboard_protocol import wire
from paneboard_protocol.pane import PaneKey
from paneboard_protocol.screen import Offer, clean_line, offer, plain

from paneboard_agent.capture import PaneCapture
from paneboard_agent.pane_tasks import WatchedPane
from paneboard_agent.panes import session_selected
from paneboard_agent.targets import Options, TmuxTarget
from paneboard_agent.transport import Transport, TransportError


class ScreensOwner(Protocol):
    """What `PaneScreens` reads of the watcher that owns it (`watcher.TmuxWatcher`):
    named here so this module does not import the watcher."""

    host: str
    base: list[str]
    t: Transport
    capture: PaneCapture
    target: TmuxTarget
    opt: Options
    panes: dict[str, WatchedPane]


log = logging.getLogger("paneboard.screens")

#: longest wait for a capture while output never settles (a spinner)
MAX_WAIT = 1.0
#: fingerprints answered per pane, remembered against replays
USED_MAX = 32
OFF = "screens are switched off for this host (paneboard agent --no-screens / screens = false)"
NOT_TRACKED = (
    "this collector does not watch that pane (no such pane, or its session is not included / is excluded)"
)


@dataclass
class Captured:
    lines: list[str]  # cleaned, SGR colours kept; scroll-back first
    visible: list[str]  # the visible rows
    size: tuple[int, int]
    cursor: tuple[int, int]


@dataclass
class _Watched:
    scrollback: int = 0
    first_output: float | None = None
    last_output: float = 0.0
    timer: asyncio.TimerHandle | None = None
    task: asyncio.Task[None] | None = None
    again: bool = False
    sent: tuple[Any, ...] | None = None


class PaneScreens:
    """What is watched on one tmux server, its captures and the answers typed into it."""

    def __init__(
        self, watcher: ScreensOwner, send: Callable[[wire.Screen | wire.Answered], None] | None = None
    ) -> None:
        self.w = watcher
        self.send = send
        self.watched: dict[str, _Watched] = {}
        self.used: dict[str, list[str]] = {}  # pane id -> fingerprints typed into
        self._locks: dict[str, asyncio.Lock] = {}

    @property
    def enabled(self) -> bool:
        return self.w.target.screens

    @property
    def input(self) -> bool:
        return self.w.target.allow_input and self.w.target.screens

    # --- from the server ---------------------------------------------------------
    def watch(self, pane_id: str, scrollback: int) -> None:
        if not self.enabled or not self.tracked(pane_id):
            why = OFF if not self.enabled else NOT_TRACKED
            self._emit(wire.screen(self._key(pane_id), time.time(), [], (0, 0), (0, 0), "", error=why))
            return
        w = self.watched.setdefault(pane_id, _Watched())
        w.scrollback = max(0, min(scrollback, wire.SCREEN_LINES_MAX - 200))
        w.sent = None  # a (re)watch always gets a screen
        self._capture_soon(pane_id, 0.0)

    def tracked(self, pane_id: str) -> bool:
        """A pane this collector reports: listed, in a session its include/exclude
        globs select. A server may name any pane id; only these are ever captured."""
        pane = self.w.panes.get(pane_id)
        if pane is None or pane.tracker.info is None:
            return False
        return session_selected(pane.tracker.session, self.w.target.include, self.w.target.exclude)

    def unwatch(self, pane_id: str) -> None:
        w = self.watched.pop(pane_id, None)
        if w is not None:
            if w.timer is not None:
                w.timer.cancel()
            if w.task is not None and not w.task.done():
                w.task.cancel()

    # --- from the watcher --------------------------------------------------------
    def output(self, pane_id: str) -> None:
        """The pane wrote: capture once it settles, or after MAX_WAIT at most."""
        w = self.watched.get(pane_id)
        if w is None:
            return
        now = time.monotonic()
        w.last_output = now
        if w.first_output is None:
            w.first_output = now
        if w.timer is None:
            self._capture_soon(pane_id, self.w.opt.settle)

    def changed(self, pane_id: str) -> None:
        """The pane's classification changed: its answers may have."""
        if pane_id in self.watched and self.watched[pane_id].timer is None:
            self._capture_soon(pane_id, self.w.opt.settle)

    def gone(self, pane_id: str) -> None:
        self.unwatch(pane_id)
        self.used.pop(pane_id, None)
        self._locks.pop(pane_id, None)

    def close(self) -> None:
        for pane_id in list(self.watched):
            self.unwatch(pane_id)

    # --- capturing ---------------------------------------------------------------
    def _capture_soon(self, pane_id: str, delay: float) -> None:
        w = self.watched[pane_id]
        loop = asyncio.get_running_loop()
        w.timer = loop.call_later(delay, self._due, pane_id)

    def _due(self, pane_id: str) -> None:
        w = self.watched.get(pane_id)
        if w is None:
            return
        w.timer = None
        now = time.monotonic()
        quiet = now - w.last_output
        if w.first_output is not None and quiet < self.w.opt.settle and now - w.first_output < MAX_WAIT:
            w.timer = asyncio.get_running_loop().call_later(self.w.opt.settle - quiet, self._due, pane_id)
            return
        w.first_output = None
        if w.task is not None and not w.task.done():
            w.again = True
            return
        w.task = asyncio.create_task(self._capture_and_send(pane_id))

    async def _capture_and_send(self, pane_id: str) -> None:
        w = self.watched.get(pane_id)
        if w is None:
            return
        cap = await self.capture(pane_id, w.scrollback)
        if self.watched.get(pane_id) is not w:
            return
        if cap is not None:
            msg = self._screen_msg(pane_id, cap)
            sig = (cap.lines, cap.cursor, msg.state, tuple(a.id for a in msg.answers), msg.text)
            if sig != w.sent:
                w.sent = sig
                self._emit(msg)
        if w.again:
            w.again = False
            self._capture_soon(pane_id, 0.0)

    async def capture(self, pane_id: str, scrollback: int = 0) -> Captured | None:
        """The pane with its colours, scroll-back, size and cursor (the watcher's one
        capture path, `capture.PaneCapture`); None if it failed."""
        try:
            text = await self.w.capture.read(pane_id, colours=True, scrollback=scrollback, size=True)
        except TransportError as exc:
            log.debug("%s: screen capture of %s failed: %s", self.w.host, pane_id, exc)
            return None
        if text is None:
            return None
        raw = text.split("\n")
        if raw and raw[-1] == "":
            raw.pop()
        try:
            width, height, cx, cy = (int(x) for x in raw.pop().split())
        except (IndexError, ValueError):
            return None
        lines = [clean_line(ln) for ln in raw][-wire.SCREEN_LINES_MAX :]
        visible = lines[-height:] if height else []
        return Captured(lines, visible, (width, height), (cx, cy))

    def _offer(self, pane_id: str, cap: Captured) -> tuple[Any, Offer]:
        """The pane's latest update and what this capture's prompt takes, with the
        prompt's fingerprint (`paneboard_protocol.prompt`)."""
        pane = self.w.panes.get(pane_id)
        u = pane.tracker.last_update if pane is not None else None
        text = "\n".join(plain(ln) for ln in cap.visible)
        if u is None:
            return None, offer(None, None, None, None, text)
        return u, offer(
            self.w.opt.rules, u.agent, u.state, u.kind, text, u.title, u.msg, u.since, cap.visible
        )

    def _screen_msg(self, pane_id: str, cap: Captured) -> wire.Screen:
        u, got = self._offer(pane_id, cap)
        return wire.screen(
            self._key(pane_id),
            time.time(),
            cap.lines,
            cap.size,
            cap.cursor,
            got.fingerprint,
            state=u.state if u is not None else None,
            prompt=got.prompt[:4096] if got.prompt else None,
            answers=got.choices(),
            text=got.text,
            input=self.input,
        )

    # --- answering ---------------------------------------------------------------
    async def answer(self, cmd: sm.Answer) -> None:
        """Check everything on a fresh screen, type only then; always reply `answered`."""
        pane_id = cmd.key.pane
        lock = self._locks.setdefault(pane_id, asyncio.Lock())
        async with lock:
            outcome, prompt = await self._answer(pane_id, cmd)
        log.info("%s: answer to %s: %s", self.w.host, pane_id, outcome)
        self._emit(wire.answered(cmd.id, outcome, prompt[:4096] if prompt else None))
        if pane_id in self.watched:
            self._capture_soon(pane_id, self.w.opt.settle)

    async def _answer(self, pane_id: str, cmd: sm.Answer) -> tuple[wire.Outcome, str | None]:
        if not self.input:
            return "disabled", None
        if not self.tracked(pane_id):
            return "not-blocked", None
        if time.time() > cmd.expires:
            return "expired", None
        pane = self.w.panes.get(pane_id)
        u = pane.tracker.last_update if pane is not None else None
        if u is None or u.state != "blocked":
            return "not-blocked", None
        cap = await self.capture(pane_id)
        if cap is None:
            return "changed", None
        u, got = self._offer(pane_id, cap)
        if u is None or u.state != "blocked":
            return "not-blocked", got.prompt
        if got.fingerprint != cmd.fingerprint:
            return "changed", got.prompt
        if got.fingerprint in self.used.get(pane_id, ()):
            return "used", got.prompt
        if cmd.answer is not None:
            keys = got.keys(cmd.answer)
            if keys is None:
                return "refused", got.prompt
            runs = [["send-keys", "-t", pane_id, *keys]]
        elif cmd.text is not None and got.text and _typable(cmd.text):
            runs = [
                ["send-keys", "-t", pane_id, "-l", "--", literal_arg(cmd.text)],
                ["send-keys", "-t", pane_id, "Enter"],
            ]
        else:
            return "refused", got.prompt
        used = self.used.setdefault(pane_id, [])
        used.append(got.fingerprint)
        del used[:-USED_MAX]
        for argv in runs:
            try:
                res = await self.w.t.run([*self.w.base, *argv], timeout=10)
            except TransportError as exc:
                log.warning("%s: typing into %s failed: %s", self.w.host, pane_id, exc)
                return "offline", got.prompt
            if res.returncode != 0:
                return "offline", got.prompt
        return "typed", got.prompt

    # --- helpers -----------------------------------------------------------------
    def _key(self, pane_id: str) -> PaneKey:
        return PaneKey(host=self.w.host, tmux=self.w.target.label, pane=pane_id)

    def _emit(self, msg: wire.Screen | wire.Answered) -> None:
        if self.send is not None:
            with contextlib.suppress(Exception):
                self.send(msg)


class _WithScreens(Protocol):
    host: str
    target: TmuxTarget
    screens: PaneScreens


class ScreensPump:
    """The collector's `Pump`, also telling each watcher's `PaneScreens` that a pane's
    classification changed (its answers may have) or that it went: kept out of the
    watcher, which only calls `screens.output` for each output."""

    def __init__(self, pump: Any, watchers: Callable[[], Sequence[_WithScreens]]) -> None:
        self.pump = pump
        self.watchers = watchers

    def _screens(self, key: Any) -> PaneScreens | None:
        for w in self.watchers():
            if w.host == key.host and w.target.label == key.tmux:
                return w.screens
        return None

    def changed(self, update: Any) -> None:
        self.pump.changed(update)
        s = self._screens(update.key)
        if s is not None:
            s.changed(update.key.pane)

    def gone(self, key: Any, t: float) -> None:
        self.pump.gone(key, t)
        s = self._screens(key)
        if s is not None:
            s.gone(key.pane)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.pump, name)


def literal_arg(text: str) -> str:
    """`text` as one tmux argument that reaches `send-keys -l` unchanged.

    tmux parses the arguments of a command line: one ending in `;` ends the command
    there (`git push;` would type `git push`, a lone `;` nothing), and one ending in
    `\\;` loses its backslash. Only the final `;` is read so (cmd-parse.c,
    `cmd_parse_from_arguments`): escaping that one as `\\;` makes tmux hand back
    exactly the text (`;` -> `\\;` -> `;`, `a\\;` -> `a\\\\;` -> `a\\;`)."""
    return text[:-1] + "\\;" if text.endswith(";") else text


def _typable(text: str) -> bool:
    """Free text is typed literally, one line: no control characters at all (a newline
    would be an Enter the operator did not press), within the wire's bound."""
    return 0 < len(text) <= wire.ANSWER_TEXT_MAX and not any(ord(c) < 32 or 127 <= ord(c) < 160 for c in text)
