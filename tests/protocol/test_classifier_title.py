"""The title a classification passes on is shown as a title: spinner frames off its front.

The raw title still feeds the rules (a braille frame means working), but what reaches
the card, history and stream is `display_title(...)`, so a title that animates is one
unchanging title, not a change on every frame.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from paneboard_protocol.arbitration import display_title
from paneboard_protocol.classifier import PaneClassifier
from paneboard_protocol.events import Title
from paneboard_protocol.rules import load_rules

FIXTURES = Path(__file__).parent / "fixtures" / "screens"


@pytest.mark.parametrize(
    "raw, shown",
    [
        ("⠂ project", "project"),
        ("⠋ llm-proxy", "llm-proxy"),
        ("◐ Initial conversation with Claude", "Initial conversation with Claude"),
        ("◓ Initial conversation with Claude", "Initial conversation with Claude"),
        ("✳ Claude Code", "Claude Code"),
        ("✶ Claude Code", "Claude Code"),
        ("✻ Refactoring", "Refactoring"),
        ("✽ Refactoring", "Refactoring"),
        ("[ ! ] Action Required | llm-proxy", "Action Required | llm-proxy"),
        ("[ . ] Action Required | llm-proxy", "Action Required | llm-proxy"),
        ("  ⠸  project  ", "project"),
        ("✋  Action Required (app)", "✋  Action Required (app)"),  # a state sign, not a frame
        ("project", "project"),
        ("x ⠋ y", "x ⠋ y"),  # only a leading frame goes
        ("⠋", None),
        ("", None),
        (None, None),
        ("⠋ a\u202eb", "ab"),  # and display-safe like any pane text (P7501-19)
    ],
)
def test_display_title(raw, shown):
    assert display_title(raw) == shown


def _corpus_titles():
    for line in (FIXTURES / "index.jsonl").read_text(encoding="utf-8").splitlines():
        case = json.loads(line)
        if case["title"]:
            yield case["title"]


def test_no_corpus_title_keeps_a_spinner_frame():
    from paneboard_protocol.arbitration import is_spinner

    for title in _corpus_titles():
        shown = display_title(title)
        assert shown and not is_spinner(shown[0]) and shown[0] not in "✳✶✻✽", title


def test_spinner_frames_give_one_unchanging_classification():
    rules = load_rules(FIXTURES / "no-user-rules")
    c = PaneClassifier(rules)
    c.set_process(0, "codex", 7)
    seen = set()
    for i, frame in enumerate("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"):
        c.feed(1 + i / 10, [Title(0, f"{frame} project", 2)])
        got = c.classification(1 + i / 10)
        seen.add((got.state, got.source, got.title, got.since))
    assert seen == {("working", "native", "project", 1.0)}
