"""The quick acceptance of well-formed records never accepts what the full check rejects.

`check_evidence` waves a record through `_record_ok` before building a path string per
field (256 records per pane); with the quick test switched off it must give exactly
the same outcome — same pass, or the same one-line EvidenceError — for any record.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from paneboard_protocol import evidence as evidence_mod
from paneboard_protocol.arbitration import empty_evidence
from paneboard_protocol.evidence import EvidenceError, check_evidence

GOOD = {
    "id": "a/b",
    "state": "blocked",
    "kind": "auth",
    "app": "claude-code",
    "msg": "m",
    "title": None,
    "progress": 5,
    "updated": 2.5,
    "seq": 3,
    "gen": 1,
    "agent": "claude",
}


class Text(str):
    """A str subclass: the full check accepts it, the quick one must defer."""


BOUNDARY = [
    None,
    True,
    -1,
    0,
    100,
    101,
    2**60,
    10**400,
    1.5,
    float("nan"),
    float("inf"),
    "",
    "x" * 128,
    "x" * 129,
    "x" * 256,
    "x" * 257,
    "x" * 4096,
    "x" * 4097,
    "working",
    "blocked",
    "done",
    "auth",
    "question",
    Text("idle"),
    Text("a"),
    [],
    {},
]
odd = st.one_of(st.sampled_from(BOUNDARY), st.integers(-3, 300), st.text(max_size=3))


def outcome(ev):
    try:
        check_evidence(ev)
    except EvidenceError as exc:
        return str(exc)
    except Exception as exc:  # the full check's own behaviour, whatever it is
        return type(exc).__name__
    return "ok"


@settings(max_examples=400, deadline=None)
@given(
    st.dictionaries(st.sampled_from([*GOOD, "extra"]), odd, max_size=4),
    st.sets(st.sampled_from(list(GOOD)), max_size=2),
)
def test_quick_record_check_agrees_with_the_full_one(changes, missing):
    record = {k: v for k, v in {**GOOD, **changes}.items() if k not in missing}
    ev = empty_evidence()
    ev["records"] = [dict(GOOD), record]
    quick = outcome(ev)
    saved = evidence_mod._record_ok
    evidence_mod._record_ok = lambda r: False
    try:
        full = outcome(ev)
    finally:
        evidence_mod._record_ok = saved
    assert quick == full


def test_every_field_at_every_boundary_value():
    """Each field alone set to each boundary value, or missing: same outcome both ways."""
    for key in [*GOOD, "extra"]:
        for record in [
            *({**GOOD, key: value} for value in BOUNDARY),
            {k: v for k, v in GOOD.items() if k != key},
        ]:
            test_quick_record_check_agrees_with_the_full_one.hypothesis.inner_test(
                {k: record[k] for k in record if record[k] is not GOOD.get(k, object())},
                set(GOOD) - set(record),
            )
