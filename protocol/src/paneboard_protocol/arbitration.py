"""How paneboard combines its evidence into one pane classification — a pure function.

`classify_evidence(evidence, now)` is the whole arbitration. It reads only the
JSON-serialisable evidence dict that `PaneClassifier.evidence()` builds, so the
server, holding nothing but the last evidence a collector sent, re-runs the very
same code as its clock moves (TA-12/TA-13 staleness) and gets the same answer the
collector would.

Identity (who runs here), first row that applies wins (TA-4, RI-1):

| # | evidence                                                                  | agent          |
|---|---------------------------------------------------------------------------|----------------|
| 1 | the foreground process matches a manifest's `process` names               | manifest agent |
| 2 | a contract without `ended`, fresh when it arrived, and either: its leader  | contract agent |
|   | (recorded when it arrived) is still in front, or (no leader was           |                |
|   | observable) it is still fresh (TA-13)                                     |                |
| 3 | live OSC 7501 records (filed by the foreground process or an ancestor)    | `app` (alias)  |
| 4 | left-over `done`/`error` results of a process that has gone (RI-5)        | their agent    |
| 5 | nothing                                                                    | none           |

State, first row that applies wins (TA-5, RI-2); `source` in brackets:

| # | evidence                                                                  | state                  |
|---|---------------------------------------------------------------------------|------------------------|
| 1 | live OSC 7501 records that do not name another agent than the process's   | roll-up (protocol)     |
| 2 | the debounced screen-rule result of the identified agent's manifest       | rule state (screen, or |
|   | (title/progress regions count: that is how native signals act, RI-7)      | native if only title/  |
|   |                                                                           | progress matched)      |
| 3 | the contract's state, when its identity applies, it is fresh and known    | contract (protocol)    |
| 4 | only when the agent has no manifest (detection off, TA-3): a spinner      | working / error        |
|   | glyph leading the title, OSC 9;4;1 -> working, OSC 9;4;2 -> error         | (native)               |
| 5 | left-over results (only on a pane with no live identity, row 4 above)     | done / error (protocol)|
| 6 | an agent is identified but nothing says more                              | idle (none)            |
| 7 | no agent and no record                                                    | none (unclassified)    |

Readings where the spec leaves a choice (documented in docs/classifier.md):
- Roll-up uses P7501-22's order (blocked > error > working > done > idle, ties to
  the most recently updated), not RI-8's: "waiting on you" is what a dashboard must
  surface first. Live records always come before left-over results.
- OSC 9;4;3 (indeterminate) never means working (RI-7).
- A pane whose live records carry no `app` and no other identity still shows the
  records' state, with agent none: a program that reports explicitly is classified.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, Protocol

from paneboard_protocol import contract as contract_mod
from paneboard_protocol.evidence import EVIDENCE_VERSION, EvidenceError, check_evidence
from paneboard_protocol.pane import CLASSIFICATION_FIELDS, Kind, Source, State
from paneboard_protocol.records import ROLLUP_RANK, display_text, effective_app, public_record
from paneboard_protocol.records import alias as _alias

__all__ = [
    "EVIDENCE_VERSION",
    "Classification",
    "ListFacts",
    "RecordFacts",
    "classify_evidence",
    "contract_identity",
    "decision",
    "display_text",
    "display_title",
    "empty_evidence",
    "evidence_deadline",
    "evidence_mark_seen",
    "is_spinner",
    "records_view",
    "title_has_spinner",
]


def is_spinner(ch: str) -> bool:
    """TA-3: a spinner glyph at the start of a title — braille patterns (except the blank
    U+2800), half and quarter circles, and the common dingbat/shape spinners."""
    cp = ord(ch)
    return (
        0x2801 <= cp <= 0x28FF
        or 0x25D0 <= cp <= 0x25D3  # ◐◓◑◒
        or 0x25F4 <= cp <= 0x25F7  # ◴◵◶◷
        or 0x25DC <= cp <= 0x25DF  # ◜◝◞◟ quarter arcs
        or cp in (0x25E2, 0x25E3, 0x25E4, 0x25E5)  # ◢◣◤◥
        or 0x1F550 <= cp <= 0x1F567  # clock faces
        or cp in (0x2599, 0x259B, 0x259C, 0x259F)  # ▙▛▜▟
    )


def title_has_spinner(title: str | None) -> bool:
    """True when the emitted title starts with a spinner glyph (leading spaces ignored)."""
    if not title:
        return False
    stripped = title.lstrip()
    return bool(stripped) and is_spinner(stripped[0])


_ASTERISKS = frozenset("✢✳✶✻✽✺✱✲✴✵✷✸✹❋·*")
"""Asterisk-like glyphs Claude Code cycles through (and leaves, ✳, while it waits)."""

_ATTENTION = ("[ ! ] ", "[ . ] ")
"""Codex's blinking "action required" marker: one frame each."""


@functools.lru_cache(maxsize=1024)
def display_title(title: str | None) -> str | None:
    """The emitted title as a person reads it: spinner frames (braille, half circles,
    asterisks, Codex's blinking `[ ! ]`) off its front, then display-safe (P7501-19).

    The raw title still feeds the rules (a spinner means working); this is what the
    classification passes on, so a pane animating its title does not change — and is
    not re-sent — on every frame."""
    if not title:
        return None
    text = title
    while True:
        text = text.lstrip()
        if text and (is_spinner(text[0]) or text[0] in _ASTERISKS):
            text = text[1:]
            continue
        marker = next((m for m in _ATTENTION if text.startswith(m)), None)
        if marker is None:
            break
        text = text[len(marker) :]
    return display_text(text.rstrip())


@dataclass(frozen=True, slots=True)
class Classification:
    """One pane's classification at an instant (what the collector reports and the server shows)."""

    agent: str | None = None
    state: State | None = None
    kind: Kind | None = None
    msg: str | None = None
    title: str | None = None
    progress: int | None = None
    source: Source | None = None
    since: float | None = None
    observable: bool = True
    records: tuple[dict[str, Any], ...] = field(default=())

    def to_json(self) -> dict[str, Any]:
        """The classification fields of `pane.FIELDS`, records copied."""
        out = {k: getattr(self, k) for k in CLASSIFICATION_FIELDS}
        out["records"] = [dict(r) for r in self.records]
        return out


def empty_evidence() -> dict[str, Any]:
    """The evidence of a pane nothing is known about."""
    return {
        "v": EVIDENCE_VERSION,
        "process": {"name": None, "pid": None, "agent": None, "gen": 0},
        "observable": True,
        "contract": None,
        "records": [],
        "screen": None,
        "native": {"title": None, "progress": None},
        "aliases": {},
        "manifests": [],
        "basis": None,
        "since": None,
        "other_seq": 0,
    }


def contract_identity(evidence: dict[str, Any], now: float) -> bool:
    """RI-1 row 2: does the contract still identify the pane at `now`?"""
    c = evidence.get("contract")
    if not c or c.get("ended") or not c.get("agent"):
        return False
    # A new identity is only ever established by a contract fresh when it arrived.
    if not contract_mod.is_fresh(c, float(c["received"])):
        return False
    if c.get("leader_gen") is not None:
        # A leader was recorded: identity lasts while it is in front; stale ts does not remove it.
        return bool(c["leader_gen"] == evidence["process"]["gen"])
    # No leader was observable: the 6-hour window also expires identity (TA-13).
    return contract_mod.is_fresh(c, now)


def _native_state(native: dict[str, Any]) -> State | None:
    if title_has_spinner(native.get("title")):
        return "working"
    prog = native.get("progress")
    if prog:
        if prog.get("state") == 1:
            return "working"
        if prog.get("state") == 2:
            return "error"
    return None


def _native_progress(native: dict[str, Any]) -> int | None:
    prog = native.get("progress")
    if prog and prog.get("state") in (1, 2, 4):
        percent: int | None = prog.get("percent")
        return percent
    return None


def records_view(records: list[dict[str, Any]]) -> tuple[dict[str, Any], ...]:
    """The per-record list a Classification carries (effective app, display-safe text)."""
    return ListFacts(records, 0, None, {}).public()


class RecordFacts(Protocol):
    """What arbitration needs to know of the records, for one (gen, agent, aliases).

    Two implementations give the same answers: `ListFacts` over an evidence list (the
    server, anything from elsewhere) and the collector's indexed `RecordStore`, which
    answers without looking at every record (see `paneboard_protocol.records`)."""

    def live_winner(self) -> dict[str, Any] | None:
        """Roll-up (P7501-22) of live records that do not name another agent (RI-2)."""

    def live_agent(self) -> str | None:
        """The winner's agent, else that of the newest such record naming one (RI-1 row 3)."""

    def leftover_winner(self) -> dict[str, Any] | None:
        """Roll-up of the records earlier processes left (RI-5)."""

    def leftover_agent(self) -> str | None:
        """The left-over winner's agent: its app, else who the pane was when it was filed."""

    def answer(self, live: bool) -> dict[str, Any] | None:
        """The answer rule: when every record of the set (live, or left-over) is `done`
        and exactly one carries a message newer than the pane's last report of another
        state, that record (its message is the pane's); else None."""


class ListFacts:
    """`RecordFacts` over a plain list of evidence records (O(n), computed once)."""

    def __init__(
        self,
        records: list[dict[str, Any]],
        gen: int,
        proc_agent: str | None,
        aliases: dict[str, str],
        other_seq: int | None = None,
    ) -> None:
        by_id = {r["id"]: r for r in records}
        apps: list[str | None] = []
        for r in records:  # effective_app, inlined: most records carry their own app
            app = r.get("app")
            apps.append(app if app else effective_app(records, r, by_id))
        self._records = records
        self._apps = apps
        self._aliases = aliases
        pairs = list(zip(records, apps, strict=True))
        live = [p for p in pairs if p[0]["gen"] == gen]
        if proc_agent:
            # RI-2: a report that names a different agent than the process-identified one does not apply.
            live = [p for p in live if _alias(aliases, p[1]) in (None, proc_agent)]
        self._live = live
        self._leftover = [p for p in pairs if p[0]["gen"] != gen]
        self._live_win = self._roll_up(live)
        self._left_win = self._roll_up(self._leftover)
        self._other_seq = other_seq

    @staticmethod
    def _roll_up(pairs: list[tuple[dict[str, Any], str | None]]) -> tuple[dict[str, Any], str | None] | None:
        """`roll_up` over (record, app) pairs: the first of the most pressing state and
        highest seq, in one pass."""
        best = None
        best_key: tuple[int, int] | None = None
        last = len(ROLLUP_RANK)
        for p in pairs:
            r = p[0]
            key = (ROLLUP_RANK.get(r["state"], last), -r["seq"])
            if best_key is None or key < best_key:
                best, best_key = p, key
        return best

    def live_winner(self) -> dict[str, Any] | None:
        return None if self._live_win is None else self._live_win[0]

    def live_agent(self) -> str | None:
        agent = None if self._live_win is None else _alias(self._aliases, self._live_win[1])
        if agent is None:
            for _, app in reversed(self._live):  # newest first
                agent = _alias(self._aliases, app)
                if agent:
                    break
        return agent

    def leftover_winner(self) -> dict[str, Any] | None:
        return None if self._left_win is None else self._left_win[0]

    def leftover_agent(self) -> str | None:
        if self._left_win is None:
            return None
        rec, app = self._left_win
        return _alias(self._aliases, app) or rec.get("agent")

    def answer(self, live: bool) -> dict[str, Any] | None:
        other = self._other_seq
        if other is None:
            return None  # evidence of version 1: the rule did not exist yet
        pairs = self._live if live else self._leftover
        if any(r["state"] != "done" for r, _ in pairs):
            return None
        said = [r for r, _ in pairs if r["seq"] > other and display_text(r["msg"])]
        return said[0] if len(said) == 1 else None

    def public(self) -> tuple[dict[str, Any], ...]:
        return tuple(public_record(r, a) for r, a in zip(self._records, self._apps, strict=True))


def _list_facts(evidence: dict[str, Any]) -> ListFacts:
    proc = evidence["process"]
    return ListFacts(
        list(evidence.get("records") or []),
        proc["gen"],
        proc.get("agent"),
        evidence.get("aliases") or {},
        evidence.get("other_seq"),
    )


def _decide(evidence: dict[str, Any], now: float, facts: RecordFacts) -> dict[str, Any]:
    """Rows of the two tables above; returns the classification's fields except `since`,
    and under `by` which evidence decided the state (what `paneboard_protocol.why` puts
    in words): ("record", the record, live?), ("screen", the reading), ("contract", the
    contract), ("native", "title" | "progress"), ("identity", None), or None."""
    native = evidence.get("native") or {}
    out: dict[str, Any] = {
        "agent": None,
        "state": None,
        "kind": None,
        "msg": None,
        "title": display_title(native.get("title")),
        "progress": _native_progress(native),
        "source": None,
        "by": None,
    }

    # Identity.
    agent = evidence["process"].get("agent")
    has_contract = contract_identity(evidence, now)
    if agent is None and has_contract:
        agent = evidence["contract"]["agent"]
    winner = facts.live_winner()
    live = True
    if agent is None and winner is not None:
        agent = facts.live_agent()
    if agent is None and winner is None:
        winner = facts.leftover_winner()
        live = False
        if winner is not None:
            agent = facts.leftover_agent()
    out["agent"] = agent

    # State.
    if winner is not None:
        out["state"] = winner["state"]
        out["kind"] = winner["kind"] if winner["state"] == "blocked" else None
        out["msg"] = display_text(winner["msg"])
        if out["msg"] is None and winner["state"] == "done":
            # The answer rule (departs from P7501-22 for the message alone): a `done`
            # without text does not hide the one answer another `done` carries.
            said = facts.answer(live)
            if said is not None:
                out["msg"] = display_text(said["msg"])
        if winner.get("title"):
            out["title"] = display_text(winner["title"])
        if winner.get("progress") is not None:
            out["progress"] = winner["progress"]
        out["source"] = "protocol"
        out["by"] = ("record", winner, live)
        return out
    if agent is None:
        return out
    screen = evidence.get("screen")
    if screen and screen.get("agent") == agent and screen.get("result"):
        res = screen["result"]
        out["state"] = res["state"]
        out["kind"] = res.get("kind") if res["state"] == "blocked" else None
        # The prompt's text the rule read off the screen (already one bounded line; the
        # evidence may come from elsewhere, so it is made display-safe here like any msg).
        out["msg"] = display_text(res.get("msg")) if res["state"] == "blocked" else None
        out["source"] = "native" if res.get("native") else "screen"
        out["by"] = ("screen", res)
        return out
    c = evidence.get("contract")
    if has_contract and c and c.get("state") and contract_mod.is_fresh(c, now) and c["agent"] == agent:
        out["state"] = c["state"]
        out["source"] = "protocol"
        if c["state"] == "blocked" and screen and screen.get("question"):
            # A contract says blocked but carries no text: the question on its screen.
            out["msg"] = display_text(screen["question"])
        out["by"] = ("contract", c)
        return out
    if agent not in (evidence.get("manifests") or []):
        state = _native_state(native)
        if state is not None:
            out["state"] = state
            out["source"] = "native"
            out["by"] = ("native", "title" if title_has_spinner(native.get("title")) else "progress")
            return out
    out["state"] = "idle"
    out["by"] = ("identity", None)
    return out


def decision(evidence: dict[str, Any], now: float) -> dict[str, Any]:
    """What decided the classification at `now` (`_decide`'s fields and its `by`), for
    evidence from elsewhere: checked first, like `classify_evidence`."""
    check_evidence(evidence)
    return _decide(evidence, now, _list_facts(evidence))


def classify_evidence(
    evidence: dict[str, Any],
    now: float,
    *,
    check: bool = True,
    public_records: tuple[dict[str, Any], ...] | None = None,
    facts: RecordFacts | None = None,
) -> Classification:
    """The pane's classification at `now`, from evidence alone (pure; the server re-runs it).

    Evidence from elsewhere is checked first (`EvidenceError`, a ValueError naming the
    bad field); `check=False` is for evidence this process just built itself, which may
    also hand in `public_records`, its cached `records_view(evidence["records"])`, and
    `facts`, its own `RecordFacts` of those records (then `evidence["records"]` is not read).

    `since` is the evidence's own `since` while the outcome (agent, state) is what the
    evidence was built with; when time alone changed it (staleness), it is the
    staleness instant that did it.
    """
    if check:
        check_evidence(evidence)
        if isinstance(now, bool) or not isinstance(now, int | float) or now != now:
            raise EvidenceError("now must be a number")
    list_facts: ListFacts | None = None
    if facts is None:
        facts = list_facts = _list_facts(evidence)
    d = _decide(evidence, now, facts)
    basis = evidence.get("basis")
    bsince = evidence.get("since")
    if basis is not None and list(basis) == [d["agent"], d["state"]] and bsince is not None:
        since = bsince
    else:
        lower = float("-inf") if bsince is None else float(bsince)
        c = evidence.get("contract")
        instants = [t for t in (contract_mod.staleness_instants(c) if c else []) if lower < t <= now]
        since = max(instants) if instants else now
    return Classification(
        agent=d["agent"],
        state=d["state"],
        kind=d["kind"],
        msg=d["msg"],
        title=d["title"],
        progress=d["progress"],
        source=d["source"],
        since=since,
        observable=bool(evidence.get("observable", True)),
        records=public_records
        if public_records is not None
        else (list_facts or _list_facts(evidence)).public(),
    )


def evidence_deadline(evidence: dict[str, Any], now: float, *, check: bool = True) -> float | None:
    """The next instant after `now` at which time alone may change the classification."""
    if check:
        check_evidence(evidence)
    return contract_mod.next_instant(evidence.get("contract"), now)


def evidence_mark_seen(evidence: dict[str, Any], now: float) -> dict[str, Any]:
    """The evidence after the user has looked at the pane at `now` (pure).

    The same rule as `PaneClassifier.mark_seen`, for a server that learns of the look
    first: the live process's `done` records become `idle`; left-over `done`/`error`
    results of an earlier process go (P7501-8, RI-5). `basis`/`since` are carried so
    that `classify_evidence(new, now).since` is `now` when the look changed the state.
    """
    check_evidence(evidence)
    before = classify_evidence(evidence, now, check=False)
    gen = evidence["process"]["gen"]
    seq = max((r["seq"] for r in evidence["records"]), default=0)
    records = []
    for r in sorted(evidence["records"], key=lambda r: r["seq"]):
        if r["gen"] != gen:
            if r["state"] in ("done", "error"):
                continue
        elif r["state"] == "done":
            seq += 1
            r = {**r, "state": "idle", "updated": now, "seq": seq}
        records.append(dict(r))
    records.sort(key=lambda r: r["seq"])
    new = {**evidence, "records": records, "basis": [before.agent, before.state], "since": before.since}
    after = classify_evidence(new, now, check=False)
    if (after.agent, after.state) != (before.agent, before.state):
        new["basis"] = [after.agent, after.state]
        new["since"] = now
    return new
