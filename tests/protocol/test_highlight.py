"""The selection a menu shows only in colour, read from real OpenCode 1.18.33 captures.

OpenCode's permission dialog draws "Allow once   Allow always   Reject" as the same
text whichever is selected; Enter takes the selected one. The three captures
(`capture-pane -e`, one per selection, reached with Right) must offer "Allow once"
(Enter) only while it is selected, and a moved selection must move the fingerprint.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from paneboard_protocol.highlight import highlighted, runs
from paneboard_protocol.rules import load_rules
from paneboard_protocol.screen import offer, plain

FIX = Path(__file__).parent / "fixtures" / "real" / "opencode"
RULES = load_rules(FIX / "no-user-rules", bundled=True)
SELECTED = {"once": "Allow once", "always": "Allow always", "reject": "Reject"}


def _capture(which: str) -> list[str]:
    return (FIX / f"blocked-{which}-selected.ansi").read_text(encoding="utf-8").rstrip("\n").split("\n")


@pytest.mark.parametrize("which", list(SELECTED))
def test_the_selected_choice_is_the_highlighted_text(which: str) -> None:
    line = next(ln for ln in _capture(which) if "Allow once" in ln)
    assert SELECTED[which] in highlighted(line)
    assert not {t for t in SELECTED.values() if t != SELECTED[which]} & set(highlighted(line))


def test_the_three_captures_read_alike_as_text() -> None:
    """Why colours are needed at all: without them the three screens are one."""
    texts = {"\n".join(plain(ln) for ln in _capture(w)) for w in SELECTED}
    assert len(texts) == 1


def test_allow_once_is_offered_only_while_selected_and_moves_the_fingerprint() -> None:
    got = {}
    for which in SELECTED:
        styled = _capture(which)
        screen = "\n".join(plain(ln) for ln in styled)
        got[which] = offer(RULES, "opencode", "blocked", "permission", screen, styled=styled, since=1.0)
    assert [(a.id, a.keys) for a, _ in got["once"].answers] == [("once", ("Enter",)), ("reject", ("Escape",))]
    for which in ("always", "reject"):
        assert [a.id for a, _ in got[which].answers] == ["reject"]
    # a tap made on "Allow once" is refused once the selection moved; the other two
    # offer the same (Escape rejects whatever is selected), so they may share one
    assert got["once"].fingerprint not in {got["always"].fingerprint, got["reject"].fingerprint}


def test_no_colours_no_selection_answer() -> None:
    styled = _capture("once")
    screen = "\n".join(plain(ln) for ln in styled)
    assert [a.id for a, _ in offer(RULES, "opencode", "blocked", "permission", screen).answers] == ["reject"]


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("plain text, nothing marked", []),
        ("\x1b[48;5;234m  a  \x1b[48;5;215m b \x1b[48;5;234m  c   d  ", ["b"]),
        ("\x1b[44mone\x1b[0m two three four", ["one"]),
        ("x \x1b[7mpicked\x1b[27m y z w v", ["picked"]),
        ("bg \x1b[48;2;1;2;3mtrue\x1b[49m colour here", ["true"]),
        ("bg \x1b[48:5:9msub\x1b[m params here ok", ["sub"]),
        ("\x1b[38;5;48mfg only\x1b[0m is not a background", []),
    ],
)
def test_highlighted(line: str, expected: list[str]) -> None:
    assert highlighted(line) == expected


def test_runs_keep_the_text() -> None:
    line = next(ln for ln in _capture("once") if "Allow once" in ln)
    assert "".join(t for t, _ in runs(line)) == plain(line)
