"""The per-pane classifier: gathers evidence, lets `arbitration` decide.

`PaneClassifier` is driven by `(now, input)` pairs and has no clock, thread or I/O of
its own, so the collector runs it live, tests move time by hand, and `paneboard
replay` re-runs recorded sessions. It only *gathers* evidence — the OSC 7501 record
store, the THINKTERM_AGENT contract (with the leader that was in front when it
arrived), the foreground process and whether it is observable, the debounced
screen-rule reading, the title/progress the program emitted — and hands a
JSON-serialisable snapshot of it to the pure `classify_evidence` (precedence tables
in `paneboard_protocol.arbitration`). Hence, always:

    c.classification(now) == classify_evidence(c.evidence(), now)

(debounce is the only collector-side state: `classification(now)` first releases a
pending debounce whose deadline has passed, then snapshots). The server stores the
evidence and re-runs `classify_evidence` as its clock moves, which is how TA-12/TA-13
staleness is enforced by the same code on both sides.

Which decoder events matter: `StatusReport`, `ClearReport`, `AgentReport`, `Title`
(codes 0 and 2), `Progress`, `PromptMark` (A), `Reset`, and `Rejected` with
`proto == "thinkterm"` carrying `partial["agent"]` (RI-6: a contract with an unknown
state still identifies the agent) — so run the decoder with `rejections=True`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from typing import Any

from paneboard_protocol import contract as contract_mod
from paneboard_protocol.arbitration import (
    EVIDENCE_VERSION,
    Classification,
    classify_evidence,
    evidence_deadline,
    evidence_mark_seen,
)
from paneboard_protocol.debounce import Debouncer
from paneboard_protocol.events import (
    AgentReport,
    AgentState,
    ClearReport,
    Event,
    Progress,
    PromptMark,
    Rejected,
    Reset,
    StatusReport,
    Title,
)
from paneboard_protocol.evidence import EvidenceError
from paneboard_protocol.identity import process_identity
from paneboard_protocol.records import RecordStore
from paneboard_protocol.rules import Manifest, RuleSet
from paneboard_protocol.rules.question import screen_question

__all__ = [
    "DEFAULT_TRANSPORTS",
    "Classification",
    "EvidenceError",
    "PaneClassifier",
    "classify_evidence",
    "evidence_deadline",
    "evidence_mark_seen",
]

DEFAULT_TRANSPORTS = frozenset(
    {
        "ssh",
        "mosh",
        "mosh-client",
        "telnet",
        "tmux",
        "screen",
        "docker",
        "kubectl",
        "podman",
        "minicom",
        "picocom",
        "cu",
        "et",
        "autossh",
    }
)
"""Foreground processes that are transports to somewhere else: they never identify a
pane and make it unobservable (spec section 3; the collector may pass its own list)."""

DEFAULT_ALIASES = {"claude-code": "claude"}
"""RI-1 row 3, even without manifests."""

MAX_CHAIN = 64
"""Ancestors of the process in front kept (nearest first): far deeper than any real
nesting of shells, and the list arrives from the watched host."""

MAX_NAME = 256
"""Characters of a writer's name kept (the evidence's bound for names)."""

MAX_WHY = 512
"""Characters of `process.why` kept in the evidence."""

MAX_SCREEN = 256 * 1024
"""Characters of screen text kept: far more than 64 rows of any real terminal."""


class PaneClassifier:
    """One pane's classifier. See the module docstring; time is always a parameter."""

    def __init__(
        self, rules: RuleSet | None = None, *, transports: Iterable[str] = DEFAULT_TRANSPORTS
    ) -> None:
        self._rules = rules
        self._transports = frozenset(transports)
        self._store = RecordStore()
        self._gen = 0
        self._proc_name: str | None = None
        self._proc_pid: int | None = None
        self._proc_agent: str | None = None
        self._proc_why: str | None = None
        self._proc_parent: int | None = None  # the nearest ancestor of the process in front
        self._shell: str | None = None  # the shell's name while a shell (name None) is in front
        self._observable = True
        self._contract: dict[str, Any] | None = None
        self._title: str | None = None
        self._progress: dict[str, Any] | None = None
        self._screen_text: str | None = None
        self._question_of: str | None = None  # the screen `_question` was read from
        self._question: str | None = None
        self._debounce = Debouncer()
        self._screen_agent: str | None = None
        self._basis: tuple[str | None, str | None] | None = None
        self._since: float | None = None
        self._last: Classification | None = None
        self._origin: tuple[float, tuple[str | None, str | None] | None, float | None] | None = None
        self._aliases: dict[str, str] = {}
        self._manifest_agents: list[str] = []
        self._rules_changed()

    # ------------------------------------------------------------ inputs

    def set_rules(self, now: float, rules: RuleSet | None) -> None:
        """Swap in a reloaded RuleSet; the screen is read again at once."""
        self._advance(now)
        self._rules = rules
        self._rules_changed()
        if self._proc_name is not None:
            self._proc_agent = self._identify(self._proc_name)
        self._debounce.reset()
        self._reread(now)
        self._refresh(now, caused=True)

    def feed(self, now: float, events: Iterable[Event]) -> None:
        """Decoded events from the pane's output, in stream order."""
        self._advance(now)
        events = list(events)
        if not events:
            return  # output without a sequence in it changes nothing
        native_changed = False
        for ev in events:
            if isinstance(ev, StatusReport):
                writer = (self._proc_name or self._shell or "")[:MAX_NAME] or None  # the evidence's bound
                self._store.report(now, ev, self._gen, self._current_agent(), self._proc_pid, writer)
            elif isinstance(ev, ClearReport):
                self._store.clear(ev.id)
            elif isinstance(ev, AgentReport):
                self._contract_report(now, ev.agent, ev.state, ev.session, ev.ts, ev.ended)
            elif isinstance(ev, Rejected):
                partial = ev.partial or {}
                if ev.proto == "thinkterm" and isinstance(partial.get("agent"), str) and partial["agent"]:
                    ts = partial.get("ts")
                    self._contract_report(
                        now,
                        partial["agent"],
                        None,
                        partial.get("session"),
                        ts if isinstance(ts, int) else None,
                        bool(partial.get("ended", False)),
                    )
            elif isinstance(ev, Title):
                if ev.code in (0, 2):
                    self._title = ev.title or None
                    native_changed = True
            elif isinstance(ev, Progress):
                self._progress = {"state": ev.state, "percent": ev.percent}
                native_changed = True
            elif isinstance(ev, PromptMark):
                # a new *shell* prompt (P7501-8): never while an agent a manifest
                # identifies is in front, whose own marks these are (Pi writes an A at
                # every message zone); its exit, when the shell returns, ends them
                if ev.mark == "A" and self._proc_agent is None:
                    self._store.end_live()
            elif isinstance(ev, Reset):
                self._store.reset()
        if native_changed:
            self._reread(now)
        self._refresh(now, caused=True)

    def set_process(
        self,
        now: float,
        name: str | None,
        pid: int | None = None,
        observable: bool = True,
        why: str | None = None,
        chain: Sequence[int] = (),
        shell: str | None = None,
    ) -> None:
        """The pane's foreground process changed (None: back at the shell, or it exited).

        `why`: in words, why this process names the pane (a wrapper's child was chosen,
        see `identity.choose`); carried in the evidence for people, never classified.
        `chain`: the pids of the process's ancestors, nearest first, as far as they are
        known (empty: none known). A record stays live while its writer is the process
        in front or one of these (RI-2), unless a manifest identifies the process or it is
        a transport (the pane is then unobservable).
        `shell`: when `name` is None because a shell is in front, its name (`bash`), so
        that the board can say which program wrote a report (never its arguments)."""
        self._advance(now)
        self._proc_why = why[:MAX_WHY] if why else None
        self._shell = (process_identity(shell) or "")[:MAX_NAME] or None if name is None and shell else None
        ident = process_identity(name)
        if ident is not None and ident in self._transports:
            observable = False
        if (ident, pid) != (self._proc_name, self._proc_pid):
            agent = self._identify(ident)
            ancestors = tuple(p for p in list(chain)[:MAX_CHAIN] if isinstance(p, int) and p > 0)
            self._proc_parent = ancestors[0] if ancestors else None
            if agent is None and pid is not None and observable:
                # A command the writer (or its ancestor) runs: its records follow it,
                # and end when the foreground comes back to the writer (P7501-8, RI-2).
                # Not into a transport: what is behind `ssh` is another machine's, and the
                # pane shows its last known state instead (spec section 3).
                self._store.follow(self._gen, self._gen + 1, self._proc_pid, pid, ancestors)
            else:
                # The process in front left it: P7501-8 / RI-5 lifecycle. A manifest
                # agent is classified on its own evidence, never on an ancestor's reports.
                self._store.end_live()
            self._gen += 1
            self._proc_name, self._proc_pid = ident, pid
            self._proc_agent = agent
            self._contract = None  # TA-4: a variable left behind never labels the next program
            self._title = None  # TA-18: cleared when the pane's program changes
            self._progress = None
            self._screen_text = None  # the old program's last frame says nothing of the new one
            if self._proc_agent is not None:
                self._store.drop_results(self._gen)  # another agent starts (RI-5)
            self._debounce.reset()
        self._observable = bool(observable)
        self._reread(now)
        self._refresh(now, caused=True)

    def set_screen(self, now: float, text: str | None) -> None:
        """The pane's visible screen (tmux capture-pane), read through the agent's manifest."""
        self._advance(now)
        if text is not None and len(text) > MAX_SCREEN:
            text = text[-MAX_SCREEN:]  # untrusted and only the bottom rows are read (RI-9)
        self._screen_text = text
        self._reread(now)
        self._refresh(now, caused=True)

    def mark_seen(self, now: float) -> None:
        """The user looked at the pane: `done` becomes `idle`, left-over results go (P7501-8)."""
        self._advance(now)
        self._store.seen(now, self._gen)
        # A look is an event of its own, never part of a same-instant flicker: `since`
        # becomes `now` exactly as `evidence_mark_seen` on the server makes it.
        self._origin = None
        self._refresh(now, caused=True)

    # ------------------------------------------------------------ outputs

    def classification(self, now: float) -> Classification:
        """The classification at `now` (releasing any debounce whose time has come)."""
        self._advance(now)
        assert self._last is not None
        return self._last

    def next_deadline(self, now: float) -> float | None:
        """The next instant after `now` at which the classification may change on its own."""
        self._advance(now)
        # evidence_deadline reads only the contract: ask it directly, not via a snapshot.
        candidates = [contract_mod.next_instant(self._contract, now), self._debounce.deadline()]
        later = [t for t in candidates if t is not None and t > now]
        return min(later) if later else None

    @property
    def wants_screen(self) -> bool:
        """Should the collector capture this pane's screen? Only when a manifest applies
        and no live OSC 7501 record makes the screen irrelevant (RI-2) — or when a
        THINKTERM_AGENT contract says blocked, to read its question off the screen."""
        last = self._last
        if last is None or self._store.has_gen(self._gen):
            return False
        if self._manifest(last.agent) is None:
            # A contract's `blocked` has no text; the question is on the screen.
            return last.state == "blocked" and last.source == "protocol"
        return True

    def evidence(self) -> dict[str, Any]:
        """Everything arbitration needs, as plain JSON types (fresh copies: safe to keep).

        Every nested dict here is flat, so one level of copying is a deep copy."""
        ev = self._evidence()
        ev["records"] = self._store.snapshot()  # only here: feeding never builds the list
        if ev["contract"] is not None:
            ev["contract"] = dict(ev["contract"])
        ev["aliases"] = dict(ev["aliases"])
        ev["manifests"] = list(ev["manifests"])
        return ev

    def _rules_changed(self) -> None:
        aliases = dict(DEFAULT_ALIASES)
        if self._rules is not None:
            aliases.update(self._rules.aliases)
        self._aliases = aliases
        self._manifest_agents = sorted(self._rules.agents) if self._rules is not None else []

    def _classify(self, at: float, evidence: dict[str, Any] | None = None) -> Classification:
        """classify_evidence on this pane's own evidence, without the copies and checks.

        The records come from the store's index (`RecordFacts`) and its cached public
        list, so this costs the same with 1 record as with 256."""
        ev = self._evidence() if evidence is None else evidence
        facts = self._store.facts(self._gen, self._proc_agent, self._aliases)
        return classify_evidence(ev, at, check=False, public_records=self._store.public(), facts=facts)

    def _evidence(self) -> dict[str, Any]:
        """The evidence, sharing the contract (internal use only). `records` is None:
        arbitration reads them from the store's facts; `evidence()` fills them in."""
        reading = self._debounce.released if self._debounce.primed else None
        return {
            "v": EVIDENCE_VERSION,
            "process": {
                "name": self._proc_name,
                "pid": self._proc_pid,
                "agent": self._proc_agent,
                "gen": self._gen,
                "why": self._proc_why,
                "parent": self._proc_parent,
            },
            "observable": self._observable,
            "contract": self._contract,
            "records": None,
            "screen": self._contract_screen()
            if self._screen_agent is None
            else {"agent": self._screen_agent, "result": None if reading is None else dict(reading)},
            "native": {
                "title": self._title,
                "progress": None if self._progress is None else dict(self._progress),
            },
            "aliases": self._aliases,
            "manifests": self._manifest_agents,
            "basis": None if self._basis is None else list(self._basis),
            "since": self._since,
            "other_seq": self._store.other_seq,
        }

    # ------------------------------------------------------------ internals

    def _contract_screen(self) -> dict[str, Any] | None:
        """The screen's question for a pane no manifest reads (used only while its
        contract says blocked), computed once per captured screen."""
        text = self._screen_text
        if text is None or self._contract is None or self._contract.get("state") != "blocked":
            return None
        if self._question_of is not text:
            self._question_of, self._question = text, screen_question(text)
        return None if self._question is None else {"agent": None, "result": None, "question": self._question}

    def _identify(self, ident: str | None) -> str | None:
        if ident is None or ident in self._transports or self._rules is None:
            return None
        m = self._rules.for_process(ident)
        return m.agent if m is not None else None

    def _manifest(self, agent: str | None) -> Manifest | None:
        return self._rules.for_agent(agent) if self._rules is not None else None

    def _current_agent(self) -> str | None:
        if self._proc_agent is not None:
            return self._proc_agent
        return self._last.agent if self._last is not None else None

    def _contract_report(
        self,
        now: float,
        agent: str,
        state: AgentState | None,
        session: str | None,
        ts: int | None,
        ended: bool,
    ) -> None:
        if ended and self._observable and self._proc_name is not None:
            # TA-15 / RI-6: a live process beats its own farewell.
            return
        before = None if self._contract is None else self._contract.get("state")
        if self._screen_agent is None and state != before:
            # No manifest reads this screen, and what it showed belongs to the old state:
            # a new `blocked` must not carry the last one's question.
            self._screen_text = None
        self._contract = {
            "agent": agent,
            "state": state,
            "session": session,
            "ts": ts,
            "ended": bool(ended),
            "received": now,
            # RI-1: on an observable pane the leader in front is recorded with the contract.
            "leader_gen": self._gen if self._observable else None,
            "leader": self._proc_name if self._observable else None,
        }

    def _reread(self, now: float) -> None:
        """Read the stored screen through the manifest of the agent currently identified."""
        agent = self._screen_target(now)
        manifest = self._manifest(agent)
        if manifest is None:
            self._screen_agent = None
            self._debounce.reset()
            return
        if agent != self._screen_agent:
            self._debounce.reset()
            self._screen_agent = agent
        if self._screen_text is None and self._title is None and self._progress is None:
            return
        prog = self._progress
        progress_text = (
            "" if prog is None else f"4;{prog['state']};{'' if prog['percent'] is None else prog['percent']}"
        )
        match = manifest.match(self._screen_text, self._title, progress_text)
        if match is not None and match.state == "unknown":
            return  # a rule that holds the previous reading (transcript viewer, menu)
        self._debounce.offer(now, None if match is None else match.reading())

    def _screen_target(self, now: float) -> str | None:
        if self._proc_agent is not None:
            return self._proc_agent
        d = self._classify(now, self._snapshot_without_screen())
        return d.agent

    def _snapshot_without_screen(self) -> dict[str, Any]:
        ev = self._evidence()
        ev["screen"] = None
        return ev

    def _advance(self, now: float) -> None:
        """Let time pass: release due debounces (attributed to their deadline), then staleness."""
        if self._last is None:
            self._refresh(now, caused=True)
        released = self._debounce.advance(now)
        if released is not None:
            self._refresh(released, caused=True)
        if self._contract is not None and contract_mod.subject_to_staleness(self._contract):
            self._refresh(now, caused=False)  # only a contract's ts makes time alone matter

    def _refresh(self, at: float, caused: bool) -> None:
        c = self._classify(at)
        if self._screen_agent != (c.agent if self._manifest(c.agent) is not None else None):
            # The identity moved (e.g. a contract arrived or expired): read the screen for it.
            self._reread(at)
            c = self._classify(at)
        key = (c.agent, c.state)
        if key != self._basis:
            origin = self._origin
            if origin is not None and origin[0] == at and origin[1] == key:
                # Changes within one instant collapse: a flicker and back is no change, so
                # chunking the same input differently never moves `since`.
                self._basis, self._since = origin[1], origin[2]
                self._origin = None
            else:
                if origin is None or origin[0] != at:
                    self._origin = (at, self._basis, self._since)
                self._basis = key
                self._since = at if caused else c.since
            c = dataclasses.replace(c, since=self._since)  # what classify_evidence now returns
        self._last = c
