"""A pane's explicit state, kept in tmux pane user options for a collector that attaches late.

tmux keeps no raw history (P7501-9: records are write-only, P7501-7: no re-send), so a
collector that starts after a program reported has lost the report. `paneboard run` and
`paneboard emit` therefore also leave the pane's *current* explicit state where a later
collector can read it without writing to the pane: two pane user options,

    @paneboard-7501       v1 pg=<pgid> <pairs> <pairs> ...   (the live OSC 7501 records)
    @paneboard-thinkterm  v1 pg=<pgid> <base64 contract>      (the last THINKTERM_AGENT value)

`<pairs>` is one record exactly as its report's body (`state=blocked:kind=...:msg=<b64>`),
least recently updated first; `pg` is the foreground process group that wrote it (the
collector compares it with the pane's foreground group, RI-2 / P7501-8). Everything here
is pure: `LiveState` is the writer's bookkeeping, `parse_7501`/`parse_agent` read a value
back into the decoder's events, and `restore_events` decides what a collector feeds.

Option values are untrusted pane output (any program in the pane can set them): the
reader accepts only a strict, bounded alphabet and rebuilds wire sequences that go
through the ordinary `Decoder`, so every protocol limit (P7501-15 … P7501-20, TA-7 …)
applies exactly as to bytes read from the pane.
"""

from __future__ import annotations

import base64
import re
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from paneboard_protocol.decoder import MAX_OSC, Decoder
from paneboard_protocol.encode import agent_value, encode_report
from paneboard_protocol.events import AgentReport, ClearReport, Event, PromptMark, Reset, StatusReport
from paneboard_protocol.pane import State
from paneboard_protocol.records import RESULT_STATES, is_under

OPTION_7501 = "@paneboard-7501"
OPTION_AGENT = "@paneboard-thinkterm"
VERSION = "v1"
#: records kept in the option: the least a reader must keep (P7501-21)
MAX_RECORDS = 64
#: bytes of the whole @paneboard-7501 value; the oldest records go first to fit. With
#: the contract's value this fits one tmux command (tmux refuses commands over 16 KiB).
MAX_7501_VALUE = 8192
#: bytes of the whole @paneboard-thinkterm value (one sequence's worth, P7501-20)
MAX_AGENT_VALUE = MAX_OSC

_OSC7501 = b"\x1b]7501;"
_ST = b"\x1b\\"
_AGENT_OSC = b"\x1b]1337;SetUserVar=THINKTERM_AGENT="
_BODY = re.compile(rf"[A-Za-z0-9_.,+/=:-]{{1,{MAX_OSC - len(_OSC7501) - len(_ST)}}}")
_B64 = re.compile(r"[A-Za-z0-9+/]{1,4000}={0,2}")
_PG = re.compile(r"pg=([1-9][0-9]{0,9})")


def _body(ev: StatusReport) -> str | None:
    """The record's canonical pairs (re-encoded, so only what a reader keeps is stored)."""
    try:
        seq = encode_report(
            ev.state, kind=ev.kind, msg=ev.msg, title=ev.title, id=ev.id, app=ev.app, progress=ev.progress
        )
    except ValueError:
        return None
    return seq[len(_OSC7501) : -len(_ST)].decode("ascii")


class LiveState:
    """The writer's copy of the pane's live records and contract, in option form.

    `apply(events)` takes decoder events in stream order (what the program wrote) and
    says which options changed; `value_7501()`/`value_agent()` give the option values
    (None: unset the option).
    """

    def __init__(self, pg: int | None) -> None:
        self.pg = pg
        self.records: OrderedDict[str, tuple[State, str]] = OrderedDict()  # id -> (state, pairs)
        self.agent: str | None = None  # base64 of the contract text

    def apply(self, events: Iterable[Event]) -> set[str]:
        changed: set[str] = set()
        for ev in events:
            if isinstance(ev, StatusReport):
                rid = ev.id or ""
                self.records.pop(rid, None)
                body = _body(ev)
                if body is not None:
                    self.records[rid] = (ev.state, body)
                    while len(self.records) > MAX_RECORDS:
                        self.records.popitem(last=False)  # P7501-21: least recently updated
                changed.add(OPTION_7501)
            elif isinstance(ev, ClearReport):
                if ev.id:
                    for rid in [r for r in self.records if is_under(r, ev.id)]:
                        del self.records[rid]
                else:
                    self.records.clear()
                changed.add(OPTION_7501)
            elif isinstance(ev, Reset) or (isinstance(ev, PromptMark) and ev.mark == "A"):
                if isinstance(ev, Reset):
                    self.records.clear()
                else:
                    self.end_live()
                changed.add(OPTION_7501)
            elif isinstance(ev, AgentReport):
                try:
                    text = agent_value(ev.agent, ev.state, session=ev.session, ts=ev.ts, ended=ev.ended)
                except ValueError:
                    self.agent = None
                else:
                    self.agent = base64.b64encode(text.encode("utf-8")).decode("ascii")
                changed.add(OPTION_AGENT)
        return changed

    def end_live(self) -> None:
        """P7501-8: the writer left the front: working, blocked and idle records end."""
        for rid in [r for r, (state, _) in self.records.items() if state not in RESULT_STATES]:
            del self.records[rid]

    def adopt(self, stored: Stored | None, kind: str) -> None:
        """Start from what the option already holds (emit is one-shot: read, change, write).

        Records of another writer (a different `pg`) lose their live ones (P7501-8), and
        its contract is not carried over (TA-4)."""
        if stored is None:
            return
        if kind == OPTION_7501:
            self.apply(stored.events)
            if stored.pg != self.pg:
                self.end_live()
        elif stored.pg == self.pg:
            self.apply(stored.events)

    def value_7501(self) -> str | None:
        bodies = [body for _, body in self.records.values()]
        head = f"{VERSION} pg={self.pg}" if self.pg else VERSION
        while bodies and len(head) + sum(len(b) + 1 for b in bodies) > MAX_7501_VALUE:
            bodies.pop(0)  # the least recently updated goes first
        return " ".join([head, *bodies]) if bodies else None

    def value_agent(self) -> str | None:
        if self.agent is None:
            return None
        head = f"{VERSION} pg={self.pg}" if self.pg else VERSION
        return f"{head} {self.agent}"

    def value(self, option: str) -> str | None:
        return self.value_7501() if option == OPTION_7501 else self.value_agent()


@dataclass(frozen=True, slots=True)
class Stored:
    """An option value read back: who wrote it, and the events it stands for."""

    pg: int | None
    events: tuple[Event, ...]


def _envelope(value: str | None, limit: int) -> tuple[int | None, list[str]] | None:
    """Split `v1 [pg=N] token...`; None for anything else (refused whole)."""
    if not value or len(value) > limit or not value.isascii() or not value.isprintable():
        return None
    words = value.split(" ")
    if words[0] != VERSION or "" in words:
        return None
    pg = None
    rest = words[1:]
    if rest and rest[0].startswith("pg="):
        m = _PG.fullmatch(rest[0])
        if m is None:
            return None
        pg, rest = int(m.group(1)), rest[1:]
    return pg, rest


def parse_7501(value: str | None) -> Stored | None:
    """The records an @paneboard-7501 value holds, decoded as the wire would be; None if refused."""
    env = _envelope(value, MAX_7501_VALUE)
    if env is None:
        return None
    pg, bodies = env
    if not bodies or len(bodies) > MAX_RECORDS or not all(_BODY.fullmatch(b) for b in bodies):
        return None
    events: list[Event] = []
    for body in bodies:
        decoded = Decoder().feed(_OSC7501 + body.encode("ascii") + _ST)
        # one report per body, and only a report: a clear or a probe is never stored state
        events += [e for e in decoded if isinstance(e, StatusReport)]
    return Stored(pg, tuple(events)) if events else None


def parse_agent(value: str | None) -> Stored | None:
    """The contract an @paneboard-thinkterm value holds; None if refused."""
    env = _envelope(value, MAX_AGENT_VALUE)
    if env is None:
        return None
    pg, words = env
    if len(words) != 1 or not _B64.fullmatch(words[0]):
        return None
    decoded = Decoder().feed(_AGENT_OSC + words[0].encode("ascii") + b"\x07")
    events = tuple(e for e in decoded if isinstance(e, AgentReport))
    return Stored(pg, events) if events else None


# --- the collector's side ------------------------------------------------------------

_COMPARED = ("state", "kind", "app", "msg", "title", "progress")


def _same_records(stored: Sequence[StatusReport], records: Sequence[dict[str, Any]]) -> bool:
    """Does the classifier already hold exactly these records (a `done` it has since
    marked seen counting as the same)?"""
    have = {r["id"]: r for r in records}
    if set(have) != {e.id or "" for e in stored}:
        return False
    for e in stored:
        r = have[e.id or ""]
        for key in _COMPARED:
            mine, theirs = getattr(e, key), r.get(key)
            if key == "state" and mine == "done" and theirs == "idle":
                continue
            if mine != theirs:
                return False
    return True


def _same_contract(stored: AgentReport, contract: dict[str, Any] | None) -> bool:
    if contract is None:
        return False
    return (stored.agent, stored.state, stored.session, stored.ts, stored.ended) == (
        contract.get("agent"),
        contract.get("state"),
        contract.get("session"),
        contract.get("ts"),
        contract.get("ended"),
    )


def restore_events(
    stored_7501: Stored | None,
    stored_agent: Stored | None,
    foreground: int | None,
    evidence: dict[str, Any],
    since: float,
) -> list[Event]:
    """What a collector feeds a pane's classifier from its stored state, after (re)attaching.

    `foreground` is the pane's foreground process group now, `evidence` the classifier's,
    `since` when this connection began. Live evidence wins: a kind already reported on
    this connection (a record or contract newer than `since`) is not overwritten by a
    snapshot that may be older. The stored records replace the held ones only when their
    writer is still in front (RI-2); a writer that left has only its `done`/`error`
    results restored (P7501-8), and only into a classifier that holds no records. A
    contract is restored only for the writer in front (TA-4). Nothing is fed when the
    classifier already holds the same state (a reconnect that missed nothing)."""
    out: list[Event] = []
    records = evidence.get("records") or []
    if stored_7501 is not None and not any(r.get("updated", 0) >= since for r in records):
        reports = [e for e in stored_7501.events if isinstance(e, StatusReport)]
        if stored_7501.pg is not None and stored_7501.pg == foreground:
            if not _same_records(reports, records):
                out += [ClearReport(0, None), *reports]
        elif not records:
            out += [e for e in reports if e.state in RESULT_STATES]
    contract = evidence.get("contract")
    if (
        stored_agent is not None
        and stored_agent.pg is not None
        and stored_agent.pg == foreground
        and not (contract is not None and contract.get("received", 0) >= since)
    ):
        agent = stored_agent.events[-1]
        if isinstance(agent, AgentReport) and not _same_contract(agent, contract):
            out.append(agent)
    return out
