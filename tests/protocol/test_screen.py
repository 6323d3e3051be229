"""The screen as relayed (paneboard_protocol.screen): colours kept, every other control
dropped, and a whole-screen fingerprint that moves exactly when the text does."""

from __future__ import annotations

from paneboard_protocol.prompt import screen_fingerprint
from paneboard_protocol.screen import clean_line, plain


def test_only_sgr_escapes_survive() -> None:
    raw = "\x1b[1;31mred\x1b[0m \x1b]8;;http://x\x07link\x1b]8;;\x07 \x1b[2Jcls\x07\x08\tend\x1b"
    assert clean_line(raw) == "\x1b[1;31mred\x1b[0m link cls end"
    assert plain(clean_line(raw)) == "red link cls end"


def test_a_long_line_is_cut_without_half_an_escape() -> None:
    line = "x" * 4094 + "\x1b[31m" + "y"
    out = clean_line(line)
    assert len(out) <= 4096 and not out.endswith("\x1b[") and "\x1b" not in out


def test_fingerprint_reads_text_not_colours() -> None:
    a = screen_fingerprint(["\x1b[1mDo you want to proceed?\x1b[0m", " ❯ 1. Yes", "", ""])
    assert a == screen_fingerprint(["Do you want to proceed?", " ❯ 1. Yes"])
    assert a != screen_fingerprint(["Do you want to proceed?", "   1. Yes"])
    assert len(a) == 64
