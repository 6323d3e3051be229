"""Why a manifest reads a screen the way it does, in plain words (`paneboard rules explain`).

The question every manifest author asks after a rule did not fire — or the wrong one
did — is "which rule matched, where, and why did the others not?". `explain` answers it
with the same gates the classifier runs (no second matcher to drift from the first):
for the winning rule the region and screen line it matched on and the question it
reads, for every other rule the first condition that failed.
"""

from __future__ import annotations

from dataclasses import dataclass

from paneboard_protocol.rules.gates import Gate, Manifest, Rule
from paneboard_protocol.rules.regions import _screen_of, _Texts
from paneboard_protocol.text import sanitize_text


@dataclass(frozen=True, slots=True)
class RuleVerdict:
    """One rule's outcome on one reading."""

    rule: Rule
    matched: bool
    why: str  # where it matched, or the first condition that failed


def _region_name(region: str) -> str:
    return {"screen": "the screen", "title": "the title", "progress": "the progress"}.get(region, region)


def _quote(text: str, limit: int = 80) -> str:
    """Screen text is untrusted: one display-safe line (no escapes reach the terminal)."""
    text = sanitize_text(text)
    text = text if len(text) <= limit else text[: limit - 1] + "…"
    return '"' + text + '"'


def why_not(gate: Gate, texts: _Texts) -> str | None:
    """The first condition of `gate` that fails on `texts`, in words; None when it matches.

    Checked in the order `Gate._matches` checks them, so the reason given is the one
    that actually stopped the rule."""
    where = _region_name(gate.region)
    if gate.contains:
        low = texts.folded(gate.region)
        for c in gate.contains:
            if c not in low:
                return f"{where} does not contain {_quote(c)}"
    for pat in gate.regex:
        if not pat.search(texts.get(gate.region)):
            return f"regex {_quote(pat.pattern)} finds nothing in {where}"
    for pat in gate.line_regex:
        if not any(pat.search(ln) for ln in texts.lines(gate.region)):
            return f"no line of {where} matches {_quote(pat.pattern)}"
    for reg, pat in gate.fixed:
        if not pat.search(texts.get(reg)):
            return f"regex {_quote(pat.pattern)} finds nothing in {_region_name(reg)}"
    for i, g in enumerate(gate.all):
        reason = why_not(g, texts)
        if reason is not None:
            return f"`all` gate {i + 1}: {reason}"
    if gate.any:
        reasons = [why_not(g, texts) for g in gate.any]
        if all(r is not None for r in reasons):
            return "no `any` gate matches (" + "; ".join(f"{i + 1}: {r}" for i, r in enumerate(reasons)) + ")"
    for i, g in enumerate(gate.not_):
        if why_not(g, texts) is None:
            return f"`not` gate {i + 1} matches ({where_matched(g, texts)})"
    return None


def where_matched(gate: Gate, texts: _Texts) -> str:
    """The region and screen line a matching gate matched on, as words."""
    if gate.region in ("title", "progress"):
        return f"{_region_name(gate.region)} {_quote(texts.get(gate.region))}"
    at = gate.anchor(texts)
    if at is not None:
        line = texts.lines(gate.region)[at].strip()
        return f"{_region_name(gate.region)}, line {texts.row(gate.region, at)}: {_quote(line)}"
    if gate.fixed:
        reg = gate.fixed[0][0]
        return _region_name(reg) if reg == "screen" else f"{_region_name(reg)} {_quote(texts.get(reg))}"
    return _region_name(gate.region)


def explain(
    manifest: Manifest, screen: str | None, title: str | None = None, progress: str | None = None
) -> tuple[list[RuleVerdict], Rule | None, str | None]:
    """(each rule's verdict in priority order, the rule the reading takes, its question)."""
    texts = _Texts(_screen_of(screen, manifest.rows), title or "", progress or "")
    verdicts = []
    for rule in manifest.rules:
        reason = why_not(rule.gate, texts)
        if reason is None:
            verdicts.append(RuleVerdict(rule, True, where_matched(rule.gate, texts)))
        else:
            verdicts.append(RuleVerdict(rule, False, reason))
    match = manifest.match(screen, title, progress)
    taken = next((r for r in manifest.rules if match is not None and r.id == match.rule), None)
    return verdicts, taken, None if match is None else match.msg


def describe(rule: Rule) -> str:
    """`id` → state (kind), priority N."""
    state = f"{rule.state} ({rule.kind})" if rule.kind else rule.state
    if rule.state == "unknown":
        state = "unknown (keep the previous state)"
    return f"{rule.id} → {state}, priority {rule.priority}"


def report(
    manifest: Manifest, screen: str | None, title: str | None = None, progress: str | None = None
) -> list[str]:
    """The plain-words report `paneboard rules explain` prints for one manifest."""
    verdicts, taken, question = explain(manifest, screen, title, progress)
    rows = len(_screen_of(screen, manifest.rows).lines)
    out = [f"manifest {manifest.id} (agent {manifest.agent}, {manifest.path})"]
    out.append(
        f"  read: {rows} screen rows (the bottom {manifest.rows} at most, blank ones at the end dropped), "
        f"title {_quote(title or '')}, progress {_quote(progress or '')}"
    )
    if taken is None:
        out.append("  result: no rule matches: a known agent with nothing on screen is idle")
    else:
        out.append(f"  result: {describe(taken)}")
        first = next(v for v in verdicts if v.matched)
        if first.rule is not taken:
            out.append(
                f"    ({first.rule.id} matched first but reads only the title; the screen rule "
                f"{taken.id} says more, so its kind and question are kept)"
            )
        out.append(f"    matched on {next(v.why for v in verdicts if v.rule is taken)}")
        if taken.state == "blocked":
            out.append(f"    question: {question if question is not None else '(none found on the screen)'}")
    out.append("  each rule, highest priority first:")
    for v in verdicts:
        if v.rule is taken:
            mark, why = "USED", f"matched on {v.why}"
        elif v.matched and taken is not None and v.rule.priority >= taken.priority and v.rule.native:
            mark, why = "matches", f"on {v.why}, but it reads only the title; the screen rule below says more"
        elif v.matched:
            mark, why = "matches", f"on {v.why}, but a rule above it is used"
        else:
            mark, why = "no", f"because {v.why}"
        out.append(f"    {mark:>7}  {describe(v.rule)}")
        out.append(f"             {why}")
    return out


__all__ = ["RuleVerdict", "describe", "explain", "report", "where_matched", "why_not"]
