"""`sanitize_text`: report text made safe to display (P7501-19)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from paneboard_protocol import sanitize_text

BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
INVISIBLE = "\u200b\u2060\u2061\u2062\u2063\u2064\ufeff\u00ad\U000e0001\U000e0041\ufff9"


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        pytest.param("Apply 3 to add?", "Apply 3 to add?", id="P7501-19 plain ASCII untouched"),
        pytest.param("héllo ✓ 日本", "héllo ✓ 日本", id="P7501-19 ordinary unicode kept"),
        pytest.param("abc\u202edcb", "abcdcb", id="P7501-19 RLO stripped"),
        pytest.param("\u2067evil\u2069 ok", "evil ok", id="P7501-19 isolates stripped"),
        pytest.param("pay\u200bpal", "paypal", id="P7501-19 zero width space stripped"),
        pytest.param("a\tb\nc\r\nd", "a b c  d", id="P7501-19 line breaks become spaces"),
        pytest.param("a\u2028b\u2029c", "a b c", id="P7501-19 unicode separators become spaces"),
        pytest.param("x\x1b[2Jy\x07", "x[2Jy", id="P7501-19 controls stripped"),
        pytest.param("x\u009b2Jy", "x2Jy", id="P7501-19 C1 stripped"),
        pytest.param("👨\u200d👩\u200d👧", "👨\u200d👩\u200d👧", id="P7501-19 ZWJ kept for emoji"),
        pytest.param("", "", id="P7501-19 empty"),
    ],
)
def test_sanitize(raw, clean):
    assert sanitize_text(raw) == clean


def test_every_bidi_and_invisible_character_removed():
    assert sanitize_text("a" + BIDI + INVISIBLE + "b") == "ab"


@given(st.text())
def test_sanitize_is_idempotent_and_leaves_no_bidi(text):
    once = sanitize_text(text)
    assert sanitize_text(once) == once
    assert not any(ch in once for ch in BIDI + INVISIBLE + "\n\r\t\x1b")
