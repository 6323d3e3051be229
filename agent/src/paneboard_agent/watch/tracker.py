"""One pane as the collector follows it: pure, driven by `(now, input)`, no I/O.

The session manager (`watcher.TmuxWatcher`) talks to tmux and owns the timers and
tasks; everything it learns about a pane goes in here as one input value
(`effects.Wrote`, `Listed`, `Settled`, ...) through `step`, and everything the pane
needs done comes back out of that same call as one `effects.Effects` value, which
`pane_tasks.PaneTasks` carries out:

* `update`: the classification changed (what the sink gets), else None;
* `capture`: start one `capture-pane` now (at most one is ever in flight);
* `settle_at` / `deadline_at`: when to feed `Settled` / `Deadline`;
  a screen is read once output has been quiet for `settle` seconds, or, for a pane
  that never pauses that long (an agent animating a spinner), `reread` seconds after
  the output that armed the settle time: an animating agent's screen is re-read at most
  every `reread` seconds, never only once it stops;
* `look`: the pane holds a report until its foreground process has been looked at
  after the report arrived (see `_output`).

Kept apart so that the decisions (which report waits for an observation, when a
screen is read, when the classification is re-evaluated) are tested as tables of
input -> effects, without tmux and without an event loop, exactly like `PaneClassifier`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, assert_never

from paneboard_protocol.classifier import PaneClassifier
from paneboard_protocol.decoder import Decoder
from paneboard_protocol.events import AgentReport, ClearReport, Event, Rejected, StatusReport
from paneboard_protocol.pane import CLASSIFICATION_FIELDS, SIGNATURE_FIELDS, clip_text
from paneboard_protocol.rules import RuleSet

from paneboard_agent.tmux import Observation, PaneInfo
from paneboard_agent.uplink import PaneKey, PaneUpdate
from paneboard_agent.watch.effects import (
    Captured,
    CaptureFailed,
    Deadline,
    Disconnected,
    Effects,
    Input,
    Listed,
    Polling,
    Released,
    Restored,
    RulesChanged,
    Seen,
    Settled,
    Skipped,
    Wrote,
)

#: What a pane update copies from the classification (records are copied as a tuple).
_FROM_CLASSIFICATION = tuple(k for k in CLASSIFICATION_FIELDS if k != "records")

#: events that are attributed to the foreground process (see PaneTracker.output)
REPORTS = (StatusReport, ClearReport, AgentReport)
#: events held per pane while its process is looked at; more are fed unheld
MAX_HELD = 10000
#: quiet time (seconds) before a pane's screen is captured
SETTLE = 0.15
#: while output keeps flowing (a spinner, a progress bar), the screen of a pane whose
#: classifier wants it is re-read at most this often (seconds); 0: only once quiet
REREAD = 0.4


def _decoder() -> Decoder:
    """The pane's decoder, reading as `paneboard replay` does: with `Rejected` events,
    which the classifier needs (a contract with an unknown state still names the
    agent, RI-6) and `--explain` prints; it ignores every other one."""
    return Decoder(rejections=True)


class PaneTracker:
    """Decoder, classifier, held reports, settle and deadline times, capture requests."""

    def __init__(
        self,
        key: PaneKey,
        session: str,
        rules: RuleSet | None = None,
        transports: Iterable[str] = (),
        settle: float = SETTLE,
        reread: float = REREAD,
        explain: bool = False,
        hold_reports: bool = True,
    ) -> None:
        self.key = key
        # False (diagnostics only, bench/e2e.py): reports go to the classifier at once,
        # filed under whatever process was last seen in front (see `_output`)
        self.hold_reports = hold_reports
        self.explain = explain  # hand the discarded reports out in `Effects.discarded`
        self._discarded: list[Rejected] = []
        self.session = session
        self.settle = settle
        self.reread = reread
        self.decoder = _decoder()
        self.classifier = PaneClassifier(rules, transports=transports)
        self.info: PaneInfo | None = None
        self.obs: Observation | None = None
        self.last_update: PaneUpdate | None = None
        self.held: list[Event] | None = None  # events waiting for a fresh observation
        # per look in flight, oldest first: how many of `held` arrived before it started
        self._cuts: list[int] = []
        self.settle_at: float | None = None
        self.deadline_at: float | None = None
        self.capturing = False
        self._last_sig: Any = None
        self._pending: PaneUpdate | None = None
        self._last_output = 0.0
        self._armed_at = 0.0  # the output that set settle_at (the start of an animation)
        self._recapture = True
        self._capture_wanted = False
        self._capture_again = False
        self._wants_screen = False  # the classifier's wants_screen, cached after each change
        self._back: Observation | None = None  # the foreground back at an ancestor, seen once

    # --- the one way in --------------------------------------------------------------

    def step(self, i: Input) -> Effects:
        """Take one input; return everything it asks for (see `effects.Effects`)."""
        look = False
        match i:
            case Wrote(now, data):
                look = self._output(now, data)
            case Polling():
                self._polling()
            case Released(now, everything):
                look = self._released(now, everything)
            case Listed(now, info, obs):
                self._listed(now, info, obs)
            case Skipped(now):
                self._skipped(now)
            case Disconnected():
                self._disconnected()
            case Settled(now):
                self._settled(now)
            case Deadline(now):
                self._deadline(now)
            case Captured(now, screen):
                self._captured(now, screen)
            case CaptureFailed():
                self._capture_failed()
            case Seen(now):
                self._seen(now)
            case RulesChanged(now, rules):
                self._set_rules(now, rules)
            case Restored(now, events):
                self._restored(now, list(events))
            case _:
                assert_never(i)
        update, self._pending = self._pending, None
        capture, self._capture_wanted = self._capture_wanted, False
        if capture:
            self.capturing = True  # the runner starts it now and reports back
        discarded, self._discarded = tuple(self._discarded), []
        return Effects(update, capture, self.settle_at, self.deadline_at, look, discarded)

    def unserved(self) -> bool:
        """A report is held that no look already under way was started for: only a new
        look can serve it (one begun before the report came may predate its writer)."""
        if self.held is None:
            return False
        start = self._cuts[-1] if self._cuts else 0
        return any(isinstance(e, REPORTS) for e in self.held[start:])

    def drop_held(self) -> None:
        """The pane is forgotten while reports wait: nobody will feed them."""
        self.held = None

    # --- inputs (through `step`) ------------------------------------------------------------------

    def _output(self, now: float, data: bytes) -> bool:
        """Bytes the pane wrote. True: hold them for a fresh look at the process.

        A report belongs to the process in front when it was written (RI-2, RI-5). Only
        a look taken after the report arrived can say who that is: any earlier one, however
        recent, may predate the program (a script that reports at once, a program started
        a moment after a poll), and a report filed under the shell is dropped as "the
        process left" as soon as the next poll names the program. So every report waits
        for the manager's next poll, started at once: `Polling` when it starts, then
        `Released` when it has run. Later output joins the held events, in order.
        """
        hold = False
        events = self.decoder.feed(data) if data else []
        if self.explain:
            # said at once, as written: holding a report changes when it counts, not this
            self._discarded += [e for e in events if isinstance(e, Rejected)]
        if events:
            if self.held is not None and len(self.held) < MAX_HELD:
                self.held += events
            elif self.hold_reports and self.held is None and any(isinstance(e, REPORTS) for e in events):
                self.held = list(events)  # looks still under way started before it: cut 0
                hold = True
            else:
                self.classifier.feed(now, events)
                self._evaluate(now)
        if data and self._wants_screen:
            self._settle(now)
        return hold

    def _polling(self) -> None:
        """A poll starts: its look at the process serves the events held so far.

        Looks may overlap (the manager starts one for new reports while an earlier one is
        still on its way): each serves what was held when it started, and they finish in
        the order they started, so `Released` pairs with the oldest `Polling`."""
        self._cuts.append(len(self.held or ()))

    def _released(self, now: float, everything: bool = False) -> bool:
        """The oldest poll announced by `Polling` has run (`everything`: no poll is coming).

        Feeds the events held before that poll started; those that arrived while it ran
        stay held for a later one. True: some are still held (the manager polls again,
        unless a look already under way serves them).
        """
        held = self.held or []
        cut = len(held) if everything else min(self._cuts.pop(0) if self._cuts else 0, len(held))
        if not any(isinstance(e, REPORTS) for e in held[cut:]):
            cut = len(held)  # what came during the poll attributes nothing: no need to wait
        events, rest = held[:cut], held[cut:]
        self.held = rest or None
        # the looks still under way started later: they serve what is left, shifted
        self._cuts = [] if everything else [max(0, c - cut) for c in self._cuts]
        if events:
            self.classifier.feed(now, events)
            self._evaluate(now)
            if self._wants_screen:
                # The held output may have been the last for a while (a THINKTERM contract's
                # blocked with its question printed after it): read the screen once it settles.
                self._settle(now)
        return self.held is not None

    def _listed(self, now: float, info: PaneInfo, obs: Observation | None) -> None:
        """tmux listed the pane; `obs` is its foreground process when it was looked at."""
        before = self.info
        if obs is not None:
            self.info = info
            if obs != self.obs and self._first_look_back(obs):
                obs = self.obs  # see `_first_look_back`: the next look decides
            if obs is not None and obs != self.obs:
                rules_before = self._screen_rules()
                self.classifier.set_process(
                    now, obs.name, obs.pid, obs.observable, obs.why, obs.chain, obs.shell
                )
                self.obs = obs
                self._evaluate(now)
                if self._wants_screen and self._screen_rules() != rules_before:
                    # The program is known now (or another one is): its screen rules
                    # read a screen that may have been drawn already, while the shell
                    # was in front, and that no output will bring back (a prompt that
                    # waits). Read it at once.
                    self._request_capture()
        self.info = info
        self.session = info.session
        if self._recapture:
            self._recapture = False
            if self.classifier.wants_screen:
                self._request_capture()
        if before is None or (before.session, before.window) != (info.session, info.window):
            self._evaluate(now)  # otherwise nothing the update carries changed

    def _first_look_back(self, obs: Observation) -> bool:
        """Is this the first look that sees the foreground back at a shell that is an
        ancestor of what was in front (a shell's command ended)? Then it is applied at
        the next look, not this one.

        A shell back from its command is at its next prompt (the classifier then ends
        its `working`), or still running the command line: `sleep 3 && status done …`
        computes the report (`$(… | base64)`, a `paneboard emit` starting) with the
        shell in front. The report comes a moment later and waits for a look taken
        after it; applied with that look, the shell's return and its `done` arrive
        together, and the pane never shows the moment between. Nothing is held longer
        than one look: the second look that sees the same return applies it."""
        prev = self.obs
        back = (
            obs.name is None
            and obs.pid is not None
            and prev is not None
            and prev.pid is not None
            and obs.pid != prev.pid
            and obs.pid in prev.chain
        )
        if not back or self._back == obs:
            self._back = None
            return False
        self._back = obs
        return True

    def _skipped(self, now: float) -> None:
        """Output of this pane was lost (paused, or a line too long): resync from the screen."""
        self.decoder = _decoder()
        if self.classifier.wants_screen:
            self._settle(now)

    def _disconnected(self) -> None:
        """The link to tmux broke: bytes were missed, timers and captures are void."""
        self.decoder = _decoder()  # never join two halves of a sequence
        self._cuts = []  # the looks under way died with the link
        self._back = None
        self._recapture = True
        self.settle_at = self.deadline_at = None
        self.capturing = self._capture_wanted = False

    def _settled(self, now: float) -> None:
        """The settle time came: capture if the pane stayed quiet, or if it has kept
        writing for `reread` seconds (an animation would otherwise never let a screen be
        read: the prompt just answered would stay on the last one); else wait on."""
        if self.settle_at is None:
            return
        if not self._wants_screen:  # a report since made the screen irrelevant (RI-2)
            self.settle_at = None
            return
        quiet_at = self._last_output + self.settle
        reread_at = self._armed_at + self.reread if self.reread > 0 else None
        if now < quiet_at and (reread_at is None or now < reread_at):
            self.settle_at = quiet_at if reread_at is None else min(quiet_at, reread_at)
            return
        self.settle_at = None
        self._request_capture()

    def _deadline(self, now: float) -> None:
        """The classifier's deadline came: re-evaluate with no new input."""
        self.deadline_at = None
        self._evaluate(now)

    def _captured(self, now: float, screen: str | None) -> None:
        """A capture finished; `screen` None when tmux failed to give one."""
        self.capturing = False
        if screen is not None:
            self.classifier.set_screen(now, screen)
            self._evaluate(now)
        if self._capture_again:
            self._capture_again = False
            self._settle(now)

    def _capture_failed(self) -> None:
        """The capture could not be run at all (the link broke); the next request starts anew."""
        self.capturing = False

    def _seen(self, now: float) -> None:
        """The user looked at this pane: `done` becomes `idle`."""
        self.classifier.mark_seen(now)
        self._evaluate(now)

    def _set_rules(self, now: float, rules: RuleSet | None) -> None:
        """Reloaded screen rules: classify again and re-read the screen where they apply."""
        self.classifier.set_rules(now, rules)
        self._evaluate(now)
        if self._wants_screen:
            self._request_capture()

    def _restored(self, now: float, events: list[Event]) -> None:
        """Reports read back from the pane's stored state after attaching (`late_state`):
        fed exactly like the pane's output, then its screen read where it applies."""
        if events:
            self.classifier.feed(now, events)
            self._evaluate(now)
            if self._wants_screen:
                self._settle(now)

    # --- internals ---------------------------------------------------------------

    def _settle(self, now: float) -> None:
        self._last_output = now
        if self.settle_at is None:
            self._armed_at = now
            self.settle_at = now + self.settle

    def _screen_rules(self) -> tuple[bool, str | None]:
        """Which screen rules read this pane: none, or the agent whose manifest applies."""
        u = self.last_update
        return (self._wants_screen, u.agent if u is not None and self._wants_screen else None)

    def _request_capture(self) -> None:
        if self.capturing:
            self._capture_again = True
        else:
            self._capture_wanted = True

    def _evaluate(self, now: float) -> None:
        self._wants_screen = self.classifier.wants_screen
        if self.info is None:
            return
        c = self.classifier
        cls = c.classification(now)
        obs = self.obs
        # Cut to the wire's limits: the server refuses a pane with a longer value.
        text = clip_text(
            {
                "session": self.info.session,
                "window": self.info.window,
                "process": obs.name if obs else None,
                **{k: getattr(cls, k) for k in _FROM_CLASSIFICATION},
            }
        )
        update = PaneUpdate(
            key=self.key,
            t=now,
            records=tuple(cls.records),
            evidence=c.evidence(),
            **text,
        )
        sig = tuple(getattr(update, k) for k in SIGNATURE_FIELDS)
        if sig != self._last_sig:
            self._last_sig = sig
            self.last_update = self._pending = update
        self.deadline_at = c.next_deadline(now)
