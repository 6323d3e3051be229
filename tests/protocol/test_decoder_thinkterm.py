"""OSC 1337 SetUserVar and the THINKTERM_AGENT v1 grammar (TA-7 … TA-11, RI-6)."""

from __future__ import annotations

import pytest
from decoder_helpers import ST, agent_var, b64, decode, decode_one, osc
from paneboard_protocol.events import AgentReport, Rejected, UserVar


def test_TA_7_full_contract():
    ev = decode_one(agent_var("v1;agent=my-agent;state=working;session=S1;pid=42;ts=1700000000;ended=1"))
    assert ev == AgentReport(
        0,
        var="THINKTERM_AGENT",
        version=1,
        agent="my-agent",
        state="working",
        session="S1",
        ts=1700000000,
        ended=True,
    )


def test_TA_7_shell_form_from_the_seed():
    # printf '\033]1337;SetUserVar=THINKTERM_AGENT=%s\007' "$(printf %s "$v" | base64 | tr -d '\n')"
    v = "v1;agent=my-agent;state=working;session=;ts=1760000000"
    ev = decode_one(b"\033]1337;SetUserVar=THINKTERM_AGENT=" + b64(v).encode() + b"\007")
    assert isinstance(ev, AgentReport)
    assert (ev.agent, ev.state, ev.session, ev.ts, ev.ended) == (
        "my-agent",
        "working",
        None,
        1760000000,
        False,
    )


ACCEPTED = [
    pytest.param(
        "v1;agent=a;state=idle", {"state": "idle", "session": None, "ts": None}, id="TA-7 minimal idle"
    ),
    pytest.param("v1;agent=a;state=blocked", {"state": "blocked"}, id="TA-7 blocked"),
    pytest.param("v1;state=working;agent=a", {"agent": "a"}, id="TA-7 key order free"),
    pytest.param("v1;agent=a;state=idle;color=red", {"state": "idle"}, id="TA-8 unknown key ignored"),
    pytest.param("v1.2;agent=a;state=idle", {"version": 1}, id="TA-8 minor version of major 1 read"),
    pytest.param("v1;agent=a;state=idle;session=", {"session": None}, id="TA-11 empty session"),
    pytest.param("v1;agent=a;state=idle;session=abc-1", {"session": "abc-1"}, id="TA-11 session"),
    pytest.param("v1;agent=a;state=idle;pid=123", {"agent": "a"}, id="TA-11 pid accepted and ignored"),
    pytest.param("v1;agent=a;state=idle;pid=x", {"agent": "a"}, id="TA-11 bad pid ignored"),
    pytest.param("v1;agent=a;state=idle;ts=abc", {"ts": None}, id="TA-7 unparseable ts absent"),
    pytest.param("v1;agent=a;state=idle;ts=-5", {"ts": None}, id="TA-7 negative ts absent"),
    pytest.param("v1;agent=a;state=idle;ended=0", {"ended": False}, id="TA-7 ended=0 is false"),
    pytest.param("v1;agent=a;state=idle;ended=1", {"ended": True}, id="TA-7 ended=1"),
    pytest.param("v1;agent=a;state=idle;state=working", {"state": "working"}, id="TA-8 last duplicate wins"),
    pytest.param("v1;agent=a;state=idle\n", {"state": "idle"}, id="TA-7 trailing newline from echo trimmed"),
    pytest.param("v1;agent=a;junk;state=idle", {"state": "idle"}, id="TA-8 pair without = ignored"),
]


@pytest.mark.parametrize(("value", "expect"), ACCEPTED)
def test_accepted(value, expect):
    ev = decode_one(agent_var(value))
    assert isinstance(ev, AgentReport), ev
    for key, want in expect.items():
        assert getattr(ev, key) == want, (key, ev)


REJECTED = [
    pytest.param(
        "v2;agent=a;state=idle", "unknown THINKTERM_AGENT version 'v2'", id="TA-8 unknown major version"
    ),
    pytest.param("agent=a;state=idle", "does not start with a version", id="TA-8 no version"),
    pytest.param("V1;agent=a;state=idle", "does not start with a version", id="TA-8 version is lower-case v"),
    pytest.param("v1;state=idle", "has no agent", id="TA-9 agent required"),
    pytest.param("v1;agent=;state=idle", "has no agent", id="TA-9 empty agent"),
    pytest.param("v1;agent=" + "a" * 65 + ";state=idle", "longer than 64", id="TA-9 agent too long"),
    pytest.param("v1;agent=a\x07b;state=idle", "control character", id="TA-9 agent with control"),
    pytest.param("v1;agent=a;state=paused", "unknown state 'paused'", id="TA-10 unknown state"),
    pytest.param("v1;agent=a;state=done", "unknown state 'done'", id="TA-10 done is not a contract state"),
    pytest.param("v1;agent=a", "has no state", id="TA-10 state required"),
]


@pytest.mark.parametrize(("value", "reason"), REJECTED)
def test_rejected(value, reason):
    ev = decode_one(agent_var(value))
    assert isinstance(ev, Rejected), ev
    assert ev.proto == "thinkterm" and reason in ev.reason
    assert decode(agent_var(value), rejections=False) == []


def test_RI_6_unknown_state_keeps_identity_in_partial():
    ev = decode_one(agent_var("v1;agent=codex;state=thinking;session=s;ts=5"))
    assert isinstance(ev, Rejected)
    assert ev.partial == {
        "var": "THINKTERM_AGENT",
        "version": 1,
        "agent": "codex",
        "state": "thinking",
        "session": "s",
        "ts": 5,
        "ended": False,
    }
    assert ev.to_json()["partial"]["agent"] == "codex"


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        pytest.param(
            b"THINKTERM_AGENT=djE7YWdlbnQ9YTtzdGF0ZT1pZGxl!", "not valid base64", id="F-5 junk byte"
        ),
        pytest.param(b"THINKTERM_AGENT=YR==", "non-canonical padding bits", id="F-5 non-canonical"),
        pytest.param(
            b"THINKTERM_AGENT=" + b64(b"\xc3(").encode(), "not valid UTF-8", id="TA-7 invalid UTF-8"
        ),
        pytest.param(b"THINKTERM_AGENT", "has no '='", id="TA-7 SetUserVar without value"),
    ],
)
def test_contract_framing_rejections(raw, reason):
    ev = decode_one(osc(b"1337;SetUserVar=" + raw))
    assert isinstance(ev, Rejected) and ev.proto == "thinkterm" and reason in ev.reason, ev


def test_TA_7_base64_wrapped_by_newlines_still_reads():
    # `base64` without `tr -d '\n'` wraps at 76 columns; C0 is dropped by framing (F-1).
    value = "v1;agent=a-rather-long-agent-name;state=blocked;session=" + "s" * 60 + ";ts=1760000000"
    encoded = b64(value)
    wrapped = "\n".join(encoded[i : i + 76] for i in range(0, len(encoded), 76))
    ev = decode_one(osc("1337;SetUserVar=THINKTERM_AGENT=" + wrapped))
    assert isinstance(ev, AgentReport) and ev.state == "blocked"


def test_other_user_variable():
    ev = decode_one(osc("1337;SetUserVar=gitBranch=" + b64("main ✓"), ST))
    assert ev == UserVar(0, var="gitBranch", value="main ✓")


def test_other_user_variable_empty_value():
    assert decode_one(osc("1337;SetUserVar=x=")) == UserVar(0, var="x", value="")


def test_other_user_variable_bad_base64_is_rejected_as_uservar():
    ev = decode_one(osc("1337;SetUserVar=x=Y!Q=="))
    assert isinstance(ev, Rejected) and ev.proto == "uservar" and "not valid base64" in ev.reason


def test_other_1337_commands_are_ignored():
    assert decode(osc("1337;CurrentDir=/tmp") + osc("1337;File=name=eA==:eA==")) == []


def test_TA_1_thinkterm_agent_name_is_case_sensitive():
    ev = decode_one(agent_var("v1;agent=a;state=idle", name="thinkterm_agent"))
    assert ev == UserVar(0, var="thinkterm_agent", value="v1;agent=a;state=idle")
