"""The ledger of time waiting on you, derived from a pane's history: pure logic, no I/O.

Every stretch a pane spends `blocked` (waiting for an answer) or `done` (waiting to be
seen) is one `Interval`, from the history row that entered the state to the one that
left it. How it ended is read off that second row:

- blocked: `answered` (the agent went on: working, done, or a different question),
  `cancelled` (idle, error, or no state), `exited` (the program ended: no agent, or
  another one), `gone` (the pane closed), `stale` (its report outlived its `ts`, TA-12).
- done: `seen` (the user looked, P7501-8, or it went idle), `resumed` (working or
  blocked again), `cancelled` (error / no state), `exited`, `gone`, `stale`.

`derive` replays any list of history rows (it sorts them by time, then id, so rows that
arrive late or out of order give the same ledger as rows in order); `step` is one row
of it, which the store uses for the common case of rows arriving in order.
"""

from __future__ import annotations

import re
from typing import Any, Literal, NamedTuple, get_args

import msgspec
from paneboard_protocol.pane import State

#: The states that wait on a person: an interval's state, and what `/api/stats` asks about.
Waiting = Literal["blocked", "done"]
WAITING: tuple[Waiting, ...] = get_args(Waiting)
#: Every way an interval ends (`Interval.ended`).
ENDINGS: tuple[str, ...] = ("answered", "cancelled", "exited", "gone", "stale", "seen", "resumed")


class Event(NamedTuple):
    """One history row: what the pane became at `t` and why (`reason`).

    A named tuple, not a frozen dataclass: the writer makes one for every history row of
    a pane that may open or close a wait, and a frozen dataclass's constructor (a
    `object.__setattr__` per field) was a visible share of the writer's time
    (bench/writer.py)."""

    t: float
    agent: str | None
    state: State | None
    kind: str | None = None
    msg: str | None = None
    reason: str = "report"
    id: int = 0  # the history row's id: the tie-break between rows of the same `t`

    @classmethod
    def from_row(cls, r: Any) -> Event:
        m = r if isinstance(r, dict) else r._mapping
        return cls(
            float(m["t"]),
            m["agent"],
            m["state"],
            m["kind"],
            m["msg"],
            m["reason"] or "report",
            m.get("id") or 0,
        )


class Interval(msgspec.Struct, frozen=True):
    """One wait: `end_t`/`ended` are None while it lasts.

    A frozen msgspec Struct, not a frozen dataclass: the writer makes one or two for
    every report that opens or closes a wait, and the dataclass's constructor (an
    `object.__setattr__` per field) costs several times as much."""

    state: Waiting
    start_t: float
    agent: str | None
    kind: str | None
    msg: str | None
    end_t: float | None = None
    ended: str | None = None
    end_state: State | None = None

    def closed(self, ev: Event) -> Interval:
        # built field by field, one constructor call; in the ingest benchmark one report
        # in five closes a wait
        ended = ending(self, ev)
        return Interval(self.state, self.start_t, self.agent, self.kind, self.msg, ev.t, ended, ev.state)

    def waited(self, now: float) -> float:
        """Seconds waited so far (an open interval counts up to `now`)."""
        end = self.end_t if self.end_t is not None else now
        return max(0.0, end - self.start_t)


def ending(iv: Interval, ev: Event) -> str:
    """How the row `ev` ends the wait `iv`."""
    if ev.reason == "gone":
        return "gone"
    if ev.reason == "stale":
        return "stale"
    if ev.agent != iv.agent or (ev.agent is None and ev.state is None):
        return "exited"  # another program (or none) is in front now
    if iv.state == "blocked":
        if ev.state in ("working", "done", "blocked"):
            return "answered"
        return "cancelled"
    if ev.reason == "seen" or ev.state == "idle":
        return "seen"
    if ev.state in ("working", "blocked"):
        return "resumed"
    return "cancelled"


def _same(iv: Interval, ev: Event) -> bool:
    """The row repeats the wait (a pane that came back as it was, a replayed row)."""
    return ev.reason != "gone" and (ev.agent, ev.state, ev.kind) == (iv.agent, iv.state, iv.kind)


def step(open_: Interval | None, ev: Event) -> tuple[Interval | None, Interval | None]:
    """One history row: (the interval it closes or None, the interval open after it)."""
    if open_ is not None and _same(open_, ev):
        return None, open_
    closed = open_.closed(ev) if open_ is not None else None
    opened = None
    if ev.state in WAITING and ev.reason != "gone":
        opened = Interval(ev.state, ev.t, ev.agent, ev.kind, ev.msg)
    return closed, opened


def order(events: list[Event]) -> list[Event]:
    if len(events) < 2:  # a pane's one row in a batch, nearly always
        return events
    return sorted(events, key=lambda e: (e.t, e.id))


def derive(events: list[Event], open_: Interval | None = None) -> list[Interval]:
    """Every interval of one pane's history rows (any order), the last possibly open;
    `open_` is the wait already open before the first of them."""
    out: list[Interval] = []
    cur = open_
    for ev in order(events):
        closed, cur = step(cur, ev)
        if closed is not None:
            out.append(closed)
    if cur is not None:
        out.append(cur)
    return out


_NUM = re.compile(r"\d+")
_QUOTED = re.compile(r"(\"[^\"]*\"|'[^']*'|`[^`]*`)")
_PATH = re.compile(r"(?:~|\.{1,2})?/[\w.\-/]+")
_SPACE = re.compile(r"\s+")
NORMAL_MAX = 160


def normalise(msg: str | None) -> str:
    """A prompt's text with what differs between occurrences blanked: numbers, quoted
    strings, paths; lower case, one space. "Allow edit of 'src/a.py' (3 lines)?" and
    "Allow edit of 'b.py' (12 lines)?" are the same prompt."""
    if not msg:
        return ""
    text = _QUOTED.sub("…", msg)
    text = _PATH.sub("…", text)
    text = _NUM.sub("#", text)
    return _SPACE.sub(" ", text).strip().lower()[:NORMAL_MAX]
