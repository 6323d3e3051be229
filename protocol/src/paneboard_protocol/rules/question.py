"""The question a blocked prompt asks, read from the screen (the `question` manifest key).

A card that says "blocked" without saying *what* is waiting leaves the person guessing,
and the screen that made a rule say blocked almost always holds the question in plain
words (`Do you want to proceed?`, `Allow command? cargo publish --dry-run`). This module
picks those lines out of a region and makes them one short, display-safe line, which the
classification then carries as its `msg`.

Two ways to find it:
- a manifest rule's `question` names the region (and optionally line regexes, in the
  order the lines should be shown);
- otherwise (or when those find nothing) the default takes the lines around the text
  the rule matched: the nearest line with a `?`, plus one line of context.

Never part of a question, whatever the manifest says: empty lines, horizontal rules and
box borders, numbered/lettered choices (`❯ 1. Yes`, `Yes (y)   No (n)`) and key hints
(`Esc to cancel`, `enter to confirm`) — a line holding a `?` is always kept.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from paneboard_protocol.text import sanitize_text

MAX_QUESTION = 300
"""Characters of question text carried (a card line, a notification body): far under the
2048 P7501-19 allows a reported msg, because it is read off a screen, not chosen."""

MAX_QUESTION_LINES = 4
"""Screen lines joined into one question at most."""

DEFAULT_TITLE_REGION = "bottom_lines(12)"
"""Where a title-only rule looks for its question: the title itself says nothing."""

_BORDER = re.compile(r"^[\s─━═—\-│┃║|╭╮╰╯┌┐└┘├┤┬┴┼+_=~.·]*$")
_CHOICE = re.compile(
    r"^[\s│┃|]*(?:[❯›>▶▸→*❭·●◯○]\s*)?"
    r"(?:\d{1,2}[.)]?\s+\S|\(?[a-z]\)\s|(?:yes|no|allow|deny|reject|always|cancel)\b)",
    re.IGNORECASE,
)
_HINTS = (
    "esc to ",
    "enter to ",
    "to navigate",
    "tab to ",
    "ctrl+",
    "shift+tab",
    "to interrupt",
    "esc cancel",
    "↵ confirm",
    "(esc)",
)
_LEAD = re.compile(r"^[\s│┃║|]*(?:[●•◦⏺✻✳✦❯›>▶▸→*⎿└├△?]+\s+)?")
_TRAIL = re.compile(r"[\s│┃║|]+$")
_SPACES = re.compile(r"\s+")


@dataclass(frozen=True, slots=True)
class Question:
    """A rule's `question` key: where its prompt's text is, and which lines of it."""

    region: str | None  # None: the rule's own region (a title-only rule: DEFAULT_TITLE_REGION)
    lines: tuple[re.Pattern[str], ...] = ()  # empty: every line that is not noise


def is_noise(line: str) -> bool:
    """A line that is never part of a question: empty, a border, a choice or a key hint."""
    if "?" in line:
        return False
    if _BORDER.match(line):
        return True
    if _CHOICE.match(line):
        return True
    low = line.casefold()
    return any(h in low for h in _HINTS)


def clean_line(line: str) -> str:
    """One screen line as question text: borders, bullets and selection markers off,
    whitespace runs made one space, controls and invisible characters removed."""
    text = _TRAIL.sub("", _LEAD.sub("", sanitize_text(line)))
    return _SPACES.sub(" ", text).strip()


def join_question(lines: Sequence[str]) -> str | None:
    """Lines of a question as one bounded line (` / ` between them), or None if empty."""
    parts: list[str] = []
    for ln in lines:
        text = clean_line(ln)
        if text and text not in parts:
            parts.append(text)
        if len(parts) == MAX_QUESTION_LINES:
            break
    if not parts:
        return None
    out = " / ".join(parts)
    if len(out) > MAX_QUESTION:
        out = out[: MAX_QUESTION - 1].rstrip() + "…"
    return out


def select_lines(lines: Sequence[str], patterns: Sequence[re.Pattern[str]]) -> list[str]:
    """The lines a `question` key names. No regexes: every line of the region that is not
    noise, in screen order. Regexes: each picks the *last* line it matches (the live
    prompt is at the bottom; older questions scrolled up above it), in the order of the
    list, so a manifest decides the order: the question first, then what it is about."""
    if not patterns:
        return [ln for ln in lines if not is_noise(ln)]
    out: list[str] = []
    for pat in patterns:
        hit = next((ln for ln in reversed(lines) if pat.search(ln) and not is_noise(ln)), None)
        if hit is not None and hit not in out:
            out.append(hit)
    return out


def default_lines(lines: Sequence[str], anchor: int | None, *, ask_only: bool = False) -> list[str]:
    """The lines around the matched text: the line with a `?` nearest the match (at or
    above it first), else the matched line, plus the nearest line of context below it
    (else above it). Noise lines are skipped; nothing usable gives []. `ask_only`: a
    line with a `?` or nothing (a title rule points at no line, and the last line of an
    arbitrary screen is no question)."""
    if not lines:
        return []
    n = len(lines)
    at = n - 1 if anchor is None or not 0 <= anchor < n else anchor
    asks = [i for i, ln in enumerate(lines) if "?" in ln]
    if asks:
        above = [i for i in asks if i <= at]
        q = above[-1] if above else asks[0]
    elif ask_only:
        return []
    else:
        found = next((i for i in range(at, -1, -1) if not is_noise(lines[i])), None)
        if found is None:
            return []
        q = found
    context = None
    for i in range(q + 1, min(n, q + 3)):
        if not lines[i].strip():
            continue
        if not is_noise(lines[i]):
            context = i
        break
    if context is None:
        for i in range(q - 1, max(-1, q - 4), -1):
            if lines[i].strip() and not is_noise(lines[i]):
                context = i
                break
    return [lines[q]] if context is None else [lines[q], lines[context]]


def screen_question(screen: str | None, rows: int = 12) -> str | None:
    """The question at the bottom of a screen no manifest reads: the last line among the
    bottom `rows` non-empty ones that holds a `?` (`Approve the deploy? [y/N]`), alone.

    For an agent known only from its THINKTERM_AGENT contract, which says `blocked` but
    carries no text: without a manifest nothing says which other lines belong to it."""
    if not screen:
        return None
    lines = [ln for ln in screen.replace("\r\n", "\n").split("\n") if ln.strip()][-rows:]
    ask = next((ln for ln in reversed(lines) if "?" in ln), None)
    return None if ask is None else join_question([ask])


__all__ = [
    "DEFAULT_TITLE_REGION",
    "MAX_QUESTION",
    "MAX_QUESTION_LINES",
    "Question",
    "clean_line",
    "default_lines",
    "is_noise",
    "join_question",
    "screen_question",
    "select_lines",
]
