"""Screens of watched panes, and answers typed into them: the only writes to a pane.

One `PaneScreens` per tmux server (`TmuxWatcher.screens`). The server says which panes
a page is looking at (`watch`/`unwatch`, docs/wire.md); only those are captured
(`capture-pane -e`, so an idle board costs nothing), at once and again when their
output settles (or at most `MAX_WAIT` after output that never settles, a spinner),
and when their state changes (a prompt's answers depend on it). A screen is sent only
when it differs from the last one sent.

An `answer` is typed only if every check passes, in this order, on a fresh capture:
the host allows input (`--allow-input` / `allow_input = true`), the command has not
expired, the pane is in the state its kind needs, its screen still has the fingerprint
the operator was shown, that screen was not answered already, and the answer is one its
prompt takes. Three kinds (docs/answers.md):

* a declared answer id (keys from the collector's own manifests), or free text where a
  blocked prompt takes text: the pane `blocked`; text to a question a report raised (a
  `paneboard ask`) only while the report's writer is in front, looked at anew
  (`not-in-front`);
* a follow-up (text) to an idle or done agent: only into a program a manifest
  identifies by its process (never a shell, never one known only from its own report),
  at the input prompt that manifest reads, under that prompt's fingerprint
  (`prompt.input_fingerprint`: the input box, the last answer above it, the episode);
* one key of `wire.PRESSES`: Escape and C-c while the same identified process the
  operator saw is in front (`process`), any other key only under the screen's
  fingerprint, like an answer.

Keys are pressed with `send-keys` of tmux key names; text with `send-keys -l` (literal:
`Enter` or `C-c` inside it are letters), then one `Enter`. A follow-up of several lines
is one submission: wrapped in the bracketed-paste markers (`send-keys -H`, ours, never
from the text), newlines sent as CR as a terminal's paste sends them, its Enter once the
program has drawn the paste (`_drawn`). Never a tmux paste buffer, which every client of
the server can read. The outcome goes back as `answered`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from paneboard_protocol import server_messages as sm
from paneboard_protocol import wire
from paneboard_protocol.identity import process_identity
from paneboard_protocol.pane import PaneKey, PaneUpdate
from paneboard_protocol.rules import RuleSet
from paneboard_protocol.screen import Offer, clean_line, offer, plain

from paneboard_agent.tmux import Observation, PaneCapture, PaneInfo, observe, processes, session_selected
from paneboard_agent.transport import Transport, TransportError


class TrackerView(Protocol):
    """What `PaneScreens` reads of a pane's tracker (`watch.PaneTracker`)."""

    @property
    def info(self) -> PaneInfo | None: ...

    @property
    def session(self) -> str: ...

    @property
    def last_update(self) -> PaneUpdate | None: ...

    @property
    def obs(self) -> Observation | None:
        """The process in front when last looked at: whom a follow-up or key may reach."""
        ...


class PaneView(Protocol):
    """What `PaneScreens` reads of one watched pane (`watch`'s `WatchedPane`)."""

    @property
    def tracker(self) -> TrackerView: ...


class TargetView(Protocol):
    """What `PaneScreens` reads of the tmux server it serves (`watch.TmuxTarget`)."""

    @property
    def label(self) -> str: ...

    @property
    def include(self) -> Sequence[str]: ...

    @property
    def exclude(self) -> Sequence[str]: ...

    @property
    def screens(self) -> bool: ...

    @property
    def allow_input(self) -> bool: ...


class OptionsView(Protocol):
    """What `PaneScreens` reads of the collector's options (`watch.Options`)."""

    @property
    def settle(self) -> float: ...

    @property
    def rules(self) -> RuleSet | None: ...

    @property
    def transports(self) -> Sequence[str]: ...

    @property
    def shells(self) -> frozenset[str]: ...


class ScreensOwner(Protocol):
    """What `PaneScreens` reads of the watcher that owns it (`watch.TmuxWatcher`):
    named here, down to the panes' trackers, because the watcher is the part above this
    one (it owns a `PaneScreens`), and a part imports only the parts below it."""

    host: str
    base: list[str]
    t: Transport
    capture: PaneCapture

    @property
    def target(self) -> TargetView: ...

    @property
    def opt(self) -> OptionsView: ...

    @property
    def panes(self) -> Mapping[str, PaneView]: ...


#: where screens and answer outcomes go: the uplink's `send_side`, given at construction
Side = Callable[[wire.Screen | wire.Answered], None]

log = logging.getLogger("paneboard.screens")

#: longest wait for a capture while output never settles (a spinner)
MAX_WAIT = 1.0
#: longest wait for a program to draw a follow-up's paste before its Enter
DRAW_WAIT = 3.0
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

    def __init__(self, watcher: ScreensOwner, send: Side | None = None) -> None:
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
            # what the page acts on, not only what it draws: a new episode, or the agent
            # identified in front, changes what a send must name on the same text
            sig = (
                cap.lines,
                cap.cursor,
                msg.state,
                tuple(a.id for a in msg.answers),
                msg.text,
                msg.fingerprint,
                msg.follow_up,
                msg.process,
            )
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

    def front(self, pane_id: str) -> str | None:
        """The pid of the program in front, if a manifest identifies it by its process
        and it is the agent the pane's state is of (RI-1 row 1); None for a shell, a
        program without a manifest, or one known only from its own report."""
        pane = self.w.panes.get(pane_id)
        rules = self.w.opt.rules
        if pane is None or rules is None:
            return None
        obs, u = pane.tracker.obs, pane.tracker.last_update
        if obs is None or obs.name is None or obs.pid is None or u is None:
            return None
        manifest = rules.for_process(process_identity(obs.name))  # as the classifier names it
        if manifest is None or manifest.agent != u.agent:
            return None
        return str(obs.pid)

    def _screen_msg(self, pane_id: str, cap: Captured) -> wire.Screen:
        u, got = self._offer(pane_id, cap)
        front = self.front(pane_id)
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
            follow_up=got.follow_up and front is not None,
            process=front,
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
        if u is None or u.state not in _STATES[_kind(cmd, u.state)]:
            return "not-blocked", None
        if cmd.press in wire.INTERRUPTS:
            # Esc / C-c: whatever the screen, while the program the operator saw runs
            front = self.front(pane_id)
            if front is None or front != cmd.process:
                return "changed", None
            return await self._type(pane_id, [["send-keys", "-t", pane_id, cmd.press]], None)
        cap = await self.capture(pane_id)
        if cap is None:
            return "changed", None
        u, got = self._offer(pane_id, cap)
        if u is None or u.state not in _STATES[_kind(cmd, u.state)]:
            return "not-blocked", got.prompt
        if got.fingerprint != cmd.fingerprint:
            return "changed", got.prompt
        if got.fingerprint in self.used.get(pane_id, ()):
            return "used", got.prompt
        runs = self._runs(pane_id, cmd, u.state, got)
        if runs is None:
            return "refused", got.prompt
        if cmd.text is not None and u.state == "blocked" and not await self._asker_in_front(pane_id, u):
            return "not-in-front", got.prompt
        used = self.used.setdefault(pane_id, [])
        used.append(got.fingerprint)
        del used[:-USED_MAX]
        if _kind(cmd, u.state) != "follow-up":
            return await self._type(pane_id, runs, got.prompt)
        # the paste, then its Enter once the program has drawn the paste
        outcome, prompt = await self._type(pane_id, runs[:-1], got.prompt)
        if outcome != "typed":
            return outcome, prompt
        await self._drawn(pane_id, _plain_screen(cap))
        return await self._type(pane_id, runs[-1:], got.prompt)

    async def _drawn(self, pane_id: str, before: str) -> None:
        """Wait until the pane's screen differs from `before` and then holds still for
        the settle time: the program has read what was typed and drawn it. Gemini CLI
        takes an Enter that comes right behind a paste as a newline inside it (a guard
        against terminals that paste a trailing newline); so does a person's Enter only
        if pressed that fast. Bounded by `DRAW_WAIT`: a program that draws nothing (or
        never stops drawing) gets its Enter then."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + DRAW_WAIT
        last: str | None = None
        while loop.time() < deadline:
            cap = await self.capture(pane_id)
            now = _plain_screen(cap) if cap is not None else None
            if now is not None and now != before and now == last:
                return
            last = now
            await asyncio.sleep(self.w.opt.settle)

    async def _asker_in_front(self, pane_id: str, u: PaneUpdate) -> bool:
        """Is the program that reported this blocked question still the one in front?

        Text for a reported question (`paneboard ask`, a script's `emit blocked`) goes to
        whatever reads the terminal: the report's writer, the process in front when it
        was filed (the classifier's record, RI-2), must still be in front, looked at now.
        The record stays live while a command its writer started is in front (a shell
        whose backgrounded `ask` waits, stopped, while `cat` runs), and the poll that
        would see a new program may come after the answer: neither is the asker. A
        question no report raised (a manifest's rule read it off the screen) is the
        program's own screen, and its fingerprint is the check. A shell alone in front
        never takes it, even the shell that wrote the report (`emit blocked` typed at
        its prompt): it would run the text as a command."""
        writer = _asker(u)
        if writer is _NO_REPORT:
            return True
        pane = self.w.panes.get(pane_id)
        info = pane.tracker.info if pane is not None else None
        if writer is None or info is None:
            return False
        try:
            procs = await processes(self.w.t, {info.pane_pid}, {info.tty} if info.tty else ())
        except TransportError as exc:
            log.debug("%s: looking at %s's process failed: %s", self.w.host, pane_id, exc)
            return False
        if procs is None:  # no `ps` on the host: who is in front cannot be told
            return False
        now = observe(info, procs, self.w.opt.transports, self.w.opt.shells, None, self._agent_of)
        if now.pid != writer:
            return False
        if now.name is None:  # a shell in front: is it the one reading the terminal?
            # a script's shell (`x=$(paneboard ask …)`, no job control) runs its commands
            # in its own group, and they read the terminal; alone in its group, at its
            # prompt, the shell reads the text itself, as a command
            return any(p.pgid == now.pid and p.pid != now.pid for p in procs.values())
        return True

    def _agent_of(self, name: str) -> str | None:
        """The agent a manifest names for a process name (as the watcher's look does)."""
        rules = self.w.opt.rules
        manifest = rules.for_process(process_identity(name)) if rules is not None else None
        return manifest.agent if manifest is not None else None

    def _runs(self, pane_id: str, cmd: sm.Answer, state: str, got: Offer) -> list[list[str]] | None:
        """The tmux commands that type `cmd` into this screen, or None: not one it takes."""
        if cmd.answer is not None:
            keys = got.keys(cmd.answer)
            return None if keys is None else [["send-keys", "-t", pane_id, *keys]]
        if cmd.press is not None:  # a key that can select or approve: the program named
            return [["send-keys", "-t", pane_id, cmd.press]] if self.front(pane_id) else None
        text = cmd.text or ""
        if state == "blocked":
            if not got.text or not _typable(text):
                return None
            return [
                ["send-keys", "-t", pane_id, "-l", "--", literal_arg(text)],
                ["send-keys", "-t", pane_id, "Enter"],
            ]
        if not got.follow_up or self.front(pane_id) is None or not follow_up_typable(text):
            return None
        return follow_up_runs(pane_id, text)

    async def _type(
        self, pane_id: str, runs: list[list[str]], prompt: str | None
    ) -> tuple[wire.Outcome, str | None]:
        for argv in runs:
            try:
                res = await self.w.t.run([*self.w.base, *argv], timeout=10)
            except TransportError as exc:
                log.warning("%s: typing into %s failed: %s", self.w.host, pane_id, exc)
                return "offline", prompt
            if res.returncode != 0:
                return "offline", prompt
        return "typed", prompt

    # --- helpers -----------------------------------------------------------------
    def _key(self, pane_id: str) -> PaneKey:
        return PaneKey(host=self.w.host, tmux=self.w.target.label, pane=pane_id)

    def _emit(self, msg: wire.Screen | wire.Answered) -> None:
        if self.send is not None:
            with contextlib.suppress(Exception):
                self.send(msg)


def literal_arg(text: str) -> str:
    """`text` as one tmux argument that reaches `send-keys -l` unchanged.

    tmux parses the arguments of a command line: one ending in `;` ends the command
    there (`git push;` would type `git push`, a lone `;` nothing), and one ending in
    `\\;` loses its backslash. Only the final `;` is read so (cmd-parse.c,
    `cmd_parse_from_arguments`): escaping that one as `\\;` makes tmux hand back
    exactly the text (`;` -> `\\;` -> `;`, `a\\;` -> `a\\\\;` -> `a\\;`)."""
    return text[:-1] + "\\;" if text.endswith(";") else text


#: `_asker`'s word for a blocked state no report raised
_NO_REPORT = -1


def _asker(u: PaneUpdate) -> int | None:
    """The pid that wrote the blocked report the pane's state is of (the newest blocked
    record: blocked ranks first in the roll-up), None if that is not known, or
    `_NO_REPORT` when no record says blocked."""
    records = u.evidence.get("records") if isinstance(u.evidence, dict) else None
    blocked = [r for r in records or () if isinstance(r, dict) and r.get("state") == "blocked"]
    if not blocked:
        return _NO_REPORT
    newest = max(blocked, key=_seq)
    pid = newest.get("pid")
    return pid if isinstance(pid, int) and pid > 0 else None


def _seq(record: dict[str, Any]) -> int:
    seq = record.get("seq")
    return seq if isinstance(seq, int) else -1


#: the states each kind of answer is typed in
_STATES: dict[str, frozenset[str]] = {
    "answer": frozenset({"blocked"}),
    "follow-up": frozenset({"idle", "done"}),
    "press": frozenset({"blocked", "idle", "done", "working", "error", "unknown"}),
}


def _kind(cmd: sm.Answer, state: str | None) -> str:
    """Which kind of answer `cmd` is: free text is a blocked prompt's answer while the
    pane is blocked, a follow-up while it is idle or done."""
    if cmd.press is not None:
        return "press"
    if cmd.text is not None and state != "blocked":
        return "follow-up"
    return "answer"


# the bracketed-paste markers (xterm's mode 2004), as hex for `send-keys -H`: ours,
# around the operator's text, which itself may hold no escape
_PASTE_START = ["1b", "5b", "32", "30", "30", "7e"]
_PASTE_END = ["1b", "5b", "32", "30", "31", "7e"]


def _plain_screen(cap: Captured) -> str:
    """The visible rows without their colours: a blinking cursor or a selection's
    colour is no redraw."""
    return "\n".join(plain(ln) for ln in cap.visible)


def follow_up_runs(pane_id: str, text: str) -> list[list[str]]:
    """The tmux commands typing a follow-up and submitting it once: one bracketed paste
    (the program reads the newlines as text, not as Enter), each newline sent as CR the
    way a terminal and tmux's own `paste-buffer` send a paste's, then Enter (the last
    run, which `PaneScreens` sends once the program has drawn the paste).

    A paste even for one line: Codex reads keys that arrive together as a paste it
    guesses at, and takes an Enter right behind typed text as part of it (a newline,
    not a submission); a declared paste it ends at the end marker. The agents a
    manifest identifies all switch bracketed paste on (Ink, ratatui, prompt_toolkit)."""
    return [
        ["send-keys", "-t", pane_id, "-H", *_PASTE_START],
        ["send-keys", "-t", pane_id, "-l", "--", literal_arg(text.replace("\n", "\r"))],
        ["send-keys", "-t", pane_id, "-H", *_PASTE_END],
        ["send-keys", "-t", pane_id, "Enter"],
    ]


def follow_up_typable(text: str) -> bool:
    """A follow-up may hold newlines (one submission, pasted); no other control
    character, ESC above all (it could end the paste or drive the program), and not
    only blank lines."""
    return (
        bool(text.strip())
        and len(text) <= wire.ANSWER_TEXT_MAX
        and all(_typable(line) or line == "" for line in text.split("\n"))
    )


def _typable(text: str) -> bool:
    """Free text is typed literally, one line: no control characters at all (a newline
    would be an Enter the operator did not press), within the wire's bound."""
    return 0 < len(text) <= wire.ANSWER_TEXT_MAX and not any(ord(c) < 32 or 127 <= ord(c) < 160 for c in text)
