"""The neighbour sequences (P7501-14): OSC 9;4 progress, titles, OSC 133 marks, RIS."""

from __future__ import annotations

import pytest
from decoder_helpers import ST, decode, decode_one, osc
from paneboard_protocol.events import Progress, PromptMark, Rejected, Reset, Title


@pytest.mark.parametrize(
    ("body", "expect"),
    [
        pytest.param("9;4;1;40", Progress(0, state=1, percent=40), id="P7501-14 progress set 40"),
        pytest.param("9;4;0", Progress(0, state=0), id="P7501-14 progress remove"),
        pytest.param("9;4;0;50", Progress(0, state=0), id="progress remove ignores percent"),
        pytest.param("9;4;2", Progress(0, state=2), id="progress error without percent"),
        pytest.param("9;4;2;80", Progress(0, state=2, percent=80), id="progress error with percent"),
        pytest.param("9;4;3", Progress(0, state=3), id="RI-7 progress indeterminate"),
        pytest.param("9;4;3;20", Progress(0, state=3), id="progress indeterminate ignores percent"),
        pytest.param("9;4;4;10", Progress(0, state=4, percent=10), id="progress paused"),
        pytest.param("9;4;1;150", Progress(0, state=1, percent=100), id="progress percent clamped"),
        pytest.param("9;4;1", Progress(0, state=1), id="progress set without percent"),
        pytest.param("9;4;1;", Progress(0, state=1), id="progress set with empty percent"),
    ],
)
def test_progress(body, expect):
    assert decode_one(osc(body)) == expect


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        pytest.param("9;4;7", "unknown progress state '7'", id="progress unknown state"),
        pytest.param("9;4", "without a progress state", id="progress without state"),
        pytest.param("9;4;1;abc", "is not an integer", id="progress bad percent"),
        pytest.param("9;4;1;-3", "is not an integer", id="progress negative percent"),
    ],
)
def test_progress_rejected(body, reason):
    ev = decode_one(osc(body))
    assert isinstance(ev, Rejected) and ev.proto == "progress" and reason in ev.reason


def test_osc_9_notification_is_not_progress():
    assert decode(osc("9;Build finished") + osc("9;42")) == []


@pytest.mark.parametrize(
    ("body", "expect"),
    [
        pytest.param("0;hello", Title(0, title="hello", code=0), id="title OSC 0"),
        pytest.param("1;icon", Title(0, title="icon", code=1), id="title OSC 1 icon"),
        pytest.param("2;⠋ Claude Code", Title(0, title="⠋ Claude Code", code=2), id="TA-3 spinner title"),
        pytest.param("2;", Title(0, title="", code=2), id="title empty"),
        pytest.param("2;a;b", Title(0, title="a;b", code=2), id="title with semicolon"),
    ],
)
def test_title(body, expect):
    assert decode_one(osc(body)) == expect


def test_title_invalid_utf8_is_replaced_not_dropped():
    assert decode_one(osc(b"2;caf\xe9")) == Title(0, title="caf\ufffd", code=2)


def test_title_without_semicolon_is_ignored():
    assert decode(osc("2")) == []


@pytest.mark.parametrize(
    ("body", "expect"),
    [
        pytest.param("133;A", PromptMark(0, mark="A"), id="P7501-8 prompt start A"),
        pytest.param("133;B", PromptMark(0, mark="B"), id="prompt B"),
        pytest.param("133;C", PromptMark(0, mark="C"), id="prompt C"),
        pytest.param("133;D", PromptMark(0, mark="D"), id="prompt D no exit"),
        pytest.param("133;D;0", PromptMark(0, mark="D", exit=0), id="prompt D exit 0"),
        pytest.param("133;D;127", PromptMark(0, mark="D", exit=127), id="prompt D exit 127"),
        pytest.param("133;D;aid=3", PromptMark(0, mark="D"), id="prompt D options no exit"),
        pytest.param("133;A;cl=m;aid=7", PromptMark(0, mark="A"), id="prompt A with options"),
        pytest.param("133;C;1", PromptMark(0, mark="C"), id="prompt exit only for D"),
    ],
)
def test_prompt(body, expect):
    assert decode_one(osc(body, ST)) == expect


def test_prompt_other_marks_ignored():
    assert decode(osc("133;P;k=i") + osc("133;L") + osc("133;")) == []


def test_P7501_21_ris_is_reset():
    assert decode(b"abc\x1bcdef") == [Reset(3)]


def test_P7501_21_soft_reset_and_alt_screen_are_not_reset():
    assert decode(b"\x1b[!p\x1b[?1049h\x1b[?1049l\x1b[?47h") == []


def test_ris_after_intermediate_is_another_sequence():
    assert decode(b"\x1b(c\x1b#c") == []


def test_unknown_osc_ignored_even_with_rejections():
    assert decode(osc("8;;http://x") + osc("52;c;" + "A" * 5000) + osc("777;notify;a;b")) == []
