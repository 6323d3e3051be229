"""Byte-level framing (spec section 2a, F-1 … F-5) and tmux passthrough."""

from __future__ import annotations

import tracemalloc

import pytest
from decoder_helpers import (
    BEL,
    SPEC_EXAMPLE,
    ST,
    agent_var,
    b64,
    decode,
    decode_chunked,
    decode_one,
    osc,
    r7501,
)
from paneboard_protocol import Decoder
from paneboard_protocol.decoder import MAX_PASSTHROUGH
from paneboard_protocol.events import (
    AgentReport,
    Probe,
    Progress,
    PromptMark,
    Rejected,
    Reset,
    StatusReport,
    Title,
)


def passthrough(inner: bytes) -> bytes:
    return b"\x1bPtmux;" + inner.replace(b"\x1b", b"\x1b\x1b") + b"\x1b\\"


# -- F-1: 7-bit tokenising ------------------------------------------------------------


@pytest.mark.parametrize("term", [BEL, ST], ids=["BEL", "ST"])
def test_F_1_both_terminators(term):
    assert decode_one(r7501("state=done", term)).state == "done"


def test_F_1_c1_bytes_are_not_controls():
    # 0x9D (8-bit OSC) and 0x9C (8-bit ST) are UTF-8 continuation bytes, never framing.
    assert decode(b"\x9d7501;state=idle\x9c") == []
    ev = decode_one(b"\x1b]2;\xe2\x80\x9c quoted \xe2\x80\x9d\x07")
    assert ev == Title(0, title="\u201c quoted \u201d", code=2)


def test_F_1_c0_inside_payload_dropped():
    # base64 line wrapping and onlcr's CR are undone.
    msg = b64("wrapped across lines")
    data = b"\x1b]7501;state=blocked:\r\nmsg=" + msg[:8].encode() + b"\r\n" + msg[8:].encode() + b"\x07"
    assert decode_one(data).msg == "wrapped across lines"


@pytest.mark.parametrize("abort", [b"\x18", b"\x1a"], ids=["CAN", "SUB"])
def test_F_1_can_sub_abort(abort):
    events = decode(b"\x1b]7501;state=working" + abort + b"state=done\x07" + r7501("state=idle"))
    assert [e.type for e in events] == ["rejected", "status"]
    assert "aborted" in events[0].reason and events[1].state == "idle"


def test_F_1_esc_other_cuts_and_starts_new_escape():
    data = b"\x1b]7501;state=working\x1b]7501;state=done\x07"
    events = decode(data)
    assert [e.type for e in events] == ["rejected", "status"]
    assert (
        events[0].proto == "osc7501" and "cut by ESC" in events[0].reason and "not sent" in events[0].reason
    )
    assert events[1] == StatusReport(20, id=None, state="done", fields={"state": "done"})


def test_F_1_cut_setuservar_not_sent():
    data = agent_var("v1;agent=a;state=working")[:-1] + b"\x1b[0m"
    events = decode(data)
    assert len(events) == 1 and events[0].proto == "thinkterm" and "cut" in events[0].reason
    assert decode(data, rejections=False) == []


@pytest.mark.parametrize(
    ("data", "expect"),
    [
        pytest.param(b"\x1b]2;hello\x1b[0m", Title(0, title="hello", code=2), id="F-1 title ended by ESC ["),
        pytest.param(
            b"\x1b]9;4;1;20\x1b]", Progress(0, state=1, percent=20), id="F-1 progress ended by ESC ]"
        ),
        pytest.param(b"\x1b]133;A\x1bc", PromptMark(0, mark="A"), id="F-1 prompt mark ended by ESC c"),
    ],
)
def test_F_1_esc_other_ends_other_oscs(data, expect):
    events = decode(data)
    assert events[0] == expect
    assert not any(isinstance(e, Rejected) for e in events)


@pytest.mark.parametrize("abort", [b"\x18", b"\x1a"], ids=["CAN", "SUB"])
def test_F_1_can_sub_abort_a_title_too(abort):
    assert decode(b"\x1b]2;hello" + abort, rejections=False) == []


def test_F_1_cut_title_still_bounded():
    data = b"\x1b]2;" + b"t" * 5000 + b"\x1b[m"
    (ev,) = decode(data)
    assert isinstance(ev, Rejected) and ev.proto == "title" and "longer than 4096" in ev.reason


def test_F_1_c0_between_esc_and_bracket_is_executed():
    # As in a VT parser (and tmux), C0 in the escape state is executed, the state kept.
    assert decode_one(b"\x1b\r]7501;state=idle\x07").state == "idle"


def test_F_1_esc_esc_bracket():
    assert decode_one(b"\x1b\x1b]7501;state=idle\x07").offset == 1


def test_F_1_intermediate_makes_other_sequence():
    assert decode(b"\x1b(]7501;state=idle\x07") == []


def test_F_1_stray_st_and_bel_ignored():
    assert decode(b"\x1b\\\x07text\x1b[31m") == []


def test_F_1_csi_final_bracket_is_not_osc():
    assert decode(b"\x1b[]7501;state=idle\x07") == []


@pytest.mark.parametrize("shift", [-3, -2, -1, 0, 1])
@pytest.mark.parametrize("intro", [b"\x1bc", b"\x1b\r]0;t\x07", b"\x1b]0;t\x07"])
def test_F_1_no_escape_unseen_at_the_scan_window_edges(shift, intro):
    # The ground scan translates a chunk in windows (decoder._SCAN_WINDOW bytes): an
    # escape at, or straddling, a window's edge in one large chunk is still seen.
    from paneboard_protocol.decoder import _SCAN_WINDOW

    data = b""
    for edge in (_SCAN_WINDOW, 2 * _SCAN_WINDOW - 1):
        data += b"x" * (edge + shift - len(data)) + intro
    data += b"\x1b[m" * 3
    events = decode(data)
    assert [e.offset for e in events] == [_SCAN_WINDOW + shift, 2 * _SCAN_WINDOW - 1 + shift]
    assert events == decode_chunked(data, [4096])


# -- F-2: string sequences skipped whole ---------------------------------------------------


@pytest.mark.parametrize("intro", [b"P", b"_", b"^", b"X"], ids=["DCS", "APC", "PM", "SOS"])
def test_F_2_strings_skipped_whole(intro):
    hidden = b"]7501;state=working\x07 \x9d7501;state=done\x07"
    data = b"\x1b" + intro + hidden + b"\x1b\\" + r7501("state=idle")
    assert [(e.type, e.state) for e in decode(data)] == [("status", "idle")]


def test_F_2_string_ends_at_esc_other():
    data = b"\x1bPq#0;2;0;0;0\x1b]7501;state=idle\x07"
    assert decode_one(data).state == "idle"


def test_F_2_string_aborted_by_can():
    assert decode_one(b"\x1b_junk\x18\x1b]7501;state=idle\x07").state == "idle"


def test_F_2_tmux_passthrough_unwrapped():
    events = decode(b"abc" + passthrough(SPEC_EXAMPLE))
    assert len(events) == 1
    assert events[0].msg == "Apply 3 to add, 1 to change, 0 to destroy?"
    assert events[0].offset == 3  # the envelope's ESC P


def test_F_2_tmux_passthrough_several_sequences():
    inner = r7501("state=working") + b"\x1b[1m" + agent_var("v1;agent=a;state=idle") + osc("2;t", ST)
    events = decode(passthrough(inner))
    assert [type(e) for e in events] == [StatusReport, AgentReport, Title]
    assert {e.offset for e in events} == {0}


def test_F_2_tmux_passthrough_nested():
    data = b"xy" + passthrough(passthrough(r7501("state=blocked:kind=auth")))
    assert decode_one(data) == StatusReport(
        2, id=None, state="blocked", kind="auth", fields={"state": "blocked", "kind": "auth"}
    )


def test_F_2_tmux_passthrough_nesting_bounded():
    data = r7501("state=idle")
    for _ in range(6):
        data = passthrough(data)
    events = decode(data + r7501("state=done"))
    assert events[-1].state == "done"
    assert any(isinstance(e, Rejected) and "nested more than" in e.reason for e in events)
    assert [e.type for e in decode(data, rejections=False)] == []


def test_F_2_tmux_passthrough_probe_keeps_terminator():
    assert decode_one(passthrough(r7501("?", ST))) == Probe(0, terminator="st")


def test_F_2_other_dcs_starting_with_t_skipped():
    assert decode(b"\x1bPtmuxx;]7501;state=idle\x07\x1b\\") == []
    assert decode(b"\x1bPtm\x1b\\") == []


def test_F_2_passthrough_with_undoubled_esc_is_cut():
    data = b"\x1bPtmux;\x1b]7501;state=working\x07\x1b\\"
    events = decode(data)
    # The undoubled ESC cuts the envelope; the bytes after it are read as they are.
    assert events[0].proto == "framing" and "undoubled ESC" in events[0].reason
    assert events[1].state == "working" and events[1].offset == 7


def test_F_3_passthrough_bounded():
    big = passthrough(osc("2;" + "x" * (MAX_PASSTHROUGH + 10)))
    events = decode(big + r7501("state=idle"))
    assert events[0].proto == "framing" and "longer than" in events[0].reason
    assert events[1].state == "idle"


# -- F-3: bounded buffers ----------------------------------------------------------------


def test_F_3_oversized_osc_discarded_and_scan_recovers():
    data = b"\x1b]7501;state=working:msg=" + b"QUFB" * 3000 + b"\x07" + r7501("state=done")
    events = decode(data)
    assert [e.type for e in events] == ["rejected", "status"]
    assert "longer than 4096 bytes" in events[0].reason


def test_F_3_oversized_unknown_osc_is_silent():
    assert decode(osc("52;c;" + "Q" * 10000), rejections=True) == []


def test_F_3_memory_flat_on_10mb_unterminated_osc():
    d = Decoder(rejections=True)
    chunk = b"A" * 65536
    tracemalloc.start()
    try:
        d.feed(b"\x1b]7501;state=working:msg=")
        for _ in range(160):  # 10 MiB
            d.feed(chunk)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1_000_000, peak
    assert d.feed(b"\x07" + r7501("state=idle"))[-1].state == "idle"


def test_F_3_memory_flat_on_10mb_single_chunk():
    data = b"\x1b]2;" + b"B" * (10 << 20)
    d = Decoder(rejections=True)
    tracemalloc.start()
    try:
        d.feed(data)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1_000_000, peak


def test_F_3_memory_flat_on_10mb_unterminated_passthrough():
    d = Decoder()
    tracemalloc.start()
    try:
        d.feed(b"\x1bPtmux;")
        for _ in range(160):
            d.feed(b"\x1b\x1b]2;" + b"C" * 65530)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1_000_000, peak


def test_F_3_unterminated_at_end_reported_by_close():
    d = Decoder(rejections=True)
    assert d.feed(b"\x1b]7501;state=working") == []
    (ev,) = d.close()
    assert isinstance(ev, Rejected) and "unterminated at end of input" in ev.reason


# -- F-4: chunking ------------------------------------------------------------------------


SAMPLE = (
    b"\x1b[?1049h\x1b[H\x1b[2J\x1b[38;5;208mHello\x1b[0m\r\n"
    + r7501("?", ST)
    + b"\x1b[>0q\x1b[?u\x1b[c"
    + SPEC_EXAMPLE
    + agent_var("v1;agent=a;state=working;ts=1")
    + osc("9;4;1;30", ST)
    + osc("2;\u2801 work")
    + b"\x1b(B\x1b)0\x1b\r]133;D;1\x07"
    + passthrough(r7501("state=done:msg=" + b64("ok")))
    + b"\x1bPq#1;2;3\x1b\\"
    + r7501("state=paused")
    + b"\x1bc"
    + b"\x1b]7501;state=working\x1b]0;x\x07"
    + osc("7501;state=idle:msg=" + "QUFB" * 1100)
)


@pytest.mark.parametrize("size", [1, 2, 3, 5, 7, 64, 4096])
def test_F_4_every_chunk_size_gives_same_events(size):
    whole = decode(SAMPLE)
    assert len(whole) >= 12
    assert decode_chunked(SAMPLE, [size]) == whole


def test_F_4_every_single_split_point():
    whole = decode(SAMPLE)
    for cut in range(len(SAMPLE)):
        d = Decoder(rejections=True)
        assert d.feed(SAMPLE[:cut]) + d.feed(SAMPLE[cut:]) + d.close() == whole, cut


def test_F_4_offsets_absolute_across_feeds():
    d = Decoder()
    assert d.feed(b"x" * 1000) == []
    (ev,) = d.feed(b"yy" + r7501("state=idle"))
    assert ev.offset == 1002 and d.offset == 1002 + len(r7501("state=idle"))


def test_F_4_reset_offset_across_feeds():
    d = Decoder()
    assert d.feed(b"abc\x1b") == []
    assert d.feed(b"c") == [Reset(3)]


def test_F_4_feed_accepts_bytearray_and_memoryview():
    d = Decoder()
    data = r7501("state=idle")
    assert d.feed(bytearray(data))[0].state == "idle"
    assert d.feed(memoryview(data))[0].offset == len(data)


# -- F-5 is in test_decoder_osc7501 / test_decoder_thinkterm; here the helper itself ----------


@pytest.mark.parametrize(
    ("text", "ok"),
    [
        pytest.param(b"", b"", id="F-5 empty"),
        pytest.param(b"YQ", b"a", id="F-5 unpadded"),
        pytest.param(b"YQ==", b"a", id="F-5 padded"),
        pytest.param(b"YR==", None, id="F-5 non-canonical 2"),
        pytest.param(b"YWJ=", None, id="F-5 non-canonical 3"),
        pytest.param(b"YWI=", b"ab", id="F-5 canonical 3"),
        pytest.param(b"Y!Q==", None, id="F-5 junk"),
        pytest.param(b"YQ===", None, id="F-5 too much padding"),
        pytest.param(b"=", None, id="F-5 only padding"),
        pytest.param(b"YQ==YQ==", None, id="F-5 padding in the middle"),
        pytest.param(b"Y Q==", None, id="F-5 space"),
        pytest.param(b"YQ\n", None, id="F-5 newline not stripped"),
    ],
)
def test_F_5_strict_b64(text, ok):
    from paneboard_protocol.b64 import Base64Error, strict_b64decode

    if ok is None:
        with pytest.raises(Base64Error):
            strict_b64decode(text)
    else:
        assert strict_b64decode(text) == ok


def test_F_2_passthrough_with_undoubled_inner_st_explains_itself():
    # A common emitter bug: the inner ST's ESC is not doubled, so it ends the envelope.
    data = b"\x1bPtmux;\x1b\x1b]7501;state=done\x1b\\\x1b\\"
    (ev,) = decode(data)
    assert isinstance(ev, Rejected) and ev.proto == "osc7501" and ev.offset == 0
    assert "unterminated at the end of its tmux passthrough envelope" in ev.reason


def test_F_4_close_starts_a_new_stream():
    d = Decoder()
    d.feed(b"xxxx\x1b]7501;state=work")
    d.close()
    assert d.feed(r7501("state=idle"))[0].offset == 0
