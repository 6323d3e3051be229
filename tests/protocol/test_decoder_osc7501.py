"""OSC 7501 report grammar vectors (spec sections 1 and 1a), one rule ID per case."""

from __future__ import annotations

import pytest
from decoder_helpers import BEL, SPEC_EXAMPLE, SPEC_MSG_B64, ST, b64, decode, decode_one, r7501
from paneboard_protocol.events import ClearReport, Probe, Rejected, StatusReport


def test_P7501_2_spec_example_msg_decodes():
    ev = decode_one(SPEC_EXAMPLE)
    assert ev == StatusReport(
        0,
        id=None,
        state="blocked",
        kind="permission",
        app="terraform",
        msg="Apply 3 to add, 1 to change, 0 to destroy?",
        fields={"state": "blocked", "kind": "permission", "app": "terraform", "msg": SPEC_MSG_B64},
    )


def _status(body: str, **expect):
    ev = decode_one(r7501(body))
    assert isinstance(ev, StatusReport), ev
    for key, value in expect.items():
        assert getattr(ev, key) == value, (key, ev)
    return ev


ACCEPTED = [
    pytest.param("state=working", {"state": "working", "id": None}, id="P7501-3 working"),
    pytest.param("state=idle", {"state": "idle"}, id="P7501-3 idle"),
    pytest.param("state=done", {"state": "done"}, id="P7501-3 done"),
    pytest.param("state=error", {"state": "error"}, id="P7501-3 error"),
    pytest.param("state=blocked", {"state": "blocked", "kind": None}, id="P7501-3 blocked no kind"),
    pytest.param("state=blocked:kind=question", {"kind": "question"}, id="P7501-4 kind question"),
    pytest.param("state=blocked:kind=auth", {"kind": "auth"}, id="P7501-4 kind auth"),
    pytest.param("state=blocked:kind=permission", {"kind": "permission"}, id="P7501-4 kind permission"),
    pytest.param("state=blocked:kind=coffee", {"kind": None}, id="P7501-17 unknown kind reads absent"),
    pytest.param(
        "state=working:kind=permission",
        {"kind": None, "fields": {"state": "working", "kind": "permission"}},
        id="P7501-17 kind only with blocked",
    ),
    pytest.param("state=working:progress=40", {"progress": 40}, id="P7501-17 progress 40"),
    pytest.param("state=blocked:progress=100", {"progress": 100}, id="P7501-17 progress 100 blocked"),
    pytest.param("state=working:progress=0", {"progress": 0}, id="P7501-17 progress 0"),
    pytest.param("state=working:progress=007", {"progress": 7}, id="P7501-17 progress 007 is 7"),
    pytest.param("state=working:progress=101", {"progress": None}, id="P7501-17 progress 101 absent"),
    pytest.param("state=working:progress=-1", {"progress": None}, id="P7501-17 progress -1 absent"),
    pytest.param("state=working:progress=+1", {"progress": None}, id="P7501-17 progress +1 absent"),
    pytest.param("state=working:progress=4.5", {"progress": None}, id="P7501-17 progress 4.5 absent"),
    pytest.param("state=working:progress=", {"progress": None}, id="P7501-17 progress empty absent"),
    pytest.param("state=done:progress=50", {"progress": None}, id="P7501-17 progress only working-blocked"),
    pytest.param("state=working:app=claude-code", {"app": "claude-code"}, id="P7501-18 app"),
    pytest.param("state=working:app=a,b", {"app": None}, id="P7501-18 invalid app dropped"),
    pytest.param("state=working:app=", {"app": None}, id="P7501-18 empty app dropped"),
    pytest.param("state=working:app=" + "a" * 32, {"app": "a" * 32}, id="P7501-18 app of 32 bytes"),
    pytest.param("state=working:id=task_1.a", {"id": "task_1.a"}, id="P7501-16 id"),
    pytest.param("state=working:id=a/b/c", {"id": "a/b/c"}, id="P7501-16 id path"),
    pytest.param(
        "state=working:id=" + "/".join("a" * 8), {"id": "/".join("a" * 8)}, id="P7501-16 id 8 levels"
    ),
    pytest.param("state=working:id=" + "x" * 32, {"id": "x" * 32}, id="P7501-16 segment of 32"),
    pytest.param(
        "state=working:foo=bar",
        {"fields": {"state": "working", "foo": "bar"}},
        id="P7501-15 unknown key kept",
    ),
    pytest.param("state=idle:state=working", {"state": "working"}, id="P7501-15 last duplicate wins"),
    pytest.param(
        "state=paused:state=idle", {"state": "idle"}, id="P7501-15 later duplicate replaces unknown state"
    ),
    pytest.param(
        " state = working : app = x ", {"state": "working", "app": "x"}, id="P7501-15 whitespace trimmed"
    ),
    pytest.param(
        "state=working:Foo=bar", {"fields": {"state": "working"}}, id="P7501-15 key outside a-z skipped"
    ),
    pytest.param(
        "state=working:junk", {"fields": {"state": "working"}}, id="P7501-15 pair without = skipped"
    ),
    pytest.param("state=working::", {"fields": {"state": "working"}}, id="P7501-15 empty pairs skipped"),
    pytest.param("state=working:app=a b", {"app": None}, id="P7501-15 value outside alphabet skipped"),
    pytest.param("state=working:app=a;b", {"app": None}, id="P7501-1 semicolon in value skipped"),
    pytest.param("state=working:msg=", {"msg": None}, id="P7501-19 empty msg absent"),
    pytest.param("state=working:msg=Y!Q==", {"msg": None}, id="F-5 Y!Q== leaves the alphabet, pair skipped"),
    pytest.param("state=working:title=" + b64("Build"), {"title": "Build"}, id="P7501-2 title base64"),
    pytest.param("state=working:msg=" + b64("héllo ✓"), {"msg": "héllo ✓"}, id="P7501-19 msg UTF-8"),
    pytest.param("state=working:msg=YQ", {"msg": "a"}, id="P7501-19 padding optional"),
    pytest.param("state=working:msg=YQ==", {"msg": "a"}, id="P7501-19 padded"),
    pytest.param("state=working:msg=YWI", {"msg": "ab"}, id="P7501-19 unpadded 3"),
    pytest.param(
        "state=working:title=" + b64("t" * 192),
        {"title": "t" * 192},
        id="P7501-19 title 192 decoded accepted",
    ),
    pytest.param(
        "state=working:msg=" + b64("m" * 2048), {"msg": "m" * 2048}, id="P7501-19 msg 2048 decoded accepted"
    ),
    pytest.param(
        "state=done:msg=" + b64("\u202eevil"), {"msg": "\u202eevil"}, id="P7501-19 bidi kept raw in event"
    ),
]


@pytest.mark.parametrize(("body", "expect"), ACCEPTED)
def test_accepted(body, expect):
    _status(body, **expect)


REJECTED = [
    pytest.param("app=x", "report has no state", id="P7501-3 no state"),
    pytest.param("state=paused", "unknown state 'paused'", id="P7501-5 unknown state"),
    pytest.param("state=IDLE", "unknown state 'IDLE'", id="P7501-15 state case-sensitive"),
    pytest.param("state=", "unknown state ''", id="P7501-5 empty state"),
    pytest.param("", "empty report (no key=value pairs)", id="P7501-5 empty report"),
    pytest.param("state=working:" + "k" * 17 + "=1", "is longer than 16 bytes", id="P7501-15 key over 16"),
    pytest.param(
        "state=working:" + "K" * 17 + "=1", "is longer than 16 bytes", id="P7501-15 long malformed key"
    ),
    pytest.param("state=working:app=" + "a" * 33, "app 'aaaaa", id="P7501-18 app over 32 rejects"),
    pytest.param(
        "state=working:app=" + "a" * 33 + ":app=ok",
        "longer than 32",
        id="P7501-15 limit beats later duplicate",
    ),
    pytest.param("state=working:id=a//b", "is not a valid id", id="P7501-16 empty segment"),
    pytest.param("state=working:id=", "is not a valid id", id="P7501-16 empty id"),
    pytest.param("state=working:id=a,b", "is not a valid id", id="P7501-16 bad id char"),
    pytest.param("state=working:id=/a", "is not a valid id", id="P7501-16 leading slash"),
    pytest.param("state=working:id=" + "/".join("a" * 9), "more than 8 levels", id="P7501-16 9 levels"),
    pytest.param("state=working:id=" + "x" * 33, "segment longer than 32", id="P7501-16 segment of 33"),
    pytest.param(
        "state=working:id=" + "/".join(["x" * 31] * 5), "longer than 128", id="P7501-16 id over 128"
    ),
    pytest.param("state=clear:id=a//b", "is not a valid id", id="P7501-16 invalid id rejects clear"),
    pytest.param("state=working:msg=Y,Q==", "msg is not valid base64", id="F-5 junk in base64"),
    pytest.param("state=working:msg=Y.Q==", "msg is not valid base64", id="F-5 junk dot in base64"),
    pytest.param("state=working:msg=YR==", "non-canonical padding bits", id="P7501-19 non-canonical bits"),
    pytest.param("state=working:msg=YWI=x", "msg is not valid base64", id="P7501-19 data after padding"),
    pytest.param("state=working:msg=YQ=", "wrong padding", id="P7501-19 partial padding"),
    pytest.param("state=working:msg=Y", "msg is not valid base64", id="P7501-19 impossible length"),
    pytest.param("state=working:msg=YQ-_", "msg is not valid base64", id="P7501-19 urlsafe alphabet"),
    pytest.param(
        "state=working:msg=" + b64(b"\xff\xfe"), "msg is not valid UTF-8", id="P7501-19 invalid UTF-8"
    ),
    pytest.param(
        "state=working:msg=" + b64("a\nb"), "control character (U+000A)", id="P7501-19 msg one line"
    ),
    pytest.param(
        "state=working:title=" + b64("a\x1b[2J"), "title contains a control", id="P7501-19 title ESC"
    ),
    pytest.param(
        "state=working:msg=" + b64("a\u009bb"), "control character (U+009B)", id="P7501-19 C1 control"
    ),
    pytest.param("state=clear:msg=%%%", "", id="P7501-15 bad alphabet pair skipped in clear"),
    pytest.param("state=clear:msg=YR==", "msg is not valid base64", id="P7501-19 bad base64 rejects clear"),
    pytest.param(
        "state=working:title=" + "QUFB" * 65, "title is longer than 256", id="P7501-19 title over 256"
    ),
    pytest.param("state=working:msg=" + "QUFB" * 684, "msg is longer than 2732", id="P7501-19 msg over 2732"),
    pytest.param("state=working:msg=" + b64("m" * 2049), "decodes to more than 2048", id="P7501-19 msg 2049"),
    pytest.param("?:future=1", "neither a probe", id="P7501-10 only exact ? is a probe"),
]


@pytest.mark.parametrize(("body", "reason"), REJECTED)
def test_rejected(body, reason):
    events = decode(r7501(body))
    if body == "state=clear:msg=%%%":  # the skipped pair leaves a valid clear
        assert events == [ClearReport(0, id=None)]
        return
    assert len(events) == 1 and isinstance(events[0], Rejected), events
    assert events[0].proto == "osc7501"
    assert reason in events[0].reason
    assert decode(r7501(body), rejections=False) == []


def test_P7501_5_rejections_only_when_asked():
    data = r7501("state=paused") + r7501("state=idle")
    assert [e.type for e in decode(data, rejections=False)] == ["status"]
    assert [e.type for e in decode(data, rejections=True)] == ["rejected", "status"]


@pytest.mark.parametrize(
    ("body", "rid"),
    [
        pytest.param("state=clear", None, id="P7501-3 clear all"),
        pytest.param("state=clear:id=a/b", "a/b", id="P7501-16 clear subtree"),
        pytest.param("state=clear:id=x:app=foo", "x", id="P7501-3 clear ignores other keys"),
    ],
)
def test_clear(body, rid):
    assert decode_one(r7501(body)) == ClearReport(0, id=rid)


@pytest.mark.parametrize(
    ("term", "name"),
    [pytest.param(BEL, "bel", id="P7501-10 probe BEL"), pytest.param(ST, "st", id="P7501-10 probe ST")],
)
def test_probe_terminator(term, name):
    assert decode_one(r7501("?", term)) == Probe(0, terminator=name)


def test_P7501_6_report_carries_only_what_was_sent():
    first, second = decode(r7501("state=working:app=x:id=a") + r7501("state=done:id=a"))
    assert first.app == "x"
    assert second.app is None and second.fields == {"state": "done", "id": "a"}


def test_P7501_13_claude_code_shapes():
    body = "state=working:app=claude-code:progress=40:title=" + b64("Refactor")
    ev = _status(body, app="claude-code", progress=40, title="Refactor")
    child = "state=blocked:app=claude-code:id=task_1.a:kind=question:msg=" + b64("Which file?")
    _status(child, id="task_1.a", kind="question", msg="Which file?")
    assert ev.kind is None


def test_P7501_20_sequence_of_exactly_4096_bytes_is_accepted():
    head = b"\x1b]7501;state=working:foo="
    data = head + b"a" * (4096 - len(head) - 1) + BEL
    assert len(data) == 4096
    assert decode_one(data).state == "working"


@pytest.mark.parametrize("term", [BEL, ST], ids=["BEL", "ST"])
def test_P7501_20_sequence_of_4097_bytes_is_rejected(term):
    head = b"\x1b]7501;state=working:foo="
    data = head + b"a" * (4097 - len(head) - len(term)) + term
    assert len(data) == 4097
    ev = decode_one(data)
    assert isinstance(ev, Rejected) and "longer than 4096 bytes" in ev.reason and ev.proto == "osc7501"
    assert decode(data + r7501("state=idle"))[-1].state == "idle"  # scanning recovers
