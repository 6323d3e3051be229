"""Shared helpers for the classifier tests: a tiny step language and test manifests.

A step is a tuple run against a real `PaneClassifier` at the given time:
("proc", t, name[, pid[, observable]]), ("fg", t, name, pid, [ancestor pids, nearest
first]), ("ev", t, [events]), ("screen", t, text), ("seen", t), ("at", t) (time passes).
Kept in one place so every table reads alike.
"""

from __future__ import annotations

from typing import Any

from paneboard_protocol.arbitration import Classification
from paneboard_protocol.classifier import PaneClassifier
from paneboard_protocol.events import (
    AgentReport,
    ClearReport,
    Progress,
    PromptMark,
    Rejected,
    Reset,
    StatusReport,
    Title,
)
from paneboard_protocol.rules import RuleSet, parse_manifest

CLAUDE_TOML = r"""
id = "test-claude"
agent = "claude"
process = ["claude"]
aliases = ["claude-code"]

[[rules]]
id = "permission"
state = "blocked"
kind = "permission"
priority = 100
contains = ["do you want to proceed?"]

[[rules]]
id = "interrupt"
state = "working"
priority = 50
region = "bottom_lines(3)"
contains = ["esc to interrupt"]

[[rules]]
id = "prompt"
state = "idle"
priority = 10
line_regex = ['^\s*❯']

[[rules]]
id = "title_spinner"
state = "working"
priority = 200
region = "title"
regex = ['^[\x{2801}-\x{28FF}\x{25D0}-\x{25D3}] ']

[[rules]]
id = "viewer"
state = "unknown"
priority = 300
contains = ["showing detailed transcript"]
"""

CODEX_TOML = r"""
id = "test-codex"
agent = "codex"
process = ["codex"]

[[rules]]
state = "working"
contains = ["esc to interrupt"]
"""

RULES = RuleSet.from_manifests([parse_manifest(CLAUDE_TOML), parse_manifest(CODEX_TOML)])

T0 = 1_800_000_000.0  # a plausible "now" for contract ts tests


def rep(state: str, id: str | None = None, **kw: Any) -> StatusReport:
    return StatusReport(0, id, state, **kw)  # type: ignore[arg-type]


def clr(id: str | None = None) -> ClearReport:
    return ClearReport(0, id)


def agent(name: str, state: str, ts: int | None = None, ended: bool = False, session: str | None = None):
    return AgentReport(0, "THINKTERM_AGENT", 1, name, state, session, ts, ended)  # type: ignore[arg-type]


def unknown_state_contract(name: str, ts: int | None = None) -> Rejected:
    partial: dict[str, Any] = {"agent": name}
    if ts is not None:
        partial["ts"] = ts
    return Rejected(0, "thinkterm", "unknown state 'thinking'", partial)


def title(text: str, code: int = 2) -> Title:
    return Title(0, text, code)


def progress(state: int, percent: int | None = None) -> Progress:
    return Progress(0, state, percent)


def prompt_a() -> PromptMark:
    return PromptMark(0, "A")


def ris() -> Reset:
    return Reset(0)


def apply(c: PaneClassifier, step: tuple) -> float:
    kind, t = step[0], step[1]
    if kind == "proc":
        c.set_process(t, step[2], *step[3:])
    elif kind == "fg":
        c.set_process(t, step[2], step[3], chain=step[4])
    elif kind == "ev":
        c.feed(t, step[2])
    elif kind == "screen":
        c.set_screen(t, step[2])
    elif kind == "seen":
        c.mark_seen(t)
    elif kind == "at":
        pass
    else:  # pragma: no cover - a typo in a table
        raise ValueError(kind)
    return t


def run(steps: list[tuple], rules: RuleSet | None = RULES, at: float | None = None) -> Classification:
    """Run the steps on a fresh classifier; the classification at `at` (default: last step's time)."""
    c = PaneClassifier(rules)
    t = 0.0
    for step in steps:
        t = apply(c, step)
    when = t if at is None else at
    return c.classification(when)


def fields(c: Classification, keys: list[str]) -> dict[str, Any]:
    return {k: getattr(c, k) for k in keys}
