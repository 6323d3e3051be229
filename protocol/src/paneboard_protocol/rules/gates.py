"""Gates, rules and manifests as parsed: the pure matching model (no file system).

A gate is a conjunction of conditions over one region with nested all/any/not gates;
a rule is a gate plus the state it means; a manifest is an agent's rules, highest
priority first.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from paneboard_protocol.rules.regions import SCREEN_ROWS, _Screen, _screen_of, _Texts

RULE_STATES = frozenset({"working", "blocked", "idle", "done", "error", "unknown"})
"""`unknown` holds whatever the screen said before (a transcript viewer, a menu)."""

KINDS = frozenset({"permission", "question", "auth"})


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


@dataclass(frozen=True, slots=True)
class Rule:
    """One `[[rules]]` entry: a gate plus the state it means."""

    id: str
    state: str
    kind: str | None
    priority: int
    index: int
    gate: Gate
    native: bool  # reads only the title / progress regions (TA-3 via manifest regions, RI-7)


@dataclass(frozen=True, slots=True)
class Match:
    """The winning rule for a screen reading."""

    manifest: str
    rule: str
    state: str
    kind: str | None
    native: bool

    def reading(self) -> dict[str, Any]:
        return {
            "manifest": self.manifest,
            "rule": self.rule,
            "state": self.state,
            "kind": self.kind,
            "native": self.native,
        }


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
        program emitted, empty when it emitted nothing (TA-18)."""
        texts = _Texts(_screen_of(screen, self.rows), title or "", progress or "")
        for rule in self.rules:
            if rule.gate._matches(texts):
                return Match(self.id, rule.id, rule.state, rule.kind, rule.native)
        return None
