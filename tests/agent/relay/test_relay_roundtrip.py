"""Whatever the encoder accepts, the real decoder reads back as exactly the same fields."""

from __future__ import annotations

import string

from hypothesis import given, settings
from hypothesis import strategies as st
from paneboard_protocol import AgentReport, ClearReport, Decoder, Probe, StatusReport
from paneboard_protocol.encode import (
    encode_agent,
    encode_probe,
    encode_report,
    probe_reply,
    tmux_passthrough,
)

ID_CHARS = string.ascii_letters + string.digits + "_.+-"
# Mostly valid values (so most examples reach the decoder), some just over a limit.
good_segment = st.text(alphabet=ID_CHARS, min_size=1, max_size=32)
short_segment = st.text(alphabet=ID_CHARS, min_size=1, max_size=15)  # 8 of them fit in 128 bytes
bad_segment = st.text(alphabet=ID_CHARS + ":; ", min_size=0, max_size=34)
ids = (
    st.none()
    | st.lists(good_segment, min_size=1, max_size=8).map("/".join)
    | st.lists(good_segment | bad_segment, min_size=1, max_size=9).map("/".join)
)
apps = st.none() | st.text(alphabet=ID_CHARS, min_size=1, max_size=32) | st.text(min_size=0, max_size=34)
texts = st.none() | st.text(max_size=80) | st.text(min_size=180, max_size=200) | st.just("x" * 2049)
states = st.sampled_from(["idle", "working", "done", "blocked", "error", "clear", "IDLE", "paused"])
kinds = st.none() | st.none() | st.sampled_from(["permission", "question", "auth", "other"])
progresses = st.none() | st.none() | st.integers(min_value=-2, max_value=102)


clean_chars = st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp"))
clean_text = st.text(alphabet=clean_chars, max_size=120)  # at most 480 bytes: within msg's 2048
clean_title = st.text(alphabet=clean_chars, max_size=48)  # at most 192 bytes: title's limit


@st.composite
def sensible_reports(draw: st.DrawFn) -> dict:
    """Arguments a careful caller would pass: nearly all accepted, so the decoder sees many."""
    state = draw(st.sampled_from(["idle", "working", "done", "blocked", "error", "clear"]))
    args: dict = {
        "state": state,
        "id": draw(st.none() | st.lists(short_segment, min_size=1, max_size=8).map("/".join)),
    }
    if state == "clear":
        return args
    if state == "blocked":
        args["kind"] = draw(st.none() | st.sampled_from(["permission", "question", "auth"]))
    if state in ("working", "blocked"):
        args["progress"] = draw(st.none() | st.integers(min_value=0, max_value=100))
    args["app"] = draw(st.none() | st.text(alphabet=ID_CHARS, min_size=1, max_size=32))
    args["msg"] = draw(st.none() | clean_text)
    args["title"] = draw(st.none() | clean_title)
    args["terminator"] = draw(st.sampled_from(["st", "bel"]))
    return args


def decode_all(data: bytes) -> list:
    return Decoder().feed(data)


def try_encode(**kwargs):
    try:
        return encode_report(**kwargs)
    except ValueError:
        return None


@settings(max_examples=400, deadline=None)
@given(
    state=states,
    kind=kinds,
    msg=texts,
    title=texts,
    id=ids,
    app=apps,
    progress=progresses,
    terminator=st.sampled_from(["st", "bel"]),
)
def test_accepted_reports_decode_to_the_same_fields(state, kind, msg, title, id, app, progress, terminator):
    seq = try_encode(
        state=state, kind=kind, msg=msg, title=title, id=id, app=app, progress=progress, terminator=terminator
    )
    if seq is not None:
        check_roundtrip(seq, state=state, kind=kind, msg=msg, title=title, id=id, app=app, progress=progress)


@settings(max_examples=300, deadline=None)
@given(sensible_reports())
def test_sensible_reports_are_accepted_and_decode_back(args: dict) -> None:
    seq = encode_report(**args)  # must not raise: these are all within the limits
    args.pop("terminator", None)
    check_roundtrip(
        seq, **{k: args.get(k) for k in ("state", "kind", "msg", "title", "id", "app", "progress")}
    )


def check_roundtrip(seq: bytes, *, state, kind, msg, title, id, app, progress) -> None:
    events = decode_all(seq)
    assert len(events) == 1, events
    [event] = events
    if state == "clear":
        assert isinstance(event, ClearReport)
        assert event.id == id
        return
    assert isinstance(event, StatusReport), event
    assert (event.state, event.kind, event.id, event.app, event.progress) == (state, kind, id, app, progress)
    assert event.msg == (msg or None)
    assert event.title == (title or None)
    # ... and the same inside a tmux passthrough envelope, which the decoder unwraps (F-2).
    assert decode_all(tmux_passthrough(seq))[0].to_json() | {"offset": 0} == event.to_json()


@settings(max_examples=200, deadline=None)
@given(
    agent=st.text(alphabet=ID_CHARS + "; =", min_size=0, max_size=66),
    state=st.sampled_from(["working", "idle", "blocked", "done"]),
    session=st.none() | st.text(alphabet=ID_CHARS + ":,/@; ", max_size=130),
    ts=st.none() | st.integers(min_value=-1, max_value=10**12),
    ended=st.booleans(),
)
def test_accepted_contracts_decode_to_the_same_fields(agent, state, session, ts, ended):
    try:
        seq = encode_agent(agent, state, session=session, ts=ts, ended=ended)
    except ValueError:
        return
    [event] = decode_all(seq)
    assert isinstance(event, AgentReport), event
    assert (event.agent, event.state, event.ts, event.ended) == (agent, state, ts, ended)
    assert event.session == (session or None)  # an empty session reads as absent (TA-11)


def test_probe_and_reply_decode_as_probes() -> None:
    for term in ("st", "bel"):
        [event] = decode_all(encode_probe(term))
        assert isinstance(event, Probe) and event.terminator == term
        assert probe_reply(term) == encode_probe(term)


def test_limits_at_the_edge_decode() -> None:
    seq = encode_report(
        "blocked",
        kind="auth",
        title="é" * 96,
        msg="✳" * 682 + "ab",
        id="/".join(["a" * 15] * 8),
        app="a" * 32,
        progress=100,
    )
    [event] = decode_all(seq)
    assert isinstance(event, StatusReport)
    assert event.title == "é" * 96 and event.msg == "✳" * 682 + "ab"
