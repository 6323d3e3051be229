"""Gates, rules and manifests as parsed: the pure matching model (no file system).

A gate is a conjunction of conditions over one region with nested all/any/not gates;
a rule is a gate plus the state it means; a manifest is an agent's rules, highest
priority first.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeGuard, get_args

from paneboard_protocol.pane import Kind, State
from paneboard_protocol.rules.answers import Answer
from paneboard_protocol.rules.question import (
    DEFAULT_TITLE_REGION,
    Question,
    default_lines,
    join_question,
    select_lines,
)
from paneboard_protocol.rules.regions import SCREEN_ROWS, _Screen, _screen_of, _Texts

#: What a rule may say a screen means: a state, or `unknown`, which holds whatever the
#: screen said before (a transcript viewer, a menu). Only rules say `unknown`: a match
#: that says it never becomes a pane's state.
RuleState = Literal[State, "unknown"]
RULE_STATES: tuple[RuleState, ...] = get_args(RuleState)


def is_rule_state(value: object) -> TypeGuard[RuleState]:
    """Whether a manifest's `state = ...` (untrusted TOML) is one a rule may say."""
    return type(value) is str and value in RULE_STATES


@dataclass(frozen=True, slots=True)
class Gate:
    """A conjunction of conditions over one region, with nested all/any/not gates."""

    region: str
    regex: tuple[re.Pattern[str], ...] = ()
    contains: tuple[str, ...] = ()
    line_regex: tuple[re.Pattern[str], ...] = ()
    fixed: tuple[tuple[str, re.Pattern[str]], ...] = ()  # screen/title/progress keys: own region
    all: tuple[Gate, ...] = ()
    any: tuple[Gate, ...] = ()
    not_: tuple[Gate, ...] = ()

    def regions(self) -> set[str]:
        """Every region this gate reads (to tell native-only rules from screen rules)."""
        out: set[str] = set()
        if self.regex or self.contains or self.line_regex:
            out.add(self.region)
        out.update(r for r, _ in self.fixed)
        for g in (*self.all, *self.any, *self.not_):
            out |= g.regions()
        return out

    def anchor(self, texts: _Texts) -> int | None:
        """The first line of this gate's region that holds what it looks for (a
        `contains` string, a `line_regex` or `regex` match), searching nested all/any
        gates on the same region too; None when nothing points at a line."""
        if self.region in ("title", "progress"):
            return None
        lines = texts.lines(self.region)
        folded = [ln.casefold() for ln in lines] if self.contains else []
        for i, ln in enumerate(lines):
            if any(c in folded[i] for c in self.contains) or any(p.search(ln) for p in self.line_regex):
                return i
        for pat in self.regex:
            m = pat.search(texts.get(self.region))
            if m is not None:
                return texts.get(self.region).count("\n", 0, m.start())
        for g in (*self.all, *self.any):
            if g.region == self.region and g.matches_texts(texts):
                at = g.anchor(texts)
                if at is not None:
                    return at
        return None

    def hits(self, texts: _Texts) -> list[int]:
        """The captured screen rows (1-based) on which this matching gate found what it
        looks for: each condition's first line (a regex's whole match), and those of its
        matching all/any gates; `not` gates and the title/progress have no rows."""
        out: list[int] = []
        if self.region not in ("title", "progress"):
            lines = texts.lines(self.region)
            folded = [ln.casefold() for ln in lines] if self.contains else []
            for c in self.contains:
                at = next((i for i, low in enumerate(folded) if c in low), None)
                if at is not None:
                    out.append(texts.captured_row(self.region, at))
            for pat in self.line_regex:
                at = next((i for i, ln in enumerate(lines) if pat.search(ln)), None)
                if at is not None:
                    out.append(texts.captured_row(self.region, at))
            out.extend(_regex_rows(texts, self.region, self.regex))
        out.extend(_regex_rows(texts, "screen", [p for r, p in self.fixed if r == "screen"]))
        for g in (*self.all, *self.any):
            if g._matches(texts):
                out.extend(g.hits(texts))
        return out

    def matches_texts(self, texts: _Texts) -> bool:
        """`matches` over an already-built reading (shared regions)."""
        return self._matches(texts)

    def matches(self, screen: str, title: str, progress: str) -> bool:
        return self._matches(_Texts(_Screen(screen.split("\n")), title, progress))

    def _matches(self, texts: _Texts) -> bool:
        # Cheapest first: substring tests filter most screens before any regex runs.
        if self.contains:
            low = texts.folded(self.region)
            if not all(c in low for c in self.contains):
                return False
        if self.regex:
            text = texts.get(self.region)
            for pat in self.regex:
                if not pat.search(text):
                    return False
        if self.line_regex:
            lines = texts.lines(self.region)
            for pat in self.line_regex:
                if not any(pat.search(ln) for ln in lines):
                    return False
        for reg, pat in self.fixed:
            if not pat.search(texts.get(reg)):
                return False
        if not all(g._matches(texts) for g in self.all):
            return False
        if self.any and not any(g._matches(texts) for g in self.any):
            return False
        return not any(g._matches(texts) for g in self.not_)


def _regex_rows(texts: _Texts, region: str, patterns: Sequence[re.Pattern[str]]) -> list[int]:
    """The first and last captured rows of each pattern's first match in `region`."""
    out: list[int] = []
    text = texts.get(region) if patterns else ""
    for pat in patterns:
        m = pat.search(text)
        if m is not None:
            first = text.count("\n", 0, m.start())
            last = first + text.count("\n", m.start(), max(m.start(), m.end() - 1))
            out += [texts.captured_row(region, first), texts.captured_row(region, last)]
    return out


@dataclass(frozen=True, slots=True)
class Rule:
    """One `[[rules]]` entry: a gate plus the state it means."""

    id: str
    state: RuleState
    kind: Kind | None
    priority: int
    index: int
    gate: Gate
    native: bool  # reads only the title / progress regions (TA-3 via manifest regions, RI-7)
    question: Question | None = None  # where a blocked prompt's text is (None: the default)
    answers: tuple[Answer, ...] = ()  # what a blocked prompt takes (rules/answers.py)

    def question_text(self, texts: _Texts) -> str | None:
        """The prompt's text this (matching, blocked) rule reads off the screen, or None.

        The rule's `question` lines first; when it has none, or they find nothing, the
        lines around what the rule matched. A title-only rule has no screen text of its
        own to point at, so it looks at the bottom of the screen."""
        spec = self.question
        own = self.gate.region
        title_only = own in ("title", "progress")
        if title_only:
            own = DEFAULT_TITLE_REGION
        region = spec.region if spec is not None and spec.region is not None else own
        lines = texts.lines(region) if region not in ("title", "progress") else []
        if spec is not None:
            found = join_question(select_lines(lines, spec.lines))
            if found is not None:
                return found
        anchor = self.gate.anchor(texts) if region == self.gate.region else None
        return join_question(default_lines(lines, anchor, ask_only=title_only))


@dataclass(frozen=True, slots=True)
class Match:
    """The winning rule for a screen reading."""

    manifest: str
    rule: str
    state: RuleState
    kind: Kind | None
    native: bool
    msg: str | None = None  # the blocked prompt's text, read off the screen
    lines: tuple[int, int] | None = None  # the first and last captured rows it matched on

    def reading(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "manifest": self.manifest,
            "rule": self.rule,
            "state": self.state,
            "kind": self.kind,
            "native": self.native,
        }
        if self.msg is not None:
            out["msg"] = self.msg  # only when there is one: readings without stay as they were
        if self.lines is not None:
            out["lines"] = list(self.lines)  # positions only: the rows' text stays on the screen
        return out


@dataclass(frozen=True, slots=True)
class Manifest:
    """One agent's manifest."""

    id: str
    agent: str
    process: tuple[str, ...]
    aliases: tuple[str, ...]
    rules: tuple[Rule, ...]
    rows: int = SCREEN_ROWS
    path: str = "<string>"
    origin: str = "bundled"  # or "user"

    def match(
        self, screen: str | None, title: str | None = None, progress: str | None = None
    ) -> Match | None:
        """The highest-priority matching rule (file order breaks ties), or None.

        `screen` is cut to the bottom `rows` rows (RI-9); `title`/`progress` are what the
        program emitted, empty when it emitted nothing (TA-18).

        A blocked rule that reads only the title (`Action Required`) says less than a
        blocked rule on the screen: when both match, the screen rule's kind and question
        are what the reading carries."""
        texts = _Texts(_screen_of(screen, self.rows), title or "", progress or "")
        for i, rule in enumerate(self.rules):
            if rule.gate._matches(texts):
                if rule.state == "blocked" and rule.native:
                    better = next(
                        (
                            r
                            for r in self.rules[i + 1 :]
                            if r.state == "blocked" and not r.native and r.gate._matches(texts)
                        ),
                        None,
                    )
                    rule = better or rule
                return self._match(rule, texts)
        return None

    def _match(self, rule: Rule, texts: _Texts) -> Match:
        msg = rule.question_text(texts) if rule.state == "blocked" else None
        rows = rule.gate.hits(texts)
        lines = (min(rows), max(rows)) if rows else None
        return Match(self.id, rule.id, rule.state, rule.kind, rule.native, msg, lines)
