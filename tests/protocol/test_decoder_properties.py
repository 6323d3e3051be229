"""Property tests: chunking never matters (F-4), nothing raises, rejections only add.

Inputs are built from escape-sequence fragments as well as whole reports and random
bytes, so splits land inside introducers, terminators, doubled passthrough ESCs and
base64 text — where an incremental scanner goes wrong — not just in plain text.
"""

from __future__ import annotations

import base64

from decoder_helpers import agent_var, b64, decode, osc, r7501
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from paneboard_protocol import Decoder
from paneboard_protocol.events import Rejected, StatusReport

FRAGMENTS = [
    b"\x1b",
    b"\x1b]",
    b"\x1b\\",
    b"\x07",
    b"\x18",
    b"\x1a",
    b"\r\n",
    b"\x1bP",
    b"\x1bPtmux;",
    b"tmux;",
    b"\x1b\x1b",
    b"\x1b_",
    b"\x1b^",
    b"\x1bX",
    b"\x1bc",
    b"\x1b(",
    b"\x1b[31m",
    b"\x1b[?1049h",
    b"\x9d",
    b"\x9c",
    b"7501;",
    b"7501;?",
    b"state=",
    b"working",
    b"done",
    b":",
    b"=",
    b";",
    b"1337;SetUserVar=THINKTERM_AGENT=",
    b"9;4;1;50",
    b"133;D;0",
    b"2;title",
    b"msg=YQ==",
    b"QUFB" * 300,
    r7501("state=working:app=x:msg=" + b64("hi")),
    r7501("?", b"\x1b\\"),
    agent_var("v1;agent=a;state=idle;ts=3"),
    osc("9;4;3"),
    b"\x1bPtmux;\x1b\x1b]7501;state=done\x1b\x1b\\\x1b\\",
]

fragment = st.one_of(
    st.sampled_from(FRAGMENTS),
    st.binary(max_size=8),
    st.text(alphabet="abcXYZ 019=:;?/+", max_size=10).map(str.encode),
)
stream = st.lists(fragment, max_size=60).map(b"".join)


def feed_split(data: bytes, cuts: list[int], rejections: bool = True):
    d = Decoder(rejections=rejections)
    out = []
    prev = 0
    for cut in sorted(c % (len(data) + 1) for c in cuts):
        out += d.feed(data[prev:cut])
        prev = cut
    out += d.feed(data[prev:])
    return out + d.close()


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(stream, st.lists(st.integers(min_value=0, max_value=1 << 20), max_size=12))
def test_F_4_any_chunking_gives_identical_events(data, cuts):
    assert feed_split(data, cuts) == decode(data)


@settings(max_examples=150, deadline=None)
@given(stream)
def test_F_4_byte_at_a_time_gives_identical_events(data):
    d = Decoder(rejections=True)
    out = []
    for i in range(len(data)):
        out += d.feed(data[i : i + 1])
    assert out + d.close() == decode(data)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=2000), st.lists(st.integers(min_value=0, max_value=4000), max_size=5))
def test_arbitrary_bytes_never_raise(data, cuts):
    events = feed_split(data, cuts)
    assert all(e.offset <= len(data) for e in events)


@settings(max_examples=300, deadline=None)
@given(stream)
def test_rejections_only_add_events(data):
    with_rejections = decode(data, rejections=True)
    assert [e for e in with_rejections if not isinstance(e, Rejected)] == decode(data, rejections=False)


@settings(max_examples=300, deadline=None)
@given(stream)
def test_offsets_point_at_an_escape_in_stream_order(data):
    events = decode(data)
    offsets = [e.offset for e in events]
    assert offsets == sorted(offsets)
    for e in events:
        if not (isinstance(e, Rejected) and "end of input" in e.reason):
            assert data[e.offset] == 0x1B, e


ident = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABC0123456789_.+-", min_size=1, max_size=32)
states = st.sampled_from(["idle", "working", "done", "blocked", "error"])
texts = st.text(
    alphabet=st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="\x7f"),
    max_size=60,
)


@settings(max_examples=300, deadline=None)
@given(states, st.none() | st.lists(ident, min_size=1, max_size=8), st.none() | ident, texts, texts)
def test_P7501_2_encoded_report_reads_back(state, id_parts, app, msg, title):
    pairs = [f"state={state}"]
    rid = "/".join(id_parts) if id_parts else None
    if rid is not None and len(rid) > 128:
        rid = None
    if rid:
        pairs.append(f"id={rid}")
    if app:
        pairs.append(f"app={app}")
    if msg:
        pairs.append("msg=" + base64.b64encode(msg.encode()).decode().rstrip("="))
    if title and len(title.encode()) <= 192:
        pairs.append("title=" + b64(title))
    else:
        title = ""
    (ev,) = decode(r7501(":".join(pairs)))
    assert isinstance(ev, StatusReport)
    assert (ev.state, ev.id, ev.app, ev.msg, ev.title) == (state, rid, app, msg or None, title or None)


pair_text = st.one_of(
    st.sampled_from(["state=working", "state=idle", "id=a/b", "app=x", "msg=YQ", "title=", "kind=auth"]),
    st.builds(
        lambda k, v: f"{k}={v}",
        st.text(alphabet="abcdeKz ", min_size=0, max_size=18),
        st.text(alphabet="aZ09_.,+/=- :;", max_size=40),
    ),
    st.text(alphabet="a=: ", max_size=5),
)


@settings(max_examples=500, deadline=None)
@given(st.lists(pair_text, max_size=8).map(":".join))
def test_P7501_15_fast_pair_parser_equals_reference(body):
    from paneboard_protocol import osc7501

    def run(fn):
        try:
            return ("ok", fn(body))
        except osc7501._Reject as exc:
            return ("reject", str(exc))

    assert run(osc7501._parse_pairs) == run(osc7501._parse_pairs_slow)


@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=64), st.booleans())
def test_F_5_strict_b64_round_trips_canonical_text(raw, keep_padding):
    from paneboard_protocol.b64 import strict_b64decode

    text = base64.b64encode(raw)
    assert strict_b64decode(text if keep_padding else text.rstrip(b"=")) == raw


@settings(max_examples=1000, deadline=None)
@given(st.text(alphabet="ABYQRZaz09+/=-_.,!\n ", max_size=12).map(str.encode))
def test_F_5_strict_b64_accepts_exactly_the_canonical_encodings(text):
    from paneboard_protocol.b64 import Base64Error, strict_b64decode

    try:
        decoded = strict_b64decode(text)
    except Base64Error:
        decoded = None
    core = text.rstrip(b"=")
    # Reference: the text is accepted iff it is a canonical encoding, padded or not.
    try:
        candidate = base64.b64decode(core + b"=" * (-len(core) % 4), validate=True)
    except ValueError:
        candidate = None
    canonical = candidate is not None and text in (
        base64.b64encode(candidate),
        base64.b64encode(candidate).rstrip(b"="),
    )
    assert decoded == (candidate if canonical else None)
