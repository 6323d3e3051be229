"""The encoder: exact bytes for known inputs, and a clear refusal for every limit of section 1a."""

from __future__ import annotations

import base64

import pytest
from paneboard_protocol.encode import (
    agent_value,
    encode_agent,
    encode_clear,
    encode_probe,
    encode_report,
    probe_reply,
    tmux_passthrough,
)


def test_spec_example_bytes() -> None:
    # The spec's own example (docs/spec.md, OSC 7501 section), built from its decoded message.
    seq = encode_report(
        "blocked", kind="permission", app="terraform", msg="Apply 3 to add, 1 to change, 0 to destroy?"
    )
    assert seq == (
        b"\x1b]7501;state=blocked:kind=permission:app=terraform:"
        b"msg=QXBwbHkgMyB0byBhZGQsIDEgdG8gY2hhbmdlLCAwIHRvIGRlc3Ryb3k/\x1b\\"
    )


def test_claude_shape_and_bel() -> None:
    seq = encode_report("working", app="claude-code", progress=40, title="Fix it", terminator="bel")
    assert seq == b"\x1b]7501;state=working:app=claude-code:progress=40:title=Rml4IGl0\x07"
    child = encode_report("blocked", app="claude-code", id="task_1.a", kind="question", msg="Which?")
    assert child.startswith(b"\x1b]7501;state=blocked:id=task_1.a:kind=question:app=claude-code:msg=")


def test_padding_is_kept() -> None:
    seq = encode_report("done", msg="a")
    assert seq == b"\x1b]7501;state=done:msg=YQ==\x1b\\"


def test_clear_probe_reply() -> None:
    assert encode_clear() == b"\x1b]7501;state=clear\x1b\\"
    assert encode_clear("a/b") == b"\x1b]7501;state=clear:id=a/b\x1b\\"
    assert encode_probe() == b"\x1b]7501;?\x1b\\"
    assert probe_reply("bel") == b"\x1b]7501;?\x07"


def test_empty_text_is_absent() -> None:
    assert encode_report("idle", msg="", title="") == b"\x1b]7501;state=idle\x1b\\"


def test_limits_at_the_edge_are_accepted() -> None:
    encode_report("done", title="x" * 192, msg="é" * 1024, id="/".join(["a" * 15] * 8), app="a" * 32)
    encode_report("working", progress=0)
    encode_report("blocked", progress=100)


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"state": "IDLE"}, "unknown state"),
        ({"state": "unknown"}, "unknown state"),
        ({"state": "working", "kind": "permission"}, "only with state 'blocked'"),
        ({"state": "blocked", "kind": "other"}, "unknown kind"),
        ({"state": "idle", "progress": 5}, "progress counts only"),
        ({"state": "working", "progress": 101}, "0-100"),
        ({"state": "working", "progress": -1}, "0-100"),
        ({"state": "working", "progress": True}, "whole number"),
        ({"state": "idle", "title": "x" * 193}, "title is 193 bytes"),
        ({"state": "idle", "title": "é" * 97}, "title is 194 bytes"),
        ({"state": "idle", "msg": "x" * 2049}, "msg is 2049 bytes"),
        ({"state": "idle", "msg": "two\nlines"}, "one line"),
        ({"state": "idle", "msg": "a\u2028b"}, "one line"),
        ({"state": "idle", "title": "bell\x07"}, "control character U+0007"),
        ({"state": "idle", "title": "c1\x9b"}, "control character U+009B"),
        ({"state": "idle", "msg": "\ud800"}, "surrogate"),
        ({"state": "idle", "id": ""}, "id must not be empty"),
        ({"state": "idle", "id": "a//b"}, "id segment ''"),
        ({"state": "idle", "id": "a:b"}, "id segment 'a:b'"),
        ({"state": "idle", "id": "x" * 33}, "id segment"),
        ({"state": "idle", "id": "/".join("a" * 9)}, "9 levels"),
        ({"state": "idle", "id": "/".join(["a" * 20] * 7)}, "146 bytes"),
        ({"state": "idle", "app": "a b"}, "app 'a b' is invalid"),
        ({"state": "idle", "app": "a" * 33}, "app is 33 bytes"),
        ({"state": "clear", "msg": "x"}, "takes only an id"),
        ({"state": "idle", "extra": {"Key": "v"}}, "lowercase"),
        ({"state": "idle", "extra": {"k" * 17: "v"}}, "limit is 16"),
        ({"state": "idle", "extra": {"k": "a;b"}}, "values use only"),
        ({"state": "idle", "extra": {"msg": "eA=="}}, "known key"),
    ],
)
def test_refusals(kwargs: dict, needle: str) -> None:
    with pytest.raises(ValueError) as info:
        encode_report(**kwargs)
    assert needle in str(info.value)


def test_whole_sequence_limit() -> None:
    # Every field at its own limit still fits; extra pairs can push past 4096 bytes.
    extra = {f"x{chr(97 + i // 26)}{chr(97 + i % 26)}": "v" * 200 for i in range(8)}
    with pytest.raises(ValueError, match="limit is 4096"):
        encode_report("done", title="t" * 192, msg="m" * 2048, extra=extra)


def test_agent_contract() -> None:
    value = agent_value("claude", "working", session="abc-1", ts=1700000000)
    assert value == "v1;agent=claude;state=working;session=abc-1;ts=1700000000"
    seq = encode_agent("claude", "blocked", ts=5, ended=True)
    assert seq.startswith(b"\x1b]1337;SetUserVar=THINKTERM_AGENT=") and seq.endswith(b"\x07")
    inner = seq[len(b"\x1b]1337;SetUserVar=THINKTERM_AGENT=") : -1]
    assert base64.b64decode(inner, validate=True) == b"v1;agent=claude;state=blocked;ts=5;ended=1"


@pytest.mark.parametrize(
    ("args", "kwargs", "needle"),
    [
        (("", "idle"), {}, "agent ''"),
        (("a;b", "idle"), {}, "agent 'a;b'"),
        (("a", "done"), {}, "no THINKTERM_AGENT form"),
        (("a", "error"), {}, "no THINKTERM_AGENT form"),
        (("a", "idle"), {"session": "x;y"}, "session"),
        (("a", "idle"), {"ts": -1}, "ts must be"),
    ],
)
def test_agent_refusals(args: tuple, kwargs: dict, needle: str) -> None:
    with pytest.raises(ValueError) as info:
        agent_value(*args, **kwargs)
    assert needle in str(info.value)


def test_passthrough_doubles_every_escape() -> None:
    inner = encode_report("idle")
    wrapped = tmux_passthrough(inner)
    assert wrapped == b"\x1bPtmux;\x1b\x1b]7501;state=idle\x1b\x1b\\\x1b\\"
