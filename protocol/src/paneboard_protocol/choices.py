"""The choices a blocked prompt offers, each read from its own line of the prompt.

Why one function: a button says one thing and its keys type another the moment the
label, the keys and the fingerprint are read from different lines. They were: a label
was the *first* line of the screen an answer's regex matched, the fingerprint marked
the *last*, and the keys were the manifest's whatever the line. A numbered list in the
model's text above Claude Code's select form ("1. Keep the production database")
labelled the button whose `1` picks the form's "1. Drop the production database".
Here every offered answer is a `Choice`: the answer (its keys), the label read from
one line, and that line's row, which the fingerprint covers (`prompt.py`).

Where the line comes from:

* an answer with `option = N` types the prompt's numbered choice N. The options are
  the **option block nearest the bottom** (`option_block`): lines `1.` … `n.` in order
  with nothing between them but indented continuation lines of the option above;
  anything else between them, a number out of order, or no `1.`: no block, and a rule
  whose answers name options offers nothing at all, never a guess. The answer's
  `line` must match option N's own line (its label is the regex's first group, else
  the option's text), and the selection marker (`❯`, `›`, `●` before the number) is
  read on that line only;
* an answer with a `line` but no option (OpenCode's one-line menu, Codex's "esc to
  cancel", Aider's "(D)on't ask again") is read on the matching line nearest the
  bottom, below the top of the prompt's question, and its `selected` regex on the
  highlighted texts of that same line only (not a look-alike elsewhere on the screen);
* an answer with neither (Escape: "No", "Cancel") is drawn nowhere and always offered.

Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from paneboard_protocol.highlight import highlighted
from paneboard_protocol.rules import Answer, Rule
from paneboard_protocol.rules.answers import LABEL_MAX

#: box borders a prompt may be drawn in (Gemini CLI's confirmation box)
_BORDERS = "│┃║|"
#: glyphs drawn before a numbered choice's number when it is the selected one
MARKERS = "❯›●>▶▸➤"
#: columns a choice's number may sit right of another's in one menu (a `❯ ` marker)
SLACK = 2
_OPTION = re.compile(r"^(\s*)(?:([" + re.escape(MARKERS) + r"])\s*)?(\d{1,2})\.\s+(\S.*?)\s*$")


@dataclass(frozen=True, slots=True)
class Option:
    """One numbered choice of a prompt, as drawn on its own line."""

    number: int
    row: int  # index into the rows the block was read from
    text: str  # the choice's text on that line (no marker, no number)
    selected: bool  # the selection marker is on this very line


@dataclass(frozen=True, slots=True)
class Choice:
    """An answer a screen offers: what it types, what it says, where it says it."""

    answer: Answer
    label: str
    row: int | None  # the row its label was read from (None: drawn nowhere, e.g. Escape)
    number: int | None = None  # the numbered choice its keys select

    @property
    def keys(self) -> tuple[str, ...]:
        return self.answer.keys


def _inner(line: str) -> str:
    """A line without the box border at either end (indentation inside it kept)."""
    text = line.rstrip()
    bare = text.lstrip()
    if bare[:1] and bare[0] in _BORDERS:
        text = bare[1:]
    if text[-1:] and text[-1] in _BORDERS:
        text = text[:-1].rstrip()
    return text


_Parsed = tuple[int, int, str, bool]  # number, column of the number, text, selected


def _option(line: str) -> _Parsed | None:
    """(number, column of the number, text, selected) of a numbered choice line."""
    m = _OPTION.match(_inner(line))
    if m is None:
        return None
    return int(m.group(3)), m.start(3), m.group(4), m.group(2) is not None


def _indent(line: str) -> int:
    text = _inner(line)
    return len(text) - len(text.lstrip())


def _nearest_above(parsed: Sequence[_Parsed | None], rows: Sequence[str], i: int) -> int | None:
    """The nearest numbered line above row `i` with no blank line between."""
    for j in range(i - 1, -1, -1):
        if not rows[j].strip():
            return None
        if parsed[j] is not None:
            return j
    return None


def option_block(rows: Sequence[str]) -> tuple[Option, ...]:
    """The numbered options 1..n nearest the bottom of `rows`, in order; () if the
    bottom-most choice line does not close a consistent block.

    Choices of one menu start at one column, give or take a selection marker
    (`SLACK`); a numbered line indented deeper than the choice above it is text inside
    that choice (a description the model wrote: "     1. Delete everything"), never a
    choice. From the bottom-most choice upwards each line is either the choice before
    (its number one less, at the block's column) or an indented continuation of that
    choice (non-blank, indented past its number); the block ends at choice 1."""
    parsed = [_option(r) for r in rows]
    last: int | None = None
    for i in range(len(rows) - 1, -1, -1):
        got = parsed[i]
        if got is None:
            continue
        above = _nearest_above(parsed, rows, i)
        if above is not None and got[1] > (parsed[above] or got)[1] + SLACK:
            continue
        last = i
        break
    if last is None:
        return ()
    column = (parsed[last] or (0, 0, "", False))[1]
    found: list[Option] = []
    pending: list[int] = []  # rows between this choice and the one below it
    expect: int | None = None
    for i in range(last, -1, -1):
        got = parsed[i]
        if got is not None and got[1] > column + SLACK:
            got = None  # numbered text inside a choice, deeper than the choices
        if got is None:
            if not rows[i].strip():
                return ()
            pending.append(i)
            continue
        number, at, text, selected = got
        if (expect is not None and number != expect) or at < column - SLACK:
            return ()
        if any(_indent(rows[j]) <= at for j in pending):
            return ()
        pending.clear()
        found.append(Option(number, i, " ".join(text.split())[:LABEL_MAX], selected))
        if number == 1:
            return tuple(reversed(found))
        expect = number - 1
    return ()


def _label(answer: Answer, line: str, fallback: str) -> str | None:
    """The label `answer` shows when read on `line`, or None: its `line` does not match."""
    if answer.line is None:
        return fallback
    m = answer.line.search(line)
    if m is None:
        return None
    label = m.group(1) if m.groups() and m.group(1) else fallback
    return " ".join(label.split())[:LABEL_MAX] or answer.label


def _marked(styled: Sequence[str] | None, row: int, pattern: re.Pattern[str]) -> bool:
    """Whether a highlighted text of row `row` (colours known) matches `pattern`."""
    if styled is None or not 0 <= row < len(styled):
        return False
    return any(pattern.search(t) for t in highlighted(styled[row]))


def choices(
    rule: Rule, rows: Sequence[str], styled: Sequence[str] | None = None, head: int = 0
) -> tuple[Choice, ...]:
    """The answers of `rule` this prompt offers, in the rule's order (module doc).

    `rows`: the screen rows the rule read (plain text); `styled`: the same rows with
    their colours, or None (an answer that needs a highlighted selection is then not
    offered); `head`: the first row of the prompt's question, above which a choice
    line that is not numbered is not looked for."""
    numbered = any(a.option is not None for a in rule.answers)
    block = {o.number: o for o in option_block(rows)} if numbered else {}
    if numbered and not block:
        return ()
    out: list[Choice] = []
    for a in rule.answers:
        if a.option is not None:
            opt = block.get(a.option)
            if opt is None:
                continue
            if a.moves_from is not None:
                start = block.get(a.moves_from)
                if start is None or not start.selected:
                    continue
            label = _label(a, rows[opt.row], opt.text)
            if label is None or (a.selected is not None and not _marked(styled, opt.row, a.selected)):
                continue
            out.append(Choice(a, label, opt.row, opt.number))
        elif a.line is not None:
            pattern = a.line
            row = next((i for i in range(len(rows) - 1, head - 1, -1) if pattern.search(rows[i])), None)
            if row is None:
                continue
            label = _label(a, rows[row], a.label)
            if label is None or (a.selected is not None and not _marked(styled, row, a.selected)):
                continue
            out.append(Choice(a, label, row))
        else:
            out.append(Choice(a, a.label, None))
    return tuple(out)


__all__ = ["MARKERS", "Choice", "Option", "choices", "option_block"]
