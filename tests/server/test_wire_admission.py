"""The ingest's shortcut is sound: a frame taken as decoded (printable ASCII, no escape)
is taken exactly as the full admission would take it, and any frame, whatever its text,
is either admitted with its display text cleaned as the collector cleans it or refused
with a `WireError` naming a field — never another exception.

Hypothesis writes the frames: panes whose texts, names, records and evidence hold any
character (controls, DEL, NUL, bidi and format characters, non-ASCII), encoded as the
collector encodes them.
"""

from __future__ import annotations

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from paneboard_protocol import wire as w
from paneboard_protocol.pane import PaneUpdate
from paneboard_protocol.text import sanitize_text
from paneboard_server.ingest import wire as sw
from support.reports import pane_report

# Any character a frame can carry (lone surrogates cannot be encoded, so none).
TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=40)
NAME = st.one_of(st.text(st.characters(exclude_categories=("Cs",)), min_size=1, max_size=12), st.just("h"))
JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.floats(allow_nan=False) | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=12,
)


@st.composite
def updates(draw: st.DrawFn) -> PaneUpdate:
    return pane_report(
        "%" + str(draw(st.integers(0, 99))),
        draw(st.sampled_from([None, "working", "blocked", "idle", "done", "error"])),
        host=draw(NAME),
        session=draw(TEXT),
        window=draw(TEXT),
        agent=draw(st.none() | TEXT),
        kind=draw(st.none() | TEXT),
        msg=draw(st.none() | TEXT),
        source="protocol",
        title=draw(st.none() | TEXT),
        records=tuple(draw(st.lists(st.dictionaries(TEXT, JSON, max_size=3), max_size=2))),
        evidence=draw(st.dictionaries(TEXT, JSON, max_size=4)),
    )


def _admitted_in_full(frame: str) -> object:
    """What the full admission makes of `frame` (the shortcut switched off)."""
    plain = sw._plain
    sw._plain = lambda _text: False
    try:
        return sw.parse(frame, 1 << 22, 1000)
    finally:
        sw._plain = plain


@settings(max_examples=300, deadline=None)
@given(st.lists(updates(), min_size=1, max_size=3))
def test_any_frame_is_admitted_cleaned_or_refused_by_field(panes: list[PaneUpdate]) -> None:
    frame = w.encode(w.delta(1, [w.pane_op(u) for u in panes]))
    try:
        got = sw.parse(frame, 1 << 22, 1000)
    except sw.WireError as exc:
        assert exc.at and exc.at.startswith("ops."), exc  # the pane it was, and the field
        with pytest.raises(sw.WireError):
            _admitted_in_full(frame)
        return
    assert got == _admitted_in_full(frame)  # the shortcut, when taken, changes nothing
    assert isinstance(got, w.Delta)
    for sent, op in zip(panes, got.ops, strict=True):
        assert isinstance(op, w.PaneOp)
        u = op.update
        assert u.key == sent.key  # a name is taken as it is, or the frame is refused
        for name in ("session", "window", "agent", "kind", "msg", "title"):
            before, after = getattr(sent, name), getattr(u, name)
            assert after == (None if before is None else sanitize_text(before)), name
        assert "\\u0000" not in w.encode(u.evidence)  # NUL refused, never stored
        assert u.evidence == msgspec.json.decode(w.encode(sent.evidence))  # as sent (inf is null)


def test_a_plain_frame_skips_the_admission_and_one_escape_does_not() -> None:
    """The shortcut's test itself: ASCII with no backslash and no DEL, nothing else."""
    assert sw._plain('{"a":"b c"}') and sw._plain(b'{"a":"b c"}')
    for text in ('{"a":"\\u0000"}', '{"a":"\\n"}', '{"a":"\x7f"}', '{"a":"é"}', '{"a":"\\""}'):
        assert not sw._plain(text) and not sw._plain(text.encode())
    u = pane_report("%1", "idle", msg="ok\u202e?")
    got = sw.parse(w.encode(w.snapshot(1, 1.0, {}, [u])), 1 << 20, 10)
    assert isinstance(got, w.Snapshot) and got.panes[0].msg == "ok?"
    assert msgspec.json.decode(w.encode(u)) != msgspec.to_builtins(got.panes[0])  # it was cleaned
