"""Untrusted manifests: whatever a file holds, loading gives a Manifest or one ManifestError."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st
from paneboard_protocol.rules import Manifest, ManifestError, parse_manifest

KEYS = [
    "id",
    "agent",
    "process",
    "aliases",
    "rows",
    "state",
    "kind",
    "priority",
    "region",
    "regex",
    "contains",
    "line_regex",
    "screen",
    "title",
    "progress",
    "all",
    "any",
    "not",
    "bogus",
]
scalars = st.one_of(
    st.sampled_from(
        ["working", "blocked", "idle", "unknown", "permission", "title", "bottom_lines(2)", "(", "\\x{2733}"]
    ),
    st.text(max_size=8),
    st.integers(-5, 100),
    st.booleans(),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(KEYS), inner, max_size=3)
    ),
    max_leaves=12,
)


def toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str):
        return json.dumps(v)  # a JSON string is a valid TOML basic string
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    return "{ " + ", ".join(f"{k} = {toml_value(x)}" for k, x in v.items()) + " }"


@settings(max_examples=150, deadline=None)
@given(
    st.dictionaries(st.sampled_from(KEYS), values, max_size=5),
    st.lists(st.dictionaries(st.sampled_from(KEYS), values, max_size=6), max_size=3),
)
def test_structured_garbage_is_one_clear_error(top, rules):
    text = "".join(f"{k} = {toml_value(v)}\n" for k, v in top.items())
    for rule in rules:
        text += "[[rules]]\n" + "".join(f"{k} = {toml_value(v)}\n" for k, v in rule.items())
    try:
        m = parse_manifest(text, "fuzz.toml")
    except ManifestError as exc:
        assert exc.reason and (exc.line is None or 1 <= exc.line <= text.count("\n") + 1)
    else:
        assert isinstance(m, Manifest)
        m.match("some screen\nwith lines", "a title", "4;1;5")


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=200))
def test_text_garbage_is_one_clear_error(text):
    try:
        parse_manifest(text, "fuzz.toml")
    except ManifestError as exc:
        assert exc.reason
