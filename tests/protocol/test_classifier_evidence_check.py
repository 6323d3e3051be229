"""The server's side: evidence from the wire is checked, bad evidence is one clear error."""

from __future__ import annotations

import copy
import json

import pytest
from classifier_steps import RULES, agent, rep, title
from hypothesis import given, settings
from hypothesis import strategies as st
from paneboard_protocol.arbitration import empty_evidence
from paneboard_protocol.classifier import EvidenceError, PaneClassifier, classify_evidence, evidence_deadline


def real_evidence() -> dict:
    c = PaneClassifier(RULES)
    c.set_process(1, "claude", 7)
    c.feed(
        2,
        [
            rep("working", app="claude-code", progress=5, title="t"),
            rep("blocked", id="a/b", kind="auth"),
            agent("claude", "blocked", ts=2),
            title("⠂ x"),
        ],
    )
    c.set_screen(3, "Do you want to proceed?\n❯ 1. Yes")
    return json.loads(json.dumps(c.evidence()))


def test_real_and_empty_evidence_pass():
    assert classify_evidence(real_evidence(), 4).state == "blocked"
    assert classify_evidence(empty_evidence(), 4).agent is None
    assert evidence_deadline(empty_evidence(), 4) is None


def _set(ev: dict, path: str, value) -> dict:
    ev = copy.deepcopy(ev)
    *parents, last = path.split(".")
    node = ev
    for key in parents:
        node = node[int(key)] if isinstance(node, list) else node[key]
    if isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value
    return ev


@pytest.mark.parametrize(
    ("path", "value", "needle"),
    [
        ("v", 4, "evidence v: unsupported version 4"),
        ("process", None, "evidence process: must be an object"),
        ("process.gen", "1", "evidence process.gen: must be an integer"),
        ("observable", "yes", "evidence observable: must be true or false"),
        ("contract.state", "thinking", "evidence contract.state: must be one of"),
        ("contract.received", float("nan"), "evidence contract.received: must be a finite number"),
        ("records.0.state", "clear", "evidence records[0].state: must be one of"),
        ("records.0.progress", 101, "evidence records[0].progress: must be an integer in 0..100"),
        ("records.1.msg", "x" * 5000, "evidence records[1].msg: must be a string of at most 4096"),
        ("records", [{}] * 300, "evidence records: must be a list of at most 256"),
        ("screen.result.state", "unknown", "evidence screen.result.state"),
        ("native.progress", {"state": 9, "percent": None}, "evidence native.progress.state"),
        ("aliases", [], "evidence aliases: must be an object"),
        ("basis", ["claude"], "evidence basis: must be [agent, state]"),
        ("since", True, "evidence since: must be a finite number"),
        ("extra", 1, "unknown key 'extra'"),
    ],
)
def test_bad_evidence_is_one_clear_error(path, value, needle):
    bad = _set(real_evidence(), path, value)
    with pytest.raises(EvidenceError) as exc:
        classify_evidence(bad, 5)
    assert needle in str(exc.value)
    with pytest.raises(EvidenceError):
        evidence_deadline(bad, 5)


def test_not_a_dict():
    with pytest.raises(EvidenceError, match="must be an object"):
        classify_evidence([], 1)  # type: ignore[arg-type]


json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-3, 300), st.floats(allow_nan=True), st.text(max_size=5)),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)


def _paths(node, prefix=()):
    yield prefix
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _paths(v, (*prefix, i))


@settings(max_examples=200, deadline=None)
@given(st.data(), json_values)
def test_any_corruption_is_classified_or_one_evidence_error(data, value):
    ev = real_evidence()
    path = data.draw(st.sampled_from(list(_paths(ev))))
    if not path:
        ev = value
    else:
        node = ev
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value
    try:
        got = classify_evidence(ev, 10)
    except EvidenceError as exc:
        assert str(exc).startswith("evidence ")
    else:
        assert got.state in (None, "working", "blocked", "idle", "done", "error")
        evidence_deadline(ev, 10)
