"""The control-mode parser, pure: real tmux 3.3a byte shapes, and any chunking."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from paneboard_agent.tmux.control import (
    Block,
    Continue,
    ControlParser,
    Exit,
    Lost,
    Notice,
    Output,
    Pause,
    attach_argv,
    check_read_only,
    parse_version,
    unescape,
)

# Captured from `tmux -C attach -f ignore-size,read-only,pause-after=2` on tmux 3.3a.
REAL = (
    b"%begin 1796219173 264 0\n%end 1796219173 264 0\n"
    b"%session-changed $0 main\n"
    b"%begin 1796219173 269 1\nX %0 11008 bash\n%end 1796219173 269 1\n"
    b"%extended-output %0 0 : \\033[?2004hroot@vm:/tmp# \n"
    b"%window-add @1\n"
    b"%extended-output %0 0 : a\\033]7501;state=working\\007\\015\\012\n"
    b"%output %1 x\\134y\n"
    b"%unlinked-window-add @2\n%sessions-changed\n%unlinked-window-close @1\n"
    b"%layout-change @1 b25d,80x24,0,0,1 b25d,80x24,0,0,1 *\n"
    b"%pause %3\n%continue %3\n"
    b"%exit\n"
)

EXPECTED = [
    Block(264, 0, True, ()),
    Notice("session-changed", ("$0", "main")),
    Block(269, 1, True, (b"X %0 11008 bash",)),
    Output("%0", b"\x1b[?2004hroot@vm:/tmp# ", 0),
    Notice("window-add", ("@1",)),
    Output("%0", b"a\x1b]7501;state=working\x07\r\n", 0),
    Output("%1", b"x\\y"),
    Notice("unlinked-window-add", ("@2",)),
    Notice("sessions-changed", ()),
    Notice("unlinked-window-close", ("@1",)),
    Notice("layout-change", ("@1", "b25d,80x24,0,0,1", "b25d,80x24,0,0,1", "*")),
    Pause("%3"),
    Continue("%3"),
    Exit(None),
]


def test_real_stream_parses_to_expected_notifications() -> None:
    assert ControlParser().feed(REAL) == EXPECTED


def test_reply_lines_are_never_notifications() -> None:
    """tmux sends no notification inside a reply (tmux(1), CONTROL MODE): a reply line
    that starts with `%` (a program's name in a listing once did) is reply text."""
    data = (
        b"%begin 1 7 1\nline one\n%sessions-changed\n%window-add @4\n%output %2 hi\n"
        b"%exit\n%end 1 7 0\n%end 2 7 1\nline two\n%end 1 7 1\n%sessions-changed\n"
    )
    assert ControlParser().feed(data) == [
        Block(
            7,
            1,
            True,
            (
                b"line one",
                b"%sessions-changed",
                b"%window-add @4",
                b"%output %2 hi",
                b"%exit",
                b"%end 1 7 0",  # not the `%begin`'s flags
                b"%end 2 7 1",  # nor its time
                b"line two",
            ),
        ),
        Notice("sessions-changed", ()),
    ]


def test_an_overlong_reply_line_cuts_the_reply_and_is_no_lost_output() -> None:
    p = ControlParser(max_line=40)
    out = p.feed(b"%begin 1 3 1\n%output %5 " + b"x" * 50 + b"\nok\n%end 1 3 1\n")
    assert out == [Block(3, 1, True, (b"ok",), truncated=True)]
    p.feed(b"%begin 1 4 1\n%output %5 " + b"y" * 50)
    assert p.feed(b"y\n%end 1 4 1\n") == [Block(4, 1, True, (), truncated=True)]


def test_error_block_and_foreign_end_number() -> None:
    data = b"%begin 1 9 1\n%end 1 8 1\nparse error\n%error 1 9 1\n"
    # `%end 1 8 1` does not close block 9; it is not a notification either, so it is reply text
    assert ControlParser().feed(data) == [Block(9, 1, False, (b"%end 1 8 1", b"parse error"))]


def test_unescape() -> None:
    assert unescape(b"a\\033b\\134\\012") == b"a\x1bb\\\n"
    assert unescape(b"no escapes") == b"no escapes"
    assert unescape(b"\\9zz") == b"\\9zz"  # not octal: kept as is
    assert unescape(b"\\377") == b"\xff"
    assert unescape(b"\\134015") == b"\\015"  # an escaped backslash then digits: not CR


_PIECES = [
    b"\\",
    b"0",
    b"1",
    b"5",
    b"7",
    b"8",
    b"a",
    b"\\015",
    b"\\012",
    b"\\033",
    b"\\011",
    b"\\134",
    b"\\377",
]


@settings(max_examples=500)
@given(st.lists(st.sampled_from(_PIECES), max_size=16))
def test_unescape_is_the_one_regex_pass(pieces: list[bytes]) -> None:
    """The common escapes replaced first give exactly what one left-to-right pass does."""
    import re

    data = b"".join(pieces)
    reference = re.sub(rb"\\([0-7]{3})", lambda m: bytes((int(m[1], 8) & 0xFF,)), data)
    assert unescape(data) == reference


def test_overlong_line_is_dropped_with_its_pane_and_parsing_recovers() -> None:
    p = ControlParser(max_line=100)
    out = p.feed(b"%output %5 " + b"x" * 80)
    assert out == []
    out = p.feed(b"y" * 80 + b"\n%output %5 ok\n")
    assert out == [Lost("%5", "line too long"), Output("%5", b"ok")]


def test_overlong_line_in_one_chunk() -> None:
    p = ControlParser(max_line=50)
    assert p.feed(b"%output %7 " + b"z" * 60 + b"\n%exit\n") == [Lost("%7", "line too long"), Exit(None)]


def test_block_size_is_bounded() -> None:
    p = ControlParser(max_block=20)
    out = p.feed(b"%begin 1 2 1\n0123456789\n0123456789\n0123456789\n%end 1 2 1\n")
    assert out == [Block(2, 1, True, (b"0123456789",), truncated=True)]


def test_garbage_outside_blocks_is_reported_not_fatal() -> None:
    out = ControlParser().feed(b"hello\n%output %1 a\n")
    assert out == [Lost(None, "unexpected line outside a block"), Output("%1", b"a")]


def test_bad_pane_ids_are_lost_not_crashes() -> None:
    out = ControlParser().feed(b"%output 5 a\n%pause x\n%extended-output %1 zz\n")
    assert [type(n) for n in out] == [Lost, Lost, Lost]


@settings(max_examples=300, deadline=None)
@given(cuts=st.lists(st.integers(min_value=0, max_value=len(REAL)), max_size=40))
def test_any_chunking_gives_the_same_notifications(cuts: list[int]) -> None:
    points = sorted(set(cuts))
    chunks = [REAL[a:b] for a, b in zip([0, *points], [*points, len(REAL)], strict=True)]
    p = ControlParser()
    out = []
    for c in chunks:
        out += p.feed(c)
    assert out == EXPECTED


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=300), cut=st.integers(min_value=0, max_value=300))
def test_escaped_output_roundtrips_for_any_bytes(data: bytes, cut: int) -> None:
    # tmux escapes bytes < 0x20 and backslash as \ooo; everything else is raw
    esc = b"".join(b"\\%03o" % b if b < 0x20 or b == 0x5C else bytes((b,)) for b in data)
    line = b"%output %3 " + esc + b"\n"
    cut = min(cut, len(line))
    p = ControlParser()
    assert p.feed(line[:cut]) + p.feed(line[cut:]) == [Output("%3", data)]


def test_read_only_guard() -> None:
    check_read_only("list-panes -a -F '#{pane_id}'")
    check_read_only("refresh-client -A '%3:continue'")
    check_read_only("display-message -p '#{client_pid}'")
    for bad in (
        "new-window",
        "kill-server",
        "refresh-client -C 10x10",
        "display-message hello",
        "list-panes ; kill-server",
        "send-keys -t %1 x",
    ):
        with pytest.raises(ValueError):
            check_read_only(bad)


def test_version_and_attach_degrade() -> None:
    assert parse_version("tmux 3.3a") == (3, 3)
    assert parse_version("tmux next-3.5") == (3, 5)
    assert parse_version("garbage") == (0, 0)
    new = attach_argv(["tmux", "-u", "-L", "x"], "s", (3, 3), 5)
    assert new == [
        "tmux",
        "-u",
        "-L",
        "x",
        "-N",
        "-C",
        "attach-session",
        "-t",
        "=s",
        "-f",
        "ignore-size,read-only,pause-after=5",
    ]
    old = attach_argv(["tmux"], "s", (2, 9), 5)
    assert "-f" not in old and "-N" not in old and "-r" in old
