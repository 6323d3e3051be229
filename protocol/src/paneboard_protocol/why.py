"""Why a pane shows what it shows, in plain words — a pure function of its evidence.

The board's pane page, `paneboard replay --explain` and `paneboard agent --stdout
--explain` all say what decided a classification; this is the one place that says it,
reading the decision `arbitration` itself made (`decision`), never a second copy of its
rules. What it carries is what the evidence carries and may go wherever the pane's
state goes: process names (never their arguments), pids, rule ids, the rows of the
screen a rule matched on and times. The text of those rows never: a page with screen
rights fetches the screen and highlights `lines` itself.

Every name here came from a watched host (a process name, an agent, a rule id of a
user's manifest): each is made display-safe and cut before it is put in words.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from paneboard_protocol.arbitration import decision
from paneboard_protocol.pane import State
from paneboard_protocol.records import display_text

__all__ = ["NAME_MAX", "Relation", "Why", "WhySource", "explain"]

WhySource = Literal["report", "contract", "screen", "native", "none"]
"""What decided: an OSC 7501 report, a THINKTERM_AGENT contract, a screen rule, a
native signal (title spinner, OSC 9;4 progress, or a rule reading only those), nothing."""

Relation = Literal["front", "parent", "ancestor", "earlier"]
"""Where a report's writer stands to the process in front: it is that process, its
parent, a further ancestor, or it was in front before (a left-over result, RI-5)."""

NAME_MAX = 64
"""Characters of a name put in words: a process name, an agent, a rule id."""


class Why(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """What decided a pane's state. `text` is the sentence; the other fields are its
    parts, for a page that shows them its own way (a local clock for `at`, the screen's
    rows `lines` highlighted)."""

    source: WhySource
    text: str
    state: State | None = None
    writer: str | None = None  # the report's writer, by name
    pid: int | None = None  # and pid
    relation: Relation | None = None
    front: str | None = None  # the process in front, by name
    rule: str | None = None  # `manifest.rule`
    lines: tuple[int, int] | None = None  # the first and last screen rows the rule matched on
    signal: Literal["title", "progress"] | None = None
    at: float | None = None  # when the report (or contract) arrived
    age: float | None = None  # a contract's `ts`, seconds before `now`


def _name(value: Any) -> str | None:
    text = display_text(value) if isinstance(value, str) else None
    if text is None:
        return None
    return text if len(text) <= NAME_MAX else text[: NAME_MAX - 1] + "…"


def _relation(rec: dict[str, Any], live: bool, process: dict[str, Any]) -> Relation | None:
    if not live:
        return "earlier"
    writer = rec.get("pid")
    if writer is None:
        return None
    if writer == process.get("pid"):
        return "front"
    if process.get("parent") is not None and writer == process.get("parent"):
        return "parent"
    return "ancestor"  # a live record of another pid only ever follows its writer's descendants


def _report(rec: dict[str, Any], live: bool, evidence: dict[str, Any], state: State | None) -> Why:
    process = evidence["process"]
    relation = _relation(rec, live, process)
    pid = rec.get("pid")
    front = _name(process.get("name"))
    writer = _name(rec.get("writer"))
    if writer is None and relation == "front":
        writer = front
    # No name: a shell (the collector names no shell in front) unless a named process was in front.
    shell = relation in ("parent", "ancestor") or (relation == "front" and front is None)
    who = f"`{writer}`" if writer else "the shell" if shell else "the program"
    if pid is not None:
        who += f" (pid {pid})"
    theirs = f"`{front}`" if front else "the command in front"
    where = {
        "front": ", the process in front",
        "parent": f", the parent of {theirs}",
        "ancestor": f", an ancestor of {theirs}",
        "earlier": ", a result left from before",
        None: "",
    }[relation]
    return Why(
        source="report",
        text=f"reported by {who}{where}",
        state=state,
        writer=writer,
        pid=pid,
        relation=relation,
        front=front if relation in ("parent", "ancestor") else None,
        at=rec.get("updated"),
    )


def _screen(res: dict[str, Any], state: State | None) -> Why:
    rule = _name(f"{res.get('manifest') or '?'}.{res.get('rule') or '?'}")
    raw = res.get("lines")
    lines = (int(raw[0]), int(raw[1])) if isinstance(raw, list | tuple) and len(raw) == 2 else None
    if res.get("native"):
        return Why(source="native", text=f"rule `{rule}` read the program's title", state=state, rule=rule)
    if lines is None:
        where = ""
    elif lines[0] == lines[1]:
        where = f" line {lines[0]}"
    else:
        where = f" lines {lines[0]}–{lines[1]}"
    return Why(
        source="screen", text=f"screen rule `{rule}` matched{where}", state=state, rule=rule, lines=lines
    )


def _contract(c: dict[str, Any], now: float, state: State | None) -> Why:
    ts = c.get("ts")
    age = None if ts is None else max(0.0, float(now) - float(ts))
    agent = _name(c.get("agent"))
    told = f" of `{agent}`" if agent else ""
    when = ", without a ts" if age is None else f", ts {age:.0f} s old"
    return Why(
        source="contract",
        text=f"THINKTERM_AGENT contract{told}{when}",
        state=state,
        at=c.get("received"),
        age=age,
    )


def explain(evidence: dict[str, Any], now: float) -> Why:
    """What decided the pane's classification at `now`, from its evidence alone.

    Evidence from elsewhere is checked as `classify_evidence` checks it (`EvidenceError`)."""
    d = decision(evidence, now)
    state: State | None = d["state"]
    by = d["by"]
    if by is None:
        return Why(source="none", text="nothing reports a state and no screen rule applies", state=state)
    kind, what = by[0], by[1]
    if kind == "record":
        return _report(what, bool(by[2]), evidence, state)
    if kind == "screen":
        return _screen(what, state)
    if kind == "contract":
        return _contract(what, now, state)
    if kind == "native":
        text = "title spinner" if what == "title" else "progress signal (OSC 9;4)"
        return Why(source="native", text=text, state=state, signal=what)
    agent = _name(d["agent"])
    text = f"`{agent}` is known here and nothing says more, so it is idle"
    return Why(source="none", text=text, state=state)
