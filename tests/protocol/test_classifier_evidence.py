"""The evidence contract: the server re-derives the same classification as its clock moves."""

from __future__ import annotations

import copy
import json
import math

from classifier_steps import RULES, T0, agent, apply, rep, title
from hypothesis import given, settings
from hypothesis import strategies as st
from paneboard_protocol.classifier import (
    PaneClassifier,
    classify_evidence,
    evidence_deadline,
    evidence_mark_seen,
)
from paneboard_protocol.contract import MAX_AGE, MAX_AHEAD

TS = int(T0)


def test_TA_12_server_rerun_expires_state_at_the_staleness_instant():
    c = PaneClassifier(RULES)
    c.set_process(T0, "mytool", 1)
    c.feed(T0, [agent("my-agent", "blocked", ts=TS)])
    ev = json.loads(json.dumps(c.evidence()))  # what travels to the server
    fresh = classify_evidence(ev, T0 + MAX_AGE)
    assert (fresh.agent, fresh.state, fresh.since) == ("my-agent", "blocked", T0)
    deadline = evidence_deadline(ev, T0)
    assert deadline == math.nextafter(T0 + MAX_AGE, math.inf)
    stale = classify_evidence(ev, deadline)
    assert (stale.agent, stale.state, stale.source) == ("my-agent", "idle", None)
    assert stale.since == deadline
    assert evidence_deadline(ev, deadline) is None


def test_TA_13_server_expires_identity_of_unobservable_pane():
    c = PaneClassifier(RULES)
    c.set_process(T0, "ssh", 1, observable=False)
    c.feed(T0, [agent("my-agent", "working", ts=TS)])
    ev = c.evidence()
    assert classify_evidence(ev, T0 + 3600).agent == "my-agent"
    gone = classify_evidence(ev, T0 + MAX_AGE + 1)
    assert (gone.agent, gone.state, gone.observable) == (None, None, False)


def test_TA_12_future_ts_becomes_fresh_when_within_five_minutes():
    c = PaneClassifier(RULES)
    c.set_process(T0, "ssh", 1, observable=False)
    c.feed(T0, [agent("my-agent", "working", ts=TS + 1000)])
    assert c.classification(T0).agent is None  # RI-1: a stale contract establishes nothing
    ev = c.evidence()
    assert evidence_deadline(ev, T0) == TS + 1000 - MAX_AHEAD


def test_TA_14_idle_contract_has_no_deadline():
    c = PaneClassifier(RULES)
    c.feed(T0, [agent("my-agent", "idle", ts=TS)])
    assert c.next_deadline(T0) is None
    assert evidence_deadline(c.evidence(), T0) is None


def test_classifier_next_deadline_includes_staleness():
    c = PaneClassifier(RULES)
    c.set_process(T0, "mytool", 1)
    c.feed(T0, [agent("my-agent", "working", ts=TS - 100)])
    d = c.next_deadline(T0)
    assert d == math.nextafter(TS - 100 + MAX_AGE, math.inf)
    got = c.classification(d)
    assert got.state == "idle" and got.since == d


def test_evidence_is_plain_json():
    c = PaneClassifier(RULES)
    c.set_process(1, "claude", 1)
    c.feed(2, [rep("working", app="claude-code", progress=3, title="t"), title("⠂ x")])
    c.set_screen(3, "Do you want to proceed?")
    ev = c.evidence()
    assert json.loads(json.dumps(ev)) == ev
    assert classify_evidence(json.loads(json.dumps(ev)), 3) == c.classification(3)


SCREENS = [
    "Do you want to proceed?",
    "❯ ",
    "✻ Thinking (esc to interrupt)",
    "text",
    "showing detailed transcript",
]
EVENTS = [
    rep("working", app="claude-code"),
    rep("blocked", id="a", kind="question"),
    rep("done", id="b", app="x"),
    rep("error", id="a/c"),
    rep("idle"),
    agent("claude", "blocked", ts=TS),
    agent("tool", "working", ts=TS - 30000),
    agent("tool", "idle", ended=True),
    title("⠋ spin"),
    title("✳ static"),
]
step = st.one_of(
    st.tuples(
        st.just("proc"),
        st.sampled_from([None, "claude", "codex", "ssh", "vim"]),
        st.integers(1, 3),
        st.booleans(),
    ),
    st.tuples(st.just("ev"), st.lists(st.sampled_from(EVENTS), max_size=4)),
    st.tuples(st.just("screen"), st.sampled_from(SCREENS)),
    st.tuples(st.just("seen")),
    st.tuples(st.just("at")),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 2), step), max_size=25))
def test_classification_equals_classify_evidence(steps):
    """The invariant the server relies on, after any sequence of inputs and at later times."""
    c = PaneClassifier(RULES)
    t = T0
    for dt, s in steps:
        t += dt
        apply(c, (s[0], t, *s[1:]))
        got = c.classification(t)
        assert got == classify_evidence(c.evidence(), t)
        later = t + 7 * 3600
        if c.next_deadline(t) == evidence_deadline(c.evidence(), t):  # no debounce pending
            server = classify_evidence(c.evidence(), later)
            assert server == copy.deepcopy(c).classification(later)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(EVENTS), max_size=12), st.data())
def test_same_events_in_any_batching_classify_the_same(events, data):
    """Feeding one instant's events in one call or many gives the same classification."""
    whole = PaneClassifier(RULES)
    whole.set_process(T0, "claude", 1)
    whole.feed(T0 + 1, events)
    split = PaneClassifier(RULES)
    split.set_process(T0, "claude", 1)
    i = 0
    while i < len(events):
        n = data.draw(st.integers(1, len(events) - i))
        split.feed(T0 + 1, events[i : i + n])
        i += n
    split.feed(T0 + 1, [])
    assert whole.classification(T0 + 2) == split.classification(T0 + 2)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 2), step), max_size=20), st.floats(0, 30000))
def test_server_side_mark_seen_equals_the_classifiers(steps, later):
    """P7501-8 / RI-5 on the server: evidence_mark_seen gives what PaneClassifier.mark_seen gives."""
    c = PaneClassifier(RULES)
    t = T0
    for dt, s in steps:
        t += dt
        apply(c, (s[0], t, *s[1:]))
    if c.next_deadline(t) != evidence_deadline(c.evidence(), t):
        return  # a debounce is pending: collector-side state the server never has
    seen_at = t + later
    server = evidence_mark_seen(json.loads(json.dumps(c.evidence())), seen_at)
    c.mark_seen(seen_at)
    assert classify_evidence(server, seen_at) == c.classification(seen_at)
    assert server["records"] == c.evidence()["records"]


def test_mark_seen_on_the_server_turns_done_idle_now():
    c = PaneClassifier(RULES)
    c.set_process(1, "claude", 3)
    c.feed(2, [rep("done", app="claude-code")])
    ev = evidence_mark_seen(c.evidence(), 50)
    got = classify_evidence(ev, 50)
    assert (got.state, got.since) == ("idle", 50)
