"""`--help` is for people: plain words, every argument described, no spec rule IDs."""

from __future__ import annotations

import re

import pytest
from support.clirun import run_cli_text

RULE_ID = re.compile(r"\b(?:TA|RI|F|P7501)-\d+\b")


@pytest.mark.parametrize("command", ["agent", "run", "emit", "ask", "decode", "replay"])
def test_help_is_plain_words(command: str) -> None:
    res = run_cli_text(command, "--help")
    assert res.returncode == 0, res.stderr
    text = res.stdout
    assert text.startswith("usage: paneboard " + command), text
    assert not RULE_ID.findall(text), f"rule IDs in `paneboard {command} --help`:\n{text}"
    # every argument listed gets words of its own: argparse prints a bare name otherwise
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if re.match(r"^  [^ ]", line) and "  " not in line.strip():  # no help on the same line
            following = lines[i + 1] if i + 1 < len(lines) else ""
            assert re.match(r"^ {6,}\S", following), (
                f"`{line.strip()}` has no description in `paneboard {command} --help`"
            )


def test_emit_help_says_what_clears_a_blocked() -> None:
    """`emit blocked` before a `read` left cards blocked for good: the help says what ends a
    blocked and leads to `paneboard ask`, which reports the state after by itself."""
    res = run_cli_text("emit", "--help")
    assert res.returncode == 0, res.stderr
    text = res.stdout
    words = " ".join(text.split())
    assert "A blocked stands until another report for the same --id replaces it" in words
    assert "report again once answered (`paneboard emit idle`)" in words
    assert "use `paneboard ask QUESTION` instead" in words
