"""Manifest parsing: TOML text to a validated `Manifest`, or a `ManifestError` with a line.

Strict on purpose: an unknown key, a regex that does not compile or a state that does
not exist is wrong, and guessing what it meant would classify panes wrongly.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from typing import Any

from paneboard_protocol.pane import KINDS, is_kind
from paneboard_protocol.rules.answers import Answer, parse_answers
from paneboard_protocol.rules.errors import ManifestError
from paneboard_protocol.rules.gates import RULE_STATES, Gate, Manifest, Rule, RuleState, is_rule_state
from paneboard_protocol.rules.patterns import _compile, _str_list
from paneboard_protocol.rules.question import Question
from paneboard_protocol.rules.regions import SCREEN_ROWS, _normalise_region

_CONDITION_KEYS = frozenset({"regex", "contains", "line_regex", "screen", "title", "progress"})
_GATE_KEYS = _CONDITION_KEYS | {"region", "all", "any", "not"}
_RULE_KEYS = _GATE_KEYS | {"id", "state", "kind", "priority", "description", "question", "answers"}
_QUESTION_KEYS = frozenset({"region", "lines"})
_HERDR_IGNORED = frozenset({"visible_working", "visible_blocker", "visible_idle", "skip_state_update"})
_MANIFEST_KEYS = frozenset({"id", "agent", "process", "aliases", "description", "rows", "rules"})
_HERDR_MANIFEST_IGNORED = frozenset({"version", "min_engine_version", "updated_at", "resume_options"})


def _parse_gate(table: Any, region: str, allowed: frozenset[str], where: str) -> Gate:
    if not isinstance(table, Mapping):
        raise ManifestError(f"{where}: a gate must be a table")
    for key in table:
        if key not in allowed and key not in _HERDR_IGNORED:
            raise ManifestError(f"{where}: unknown key {key!r}")
    if "region" in table:
        region = _normalise_region(table["region"])
    fixed: list[tuple[str, re.Pattern[str]]] = []
    for reg in ("screen", "title", "progress"):
        if reg in table:
            fixed += [(reg, p) for p in _compile(_str_list(table[reg], reg), reg)]

    def gates(key: str) -> tuple[Gate, ...]:
        value = table.get(key, [])
        if isinstance(value, Mapping):
            value = [value]
        if not isinstance(value, list):
            raise ManifestError(f"{where}: {key} must be a list of tables")
        return tuple(_parse_gate(g, region, _GATE_KEYS, f"{where}.{key}") for g in value)

    return Gate(
        region=region,
        regex=_compile(_str_list(table.get("regex", []), "regex"), "regex"),
        contains=tuple(c.casefold() for c in _str_list(table.get("contains", []), "contains")),
        line_regex=_compile(_str_list(table.get("line_regex", []), "line_regex"), "line_regex"),
        fixed=tuple(fixed),
        all=gates("all"),
        any=gates("any"),
        not_=gates("not"),
    )


def _locate_line(text: str, rule_index: int | None, needle: str | None) -> int | None:
    """Best-effort line of a semantic error: inside the n-th `[[rules]]`, the line holding `needle`."""
    lines = text.split("\n")
    start, end = 0, len(lines)
    if rule_index is not None:
        headers = [i for i, ln in enumerate(lines) if ln.strip().startswith("[[rules]]")]
        if rule_index < len(headers):
            start = headers[rule_index]
            end = headers[rule_index + 1] if rule_index + 1 < len(headers) else len(lines)
        if not needle:
            return start + 1
    else:
        firsts = [i for i, ln in enumerate(lines) if ln.strip().startswith("[")]
        end = firsts[0] if firsts else len(lines)
    if needle:
        for i in range(start, end):
            if needle in lines[i]:
                return i + 1
    return None


def parse_manifest(text: str, path: str = "<string>", origin: str = "bundled") -> Manifest:
    """Parse and validate one manifest; raises ManifestError with a line where it can."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        m = re.search(r"at line (\d+)", str(exc))
        raise ManifestError(f"bad TOML: {exc}", int(m.group(1)) if m else None) from None
    for key in data:
        if key not in _MANIFEST_KEYS and key not in _HERDR_MANIFEST_IGNORED:
            raise ManifestError(f"unknown key {key!r}", _locate_line(text, None, key))
    mid = data.get("id")
    if not isinstance(mid, str) or not mid:
        raise ManifestError("missing id (a non-empty string)", _locate_line(text, None, "id"))
    agent = data.get("agent", mid)
    if not isinstance(agent, str) or not agent:
        raise ManifestError("agent must be a non-empty string", _locate_line(text, None, "agent"))
    try:
        process = tuple(_str_list(data.get("process", []), "process"))
        aliases = tuple(_str_list(data.get("aliases", []), "aliases"))
    except ManifestError as exc:
        raise ManifestError(exc.reason, _locate_line(text, None, exc.reason.split()[0])) from None
    rows = data.get("rows", SCREEN_ROWS)
    if not isinstance(rows, int) or isinstance(rows, bool) or not 1 <= rows <= 1000:
        raise ManifestError("rows must be an integer 1..1000", _locate_line(text, None, "rows"))
    raw_rules = data.get("rules", [])
    if not isinstance(raw_rules, list):
        raise ManifestError("rules must be an array of tables ([[rules]])", _locate_line(text, None, "rules"))
    rules: list[Rule] = []
    for i, raw in enumerate(raw_rules):
        try:
            rules.append(_parse_rule(raw, i))
        except ManifestError as exc:
            needle = _needle(exc.reason)
            raise ManifestError(f"rule {i + 1}: {exc.reason}", _locate_line(text, i, needle)) from None
    rules.sort(key=lambda r: (-r.priority, r.index))
    return Manifest(mid, agent, process, aliases, tuple(rules), rows, path, origin)


def _needle(reason: str) -> str | None:
    m = re.search(r"regex '((?:[^'\\]|\\.)*)'", reason) or re.search(r"regex \"([^\"]*)\"", reason)
    if m:
        return m.group(1).replace("\\\\", "\\")[:20]
    m = re.search(r"(?:unknown key|unknown state|unknown kind|unknown region) '([^']*)'", reason)
    if m:
        return m.group(1)
    m = re.match(r"(\w+) must", reason)
    return m.group(1) if m else None


def _parse_rule(raw: Any, index: int) -> Rule:
    if not isinstance(raw, Mapping):
        raise ManifestError("a rule must be a table")
    said = raw.get("state")
    if said is None:
        raise ManifestError("missing state")
    if not is_rule_state(said):
        raise ManifestError(f"unknown state {said!r} (one of {', '.join(sorted(RULE_STATES))})")
    state: RuleState = said
    kind = raw.get("kind")
    if kind is not None and not is_kind(kind):
        raise ManifestError(f"unknown kind {kind!r} (one of {', '.join(sorted(KINDS))})")
    if kind is not None and state != "blocked":
        raise ManifestError("kind counts only with state = 'blocked'")
    priority = raw.get("priority", 0)
    if not isinstance(priority, int) or isinstance(priority, bool):
        raise ManifestError("priority must be an integer")
    rid = raw.get("id", f"rule{index + 1}")
    if not isinstance(rid, str):
        raise ManifestError("id must be a string")
    region = _normalise_region(raw.get("region", "screen"))
    gate = _parse_gate(raw, region, _RULE_KEYS, "rule")
    if not gate.regions():
        raise ManifestError(
            "a rule needs at least one condition (regex, contains, line_regex, screen, title…)"
        )
    if raw.get("skip_state_update") is True:
        state = "unknown"
    native = gate.regions() <= {"title", "progress"}
    question = None
    if "question" in raw:
        if state != "blocked":
            raise ManifestError("question counts only with state = 'blocked'")
        question = _parse_question(raw["question"])
    answers: tuple[Answer, ...] = ()
    if "answers" in raw:
        if state != "blocked":
            raise ManifestError("answers count only with state = 'blocked'")
        answers = parse_answers(raw["answers"])
    return Rule(rid, state, kind, priority, index, gate, native, question, answers)


def _parse_question(value: Any) -> Question:
    """`question = "REGION"` or `question = { region = "REGION", lines = ['regex', …] }`."""
    if isinstance(value, str):
        value = {"region": value}
    if not isinstance(value, Mapping):
        raise ManifestError("question must be a region name or a table { region, lines }")
    for key in value:
        if key not in _QUESTION_KEYS:
            raise ManifestError(f"question: unknown key {key!r} (region, lines)")
    region = None
    if "region" in value:
        region = _normalise_region(value["region"])
        if region in ("title", "progress"):
            raise ManifestError("question: the region must be part of the screen, not the title or progress")
    lines = _compile(_str_list(value.get("lines", []), "lines"), "question.lines")
    return Question(region, lines)
