"""The events the decoder yields: one frozen dataclass per recognised sequence.

These are the one vocabulary every part of paneboard shares (collector, classifier,
server, `paneboard decode`), so they are plain immutable values with a stable JSON
form: `event.to_json()` is exactly the object `paneboard decode` prints, `type` and
`offset` first. `offset` is the byte offset, in the whole stream fed to one decoder,
of the first byte of the outermost sequence that carried the event (for a report
inside a tmux passthrough envelope, the envelope's `ESC P`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, TypeGuard, get_args

from paneboard_protocol.pane import Kind, State

#: The one word an OSC 7501 report's `state=` takes besides a state: `clear` deletes
#: records (P7501-16) and is never a pane's state, so it is kept apart from `State`.
CLEAR: Literal["clear"] = "clear"
#: What a report's `state=` may say: a state (`pane.STATES`) or `clear`.
ReportWord = Literal[State, "clear"]
REPORT_WORDS: tuple[ReportWord, ...] = get_args(ReportWord)
#: The states a THINKTERM_AGENT contract can carry (TA-7): fewer than a report's, each a `State`.
AgentState = Literal["working", "idle", "blocked"]
AGENT_STATES: tuple[AgentState, ...] = get_args(AgentState)


def is_agent_state(value: object) -> TypeGuard[AgentState]:
    """Whether an untrusted contract's `state=` is one TA-7 allows."""
    return type(value) is str and value in AGENT_STATES


@dataclass(frozen=True, slots=True)
class Event:
    """Base of every decoded event."""

    type: ClassVar[str] = "event"
    offset: int

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if isinstance(value, Mapping):
                value = dict(value)
            out[f.name] = value
        return out


@dataclass(frozen=True, slots=True)
class StatusReport(Event):
    """An accepted OSC 7501 report (P7501-1 … P7501-6, P7501-15 … P7501-20).

    `kind` is set only with `blocked`, `progress` only with `working`/`blocked`
    (P7501-17); `msg` and `title` are decoded text; `fields` holds every pair as sent
    (after the last-duplicate-wins rule), so unknown keys stay visible.
    """

    type: ClassVar[str] = "status"
    id: str | None
    state: State
    kind: Kind | None = None
    app: str | None = None
    msg: str | None = None
    title: str | None = None
    progress: int | None = None
    fields: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ClearReport(Event):
    """OSC 7501 `state=clear`: delete the record `id` and its subtree, or all (id None)."""

    type: ClassVar[str] = "clear"
    id: str | None


@dataclass(frozen=True, slots=True)
class Probe(Event):
    """OSC 7501 `?` feature detection; `terminator` is "bel" or "st" (P7501-10)."""

    type: ClassVar[str] = "probe"
    terminator: Literal["bel", "st"] = "st"


@dataclass(frozen=True, slots=True)
class AgentReport(Event):
    """A THINKTERM_AGENT v1 contract (TA-7 … TA-11), sent through OSC 1337 SetUserVar."""

    type: ClassVar[str] = "agent"
    var: str
    version: int
    agent: str
    state: AgentState
    session: str | None = None
    ts: int | None = None
    ended: bool = False


@dataclass(frozen=True, slots=True)
class UserVar(Event):
    """Any other OSC 1337 SetUserVar; `value` is the decoded text."""

    type: ClassVar[str] = "uservar"
    var: str
    value: str


@dataclass(frozen=True, slots=True)
class Progress(Event):
    """OSC 9;4 progress: state 0 (remove) 1 (set) 2 (error) 3 (indeterminate) 4 (paused)."""

    type: ClassVar[str] = "progress"
    state: int
    percent: int | None = None


@dataclass(frozen=True, slots=True)
class Title(Event):
    """OSC 0 / 1 / 2: the window (or icon) title the program set; `code` says which."""

    type: ClassVar[str] = "title"
    title: str
    code: int = 2


@dataclass(frozen=True, slots=True)
class PromptMark(Event):
    """OSC 133 shell integration mark A/B/C/D; `exit` is the status carried by D."""

    type: ClassVar[str] = "prompt"
    mark: Literal["A", "B", "C", "D"]
    exit: int | None = None


@dataclass(frozen=True, slots=True)
class Reset(Event):
    """RIS (`ESC c`): a full terminal reset, which drops every 7501 record (P7501-21)."""

    type: ClassVar[str] = "reset"


@dataclass(frozen=True, slots=True)
class Rejected(Event):
    """A report the rules discard, with a reason a person can act on.

    Only yielded when the decoder is asked for rejections. `proto` is "osc7501",
    "thinkterm", "uservar", "progress", "title", "prompt" or "framing". `partial`
    carries what could be read before the report was discarded (for a contract with
    an unknown state, its `agent`: RI-6 lets that still identify the pane).
    """

    type: ClassVar[str] = "rejected"
    proto: str
    reason: str
    partial: Mapping[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        """The `{"type", "offset", "proto", "reason"}` of docs/decoder.md (and `partial` if any)."""
        out: dict[str, Any] = {
            "type": self.type,
            "offset": self.offset,
            "proto": self.proto,
            "reason": self.reason,
        }
        if self.partial is not None:
            out["partial"] = dict(self.partial)
        return out


__all__ = [
    "AGENT_STATES",
    "CLEAR",
    "REPORT_WORDS",
    "AgentReport",
    "AgentState",
    "ClearReport",
    "Event",
    "Probe",
    "Progress",
    "PromptMark",
    "Rejected",
    "ReportWord",
    "Reset",
    "StatusReport",
    "Title",
    "UserVar",
    "is_agent_state",
]
