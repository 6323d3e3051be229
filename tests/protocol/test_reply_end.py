"""Where the agent's last reply ends (paneboard_protocol.reply), on the real programs'
done screens and on a reply longer than the window: above the input box the
manifest's idle rule points at and the hints drawn beside it, not the last row."""

from __future__ import annotations

from pathlib import Path

import pytest
from paneboard_protocol.reply import reply_end
from paneboard_protocol.rules import load_rules

FIX = Path(__file__).parent / "fixtures"
RULES = load_rules(FIX / "screens" / "no-user-rules", bundled=True)


def _end(d: str, agent: str) -> str:
    lines = (FIX / "real" / d / "done.txt").read_text(encoding="utf-8").split("\n")
    at = reply_end(lines, len(lines), RULES.for_agent(agent))
    assert at is not None
    return lines[at].strip()


@pytest.mark.parametrize(
    ("d", "agent", "end"),
    [
        ("claude", "claude", "✻ Baked for 3s · done 8:22 PM"),  # the turn's own last line
        ("claude-run", "claude", None),
        ("gemini", "gemini", "✦ All done: pb-ran exists."),
        ("aider", "aider", "Running touch pb-ran"),
        ("codex", "codex", "Worked for 1s • 20:18"),  # above its composer and footer
        ("opencode", "opencode", "▣  Build · pb-model · 27.1s"),  # its reply's own last line
        ("pi", "pi", "All done: pb-ran exists."),  # above its editor, a draft in it
        ("qwen", "qwen", "◆︎ All done: pb-ran exists."),
    ],
)
def test_the_reply_ends_above_the_input_box(d: str, agent: str, end: str | None) -> None:
    got = _end(d, agent)
    if end is not None:
        assert got == end
    assert "?" not in got and "focus-events" not in got and "❯" not in got


def test_without_a_rule_that_finds_the_input_it_is_the_last_drawn_row() -> None:
    lines = ["answer", "more of it", "", "› Ask Codex to do anything", "", ""]
    assert reply_end(lines, 6, None) == 3
    # Codex's composer rule finds its input line: the reply ends above it
    assert reply_end(lines, 6, RULES.for_agent("codex")) == 1
    # Pi's editor rule finds no editor between its rules here: the bottom is kept
    assert reply_end(lines, 6, RULES.for_agent("pi")) == 3


def test_a_long_reply_in_the_scroll_back_ends_above_the_box() -> None:
    rule = "─" * 80
    reply = [f"  line {i} of the answer" for i in range(100)]
    screen = [*reply, "  Last line.", "", rule, "❯ ", rule, "  ? for shortcuts", "", ""]
    end = reply_end(screen, 30, RULES.for_agent("claude"))
    assert end is not None and screen[end] == "  Last line."
    assert reply_end(["", "  "], 2, RULES.for_agent("claude")) is None
