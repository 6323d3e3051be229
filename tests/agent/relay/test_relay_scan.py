"""The relay's output scanner: finds exactly the probes, however the stream is split."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from paneboard_agent.tools.relay_scan import OutputScanner
from paneboard_protocol.encode import encode_agent, encode_probe, encode_report, tmux_passthrough

PROBE_ST = encode_probe("st")
PROBE_BEL = encode_probe("bel")


def scan(
    data: bytes, cuts: list[int] | None = None, reports: bool = False
) -> list[tuple[str, int, str, bytes]]:
    """Feed `data` cut at `cuts`, returning (kind, absolute end, terminator, seq)."""
    s = OutputScanner(reports=reports)
    out = []
    pos = 0
    bounds = [*sorted({c for c in cuts or [] if 0 < c < len(data)}), len(data)]
    for b in bounds:
        for f in s.feed(data[pos:b]):
            out.append((f.kind, pos + f.end, f.terminator, f.seq))
        pos = b
    return out


def test_probe_both_terminators() -> None:
    data = b"hello" + PROBE_ST + b"\x1b[c" + PROBE_BEL
    assert scan(data) == [
        ("probe", 5 + len(PROBE_ST), "st", PROBE_ST),
        ("probe", len(data), "bel", PROBE_BEL),
    ]


def test_claude_startup_sequence() -> None:
    data = b"\x1b[>0q\x1b[?u" + PROBE_ST + b"\x1b[c"
    [(kind, end, term, _)] = scan(data)
    assert (kind, term) == ("probe", "st")
    assert data[end:] == b"\x1b[c"


def test_not_probes() -> None:
    for data in [
        b"\x1b]7501;?:future=1\x1b\\",  # only the exact body is a query (P7501-10)
        b"\x1b]7501;??\x07",
        b"\x1b]7501;\x1b\\",
        b"\x1b]7501;?\x18\x07",  # CAN aborts
        b"\x1b]7501;?\x1bX\x07",  # ESC + other ends it unsent
        b"\x1b_]7501;?\x07\x1b\\",  # inside an APC string
        tmux_passthrough(PROBE_BEL),  # meant for the outer terminal
        tmux_passthrough(PROBE_ST),
        b"\x1b]0;7501;?\x07",
        b"\x1b]17501;?\x07",
    ]:
        assert scan(data) == [], data


def test_c0_inside_payload_is_dropped() -> None:
    assert [f[0] for f in scan(b"\x1b]7501;\r?\x07")] == ["probe"]


def test_recovers_after_string_and_overflow() -> None:
    data = b"\x1b]0;" + b"x" * 10000 + b"\x07" + tmux_passthrough(b"\x1b]2;t\x07") + PROBE_ST
    assert [f[0] for f in scan(data)] == ["probe"]
    s = OutputScanner()
    s.feed(b"\x1b]" + b"7" * 100000)
    assert len(s.payload) <= 16


def test_reports_found_only_when_asked() -> None:
    rep = encode_report("blocked", kind="permission", msg="ok?")
    agent = encode_agent("claude", "working", ts=1)
    data = rep + b"text" + agent + PROBE_BEL + b"\x1b]1337;SetUserVar=OTHER=eA==\x07"
    assert [f[0] for f in scan(data)] == ["probe"]
    found = scan(data, reports=True)
    assert [(f[0], f[3]) for f in found] == [("report", rep), ("report", agent), ("probe", PROBE_BEL)]
    too_long = b"\x1b]7501;state=idle:x=" + b"a" * 5000 + b"\x07"
    assert scan(too_long, reports=True) == []


chunks = st.lists(
    st.sampled_from(
        [
            PROBE_ST,
            PROBE_BEL,
            b"\x1b",
            b"\x1b\\",
            b"\x1b]",
            b"\x07",
            b"\x1bPtmux;",
            b"\x1b\x1b",
            b"7501;?",
            b"abc",
            b"\x1b[c",
            b"\x18",
            encode_report("working", title="t"),
        ]
    ),
    max_size=30,
)


@given(chunks, st.lists(st.integers(min_value=0, max_value=400), max_size=20))
def test_split_invariance(parts: list[bytes], cuts: list[int]) -> None:
    # F-4: the same bytes give the same findings however they are split.
    data = b"".join(parts)
    assert scan(data, cuts, reports=True) == scan(data, reports=True)
    every_byte = list(range(1, len(data)))
    assert scan(data, every_byte, reports=True) == scan(data, reports=True)


@given(st.lists(st.sampled_from([b"plain text ", b"\x1b[1m", b"\x1b]2;title\x07", b"\r\n"]), max_size=20))
def test_probe_found_after_any_clean_prefix(prefix: list[bytes]) -> None:
    data = b"".join(prefix) + PROBE_ST
    assert scan(data) == [("probe", len(data), "st", PROBE_ST)]
