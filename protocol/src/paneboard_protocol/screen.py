"""A pane's screen as the board shows it, and the answers its prompt takes.

Shared by the collector (which captures and answers) and the tests; pure, no I/O.

* `clean_line`: a `capture-pane -e` line keeps its SGR colour escapes (`ESC [ ... m`)
  and loses every other control, so what is relayed and stored can only colour text;
* `plain`: the same line without any escape, what rules and fingerprints read;
* `offer`: for a blocked pane, its declared answers (labels as its screen draws them)
  or free text (a `question` with none), from the manifest rule matching the screen,
  and the fingerprint of the prompt (`prompt.py`): an answer names the fingerprint of
  the prompt its operator saw; the collector types it only if a fresh capture still
  has that fingerprint, so nobody answers a prompt that has moved on. For an idle or
  done agent whose manifest reads its input prompt on the screen: a follow-up, under
  the fingerprint of that input prompt (`prompt.input_fingerprint`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from paneboard_protocol.choices import Choice
from paneboard_protocol.pane import State
from paneboard_protocol.prompt import (
    input_fingerprint,
    prompt_choices,
    prompt_fingerprint,
    screen_fingerprint,
)
from paneboard_protocol.rules import Answer, Manifest, RuleSet
from paneboard_protocol.wire import AnswerChoice

_SGR = re.compile(r"\x1b\[[0-9;:]*m")
# CSI (7- and 8-bit), OSC/DCS/APC/PM/SOS strings (to BEL or ST), two-byte escapes
_ANY_ESCAPE = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]|\x9b[0-?]*[ -/]*[@-~]"
    r"|\x1b[\]PX^_][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]|\x1b"
)
_CONTROLS = re.compile(r"[\x00-\x08\x0a-\x1f\x7f\x80-\x9f]")
LINE_MAX = 4096


def clean_line(line: str) -> str:
    """Only SGR escapes and printable text survive (tabs become spaces); bounded."""
    out: list[str] = []
    pos = 0
    for m in _ANY_ESCAPE.finditer(line):
        out.append(_CONTROLS.sub("", line[pos : m.start()].replace("\t", " ")))
        if _SGR.fullmatch(m.group(0)):
            out.append(m.group(0))
        pos = m.end()
    out.append(_CONTROLS.sub("", line[pos:].replace("\t", " ")))
    text = "".join(out)
    if len(text) > LINE_MAX:
        text = text[:LINE_MAX]
        cut = text.rfind("\x1b")
        if cut >= 0 and "m" not in text[cut:]:
            text = text[:cut]  # never end on half an escape
    return text


def plain(line: str) -> str:
    """The text of a line, escapes removed."""
    return _ANY_ESCAPE.sub("", line)


@dataclass(frozen=True, slots=True)
class Offer:
    """What a blocked screen takes: declared answers, free text, the prompt's text and
    its fingerprint (what an answer must name)."""

    offered: tuple[Choice, ...] = ()  # each read from its own line (`choices.py`)
    text: bool = False
    prompt: str | None = None
    fingerprint: str = ""
    follow_up: bool = False  # an idle agent at its input prompt: takes a follow-up

    @property
    def answers(self) -> tuple[tuple[Answer, str], ...]:
        """(answer, label as drawn) of each answer offered, in order."""
        return tuple((c.answer, c.label) for c in self.offered)

    def choices(self) -> list[AnswerChoice]:
        return [AnswerChoice(id=c.answer.id, label=c.label, option=c.number) for c in self.offered]

    def keys(self, answer_id: str) -> tuple[str, ...] | None:
        """The keys of the offered answer `answer_id`: those its label's choice takes."""
        for c in self.offered:
            if c.answer.id == answer_id:
                return c.keys
        return None


NOTHING = Offer()


def offer(
    rules: RuleSet | None,
    agent: str | None,
    state: State | None,
    kind: str | None,
    screen: str,
    title: str | None = None,
    msg: str | None = None,
    since: float | None = None,
    styled: Sequence[str] | None = None,
) -> Offer:
    """The answers a pane in `state`/`kind` takes on this (plain) screen.

    The fingerprint of the screen (`prompt.py`) whatever the state: of the prompt the
    matched blocked rule read, else of the whole screen. Answers only when blocked: the
    manifest of `agent` read on this screen: a blocked rule with declared answers
    offers those its prompt draws, each label read from the choice its keys select
    (`choices.py`), and nothing else; a rule without any takes free text if its kind
    is `question`, and anything else takes nothing. `since`: when the pane's state began (a prompt
    asked again later is a new prompt). `styled`: the same rows with their colours
    (`capture-pane -e`), which say what a menu drawn in colour has selected; without
    them an answer that needs a selection is not offered.

    Idle or done: a follow-up, where `agent`'s manifest reads its input prompt on this
    screen (a rule of that state matches it), under `prompt.input_fingerprint`; a pane
    whose screen no such rule reads (a shell, a program without a manifest, an agent
    busy in a dialog, an idle known only from its title) takes none.

    Each line is read without its trailing spaces, as `capture-pane -p` gives the
    classifier the screen: a capture with colours keeps the spaces before a colour
    change, and prompt_toolkit (Aider) erases a deleted character by writing a space
    over it, so "diff>  " must read as the "diff>" the classifier saw idle."""
    screen = "\n".join(ln.rstrip() for ln in screen.split("\n"))
    whole = screen_fingerprint(screen.split("\n"), since)
    manifest: Manifest | None = rules.for_agent(agent) if rules is not None else None
    if state in ("idle", "done"):
        if manifest is not None:
            match = manifest.match(screen, title or "", "")
            rule = next((r for r in manifest.rules if match and r.id == match.rule), None)
            # a title or progress rule says idle whatever covers the input prompt (a
            # dialog, a menu): only a rule that reads the screen has seen the prompt
            if match is not None and match.state in ("idle", "done") and rule is not None and not rule.native:
                fp = input_fingerprint(manifest, match.rule, screen, since)
                return Offer(fingerprint=fp, follow_up=True)
        return Offer(fingerprint=whole)
    if state != "blocked":
        return Offer(fingerprint=whole)
    if manifest is not None:
        match = manifest.match(screen, title or "", "")
        if match is not None and match.state == "blocked":
            rule = next((r for r in manifest.rules if r.id == match.rule), None)
            if rule is not None:
                got = prompt_choices(manifest, rule, screen, title or "", styled) if rule.answers else ()
                fp = prompt_fingerprint(manifest, rule, screen, got, title or "", since)
                prompt = match.msg or msg
                if got:
                    return Offer(got, False, prompt, fp)
                # a rule that declares answers but finds none drawn takes no free
                # text either: typed into a menu it would pick something unseen
                takes_text = not rule.answers and (
                    match.kind == "question" or (match.kind is None and kind == "question")
                )
                return Offer((), takes_text, prompt, fp)
    return Offer((), kind == "question", msg, whole)
