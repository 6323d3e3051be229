"""The fingerprint of a prompt: what an operator approves, not the whole screen.

An answer names the fingerprint of the prompt its operator was shown; the collector
types it only if a fresh capture gives the same one. It used to be the sha256 of the
whole visible screen, so anything animated anywhere on it — Claude Code's transcript
bullet blinking `●` ↔ ` ` every half second, a spinner in a sidebar, a clock — changed
it and the first tap bounced as `changed` about half the time.

What is covered (docs/answers.md, "What the fingerprint covers"):

* the **prompt block**: the lines of the (bottom `rows` of the) screen from the top of
  what the matched rule read — the lines its `question` picks (the question, the
  command), the line each offered answer's label was read from (its own choice line,
  `choices.py`, the same line its keys select) — down to the
  bottom of the screen, extended upwards to the start of the block the question sits
  in (the nearest horizontal rule or box top, or two blank lines; at most
  `EXTEND_MAX` lines), so a command drawn above its question ("Bash command / touch
  x / Do you want to proceed?") is covered;
* the **manifest and rule id** that matched, and the **answer set** offered (ids and
  labels as drawn, in order);
* `episode`: when the pane's blocked state began, so the same question asked again
  later is a new prompt, not a replay of the answered one.

Normalised, so that animation does not change it: escapes are dropped (colours,
shimmer), trailing blanks ignored, one leading animated glyph of a line (spinner,
blinking bullet: `ANIMATED`) and the indentation before and after it removed, lines
that are a working spinner's status (`esc to interrupt`) dropped, and an elapsed-time
counter in a status position (`(12s`, `· 1m 3s`) read as one token. Anything else — a
different question, a different command, other options, the same options in another
order, a moved selection that changes what the answers offer — gives another
fingerprint.

A pane no manifest rule matches (free text into a `question` known from the program
itself) has no rule to say where its prompt is: its fingerprint covers the whole
visible screen, normalised the same way.

Pure: no I/O.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence

from paneboard_protocol.choices import Choice, choices
from paneboard_protocol.rules import Manifest, Rule
from paneboard_protocol.rules.question import default_lines, select_lines
from paneboard_protocol.rules.regions import _Screen, _screen_of, _Texts

#: lines above the prompt's first line that may still belong to its block
EXTEND_MAX = 24
#: glyphs programs animate at the start of a line: spinners and blinking bullets
ANIMATED = "●⏺◉○◌◍◎•◦∙·✻✶✳✢✽✺✹✸✷✦✧❋❊❉⋆∗*+×◐◓◑◒◴◵◶◷◰◱◲◳◜◝◞◟▖▘▝▗▌▐▀▄█▉▊▋▍▎▏░▒▓←↖↑↗→↘↓↙|/\\-"
_LEAD = re.compile(r"^\s*(?:[" + re.escape(ANIMATED) + r"\u2800-\u28ff](?=\s|$))?\s*")
_ELAPSED = re.compile(r"(?<=[(·•\[])(\s*)(?:\d+h\s*)?(?:\d+m\s*)?\d+(?:\.\d+)?s\b")
_STATUS = re.compile(r"(?i)\b(?:esc|ctrl\+c) to interrupt\b")
_ESCAPE = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]|\x9b[0-?]*[ -/]*[@-~]"
    r"|\x1b[\]PX^_][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]|\x1b"
)
_BORDERS = "│┃║|"
_RULE = re.compile(r"^[─━═—\-]{8,}$")
_BOX_TOP = re.compile(r"^[╭┌╔┏][─━═╌┄\s\w]*[╮┐╗┓]?$")


def normalise(line: str) -> str | None:
    """One screen line as the fingerprint reads it, or None: a spinner's status line."""
    text = _ESCAPE.sub("", line).rstrip()
    if _STATUS.search(text):
        return None
    text = _LEAD.sub("", text, count=1)
    return _ELAPSED.sub(r"\1#s", text)


def _bare(line: str) -> str:
    """A line without its box borders and surrounding blanks."""
    return line.strip().strip(_BORDERS).strip()


def starts_block(line: str) -> bool:
    """A line that starts a block: a horizontal rule or the top of a box (also where
    a done pane's reply ends above its input box, `reply.py`)."""
    bare = _bare(line)
    return bool(_RULE.match(bare) or _BOX_TOP.match(bare))


def _last_index(lines: Sequence[str], wanted: str) -> int | None:
    for i in range(len(lines) - 1, -1, -1):
        if lines[i] == wanted:
            return i
    return None


def _question_rows(manifest: Manifest, rule: Rule, sc: _Screen, title: str) -> list[int]:
    """The rows of the lines the rule's `question` picks (the question, the command)."""
    lines = sc.lines
    texts = _Texts(sc, title, "")
    spec = rule.question
    own = rule.gate.region
    region = spec.region if spec is not None and spec.region is not None else own
    if region in ("title", "progress"):
        region = "bottom_lines(12)"
    region_lines = texts.lines(region)
    picked = select_lines(region_lines, spec.lines) if spec is not None else []
    if not picked:
        picked = default_lines(region_lines, None, ask_only=own in ("title", "progress"))
    return [at for ln in picked if (at := _last_index(lines, ln)) is not None]


def _aligned(styled: Sequence[str] | None, screen: str, rows: int) -> list[str] | None:
    """The coloured rows that are the rule's `rows` plain rows (`_screen_of`: trailing
    empty rows dropped, the bottom ones kept), or None if they do not line up."""
    if styled is None:
        return None
    full = screen.replace("\r\n", "\n").split("\n")
    if len(styled) != len(full):
        return None
    end = len(full)
    while end and not full[end - 1].strip():
        end -= 1
    return list(styled[end - rows : end])


def prompt_choices(
    manifest: Manifest, rule: Rule, screen: str, title: str = "", styled: Sequence[str] | None = None
) -> tuple[Choice, ...]:
    """The answers `rule` offers on this (plain) screen, each read from its own line of
    the prompt (`choices.choices`); `styled`: the screen's lines with their colours."""
    sc = _screen_of(screen, manifest.rows)
    head = min(_question_rows(manifest, rule, sc, title), default=0)
    return choices(rule, sc.lines, _aligned(styled, screen, len(sc.lines)), head)


def prompt_lines(
    manifest: Manifest, rule: Rule, screen: str, title: str = "", offered: Sequence[Choice] | None = None
) -> list[str]:
    """The raw lines of `screen` the prompt of `rule` occupies (see the module doc): the
    lines its question picks and the lines its offered answers were read from (the
    choices, `prompt_choices`; by default read without colours), down to the bottom,
    extended up to the start of their block."""
    sc = _screen_of(screen, manifest.rows)
    lines = sc.lines
    marks = _question_rows(manifest, rule, sc, title)
    if offered is None:
        offered = choices(rule, lines, None, min(marks, default=0))
    marks += [c.row for c in offered if c.row is not None]
    if not marks:
        return list(lines)
    top = min(marks)
    blanks = 0
    for i in range(top - 1, max(-1, top - 1 - EXTEND_MAX), -1):
        if starts_block(lines[i]):
            break
        blanks = blanks + 1 if not _bare(lines[i]) else 0
        if blanks == 2:
            break
        top = i
    return list(lines[top:])


def _digest(parts: dict[str, object]) -> str:
    blob = json.dumps(parts, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    return hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()


def _normalised(lines: Sequence[str]) -> list[str]:
    rows = [n for ln in lines if (n := normalise(ln)) is not None]
    while rows and not rows[-1]:
        rows.pop()
    while rows and not rows[0]:
        rows.pop(0)
    return rows


def prompt_fingerprint(
    manifest: Manifest,
    rule: Rule,
    screen: str,
    offered: Sequence[Choice],
    title: str = "",
    episode: float | None = None,
) -> str:
    """sha256 hex of the prompt `rule` matched on this (plain) screen, with the rule,
    the answers offered (`prompt_choices`: id and label, in order) and the blocked
    episode's start. The lines the labels were read from are inside the prompt."""
    return _digest(
        {
            "v": 3,
            "manifest": manifest.id,
            "rule": rule.id,
            "answers": [[c.answer.id, c.label] for c in offered],
            "prompt": _normalised(prompt_lines(manifest, rule, screen, title, offered)),
            "episode": None if episode is None else round(episode, 3),
        }
    )


def input_fingerprint(manifest: Manifest, rule_id: str, screen: str, episode: float | None = None) -> str:
    """sha256 hex of an idle agent's input prompt, for a follow-up: what the operator
    saw when they wrote it.

    It covers the rows the manifest reads (its bottom `rows` rows, trailing blank rows
    dropped): the input region its idle rule `rule_id` matched and, above it, the lines
    of the agent's last answer; with the episode (when the idle or done state began).
    So text typed at the terminal (it shows in the input box), a turn that ran and
    finished meanwhile (another answer, another `since`), or another program's prompt
    all give another fingerprint. Normalised like a prompt's, so a blinking bullet or a
    spinner glyph does not move it."""
    sc = _screen_of(screen, manifest.rows)
    return _digest(
        {
            "v": 4,
            "kind": "input",
            "manifest": manifest.id,
            "rule": rule_id,
            "prompt": _normalised(sc.lines),
            "episode": None if episode is None else round(episode, 3),
        }
    )


def screen_fingerprint(visible: Sequence[str], episode: float | None = None) -> str:
    """sha256 hex of a whole visible screen, normalised: for a prompt no rule read."""
    return _digest(
        {
            "v": 2,
            "rule": None,
            "prompt": _normalised(visible),
            "episode": None if episode is None else round(episode, 3),
        }
    )


__all__ = [
    "ANIMATED",
    "EXTEND_MAX",
    "input_fingerprint",
    "normalise",
    "prompt_choices",
    "prompt_fingerprint",
    "prompt_lines",
    "screen_fingerprint",
]
