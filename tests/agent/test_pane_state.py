"""The stored pane state (pane_state.py, late_state.py, pane_store.py): pure parts, as tables.

The option values are untrusted pane output; every refusal here is a value a program
could set with `tmux set-option -p @paneboard-7501 …`.
"""

from __future__ import annotations

import base64

import pytest
from helpers import b64, osc7501, thinkterm
from paneboard_agent.tmux import Observation, PaneInfo
from paneboard_agent.tools.pane_store import pane_target, set_argv
from paneboard_agent.uplink import PaneKey
from paneboard_agent.watch.effects import Listed, Restored
from paneboard_agent.watch.late_state import parse_lines, state_format
from paneboard_agent.watch.tracker import PaneTracker
from paneboard_protocol import AgentReport, ClearReport, Decoder, StatusReport
from paneboard_protocol.pane_state import (
    MAX_7501_VALUE,
    MAX_RECORDS,
    OPTION_7501,
    OPTION_AGENT,
    LiveState,
    parse_7501,
    parse_agent,
    restore_events,
)

BLOCKED = "state=blocked:kind=permission:app=claude-code:msg=" + b64("Apply 3 to add?")


def live(*chunks: bytes, pg: int = 42) -> LiveState:
    state = LiveState(pg)
    for chunk in chunks:
        state.apply(Decoder().feed(chunk))
    return state


def test_records_are_kept_by_id_replaced_and_cleared() -> None:
    s = live(
        osc7501("state=working:app=claude-code"),
        osc7501("state=blocked:id=task_1:kind=question:msg=" + b64("Which?")),
        osc7501("state=working:id=task_1/a"),
        osc7501("state=idle:id=task_11"),
    )
    assert list(s.records) == ["", "task_1", "task_1/a", "task_11"]
    s.apply(Decoder().feed(osc7501("state=clear:id=task_1")))  # the subtree, not the sibling task_11
    assert list(s.records) == ["", "task_11"]
    s.apply(Decoder().feed(osc7501("state=done:app=claude-code")))  # replaces the root, now the newest
    assert s.value_7501() == "v1 pg=42 state=idle:id=task_11 state=done:app=claude-code"
    s.apply(Decoder().feed(osc7501("state=clear")))
    assert s.value_7501() is None  # nothing live: the option is unset


def test_writer_left_keeps_only_results() -> None:
    s = live(osc7501("state=done:id=a"), osc7501("state=blocked:id=b"), osc7501("state=error:id=c"))
    s.end_live()
    assert [rid for rid in s.records] == ["a", "c"]
    s = live(osc7501("state=blocked:id=b"), b"\x1b]133;A\x07")  # a new prompt ends live records too
    assert s.value_7501() is None
    s = live(osc7501("state=done"), b"\x1bc")  # RIS drops all (P7501-21)
    assert s.value_7501() is None


def test_bounded_by_count_and_size() -> None:
    s = live(*(osc7501(f"state=working:id=t{i}") for i in range(MAX_RECORDS + 10)))
    assert len(s.records) == MAX_RECORDS and "t0" not in s.records  # least recently updated went
    big = "state=blocked:msg=" + b64("x" * 2000)
    s = live(*(osc7501(f"{big}:id=r{i}") for i in range(10)))
    value = s.value_7501()
    assert value is not None and len(value) <= MAX_7501_VALUE
    stored = parse_7501(value)
    assert stored is not None and stored.events[-1].id == "r9"  # the newest kept, the oldest cut


def test_round_trip_through_the_decoder() -> None:
    s = live(osc7501(BLOCKED), thinkterm("my-agent", "blocked", ts=1700000000))
    stored = parse_7501(s.value_7501())
    assert stored is not None and stored.pg == 42
    (ev,) = stored.events
    assert (ev.state, ev.kind, ev.app, ev.msg) == ("blocked", "permission", "claude-code", "Apply 3 to add?")
    agent = parse_agent(s.value_agent())
    assert agent is not None and agent.pg == 42
    (contract,) = agent.events
    assert isinstance(contract, AgentReport)
    assert (contract.agent, contract.state, contract.ts) == ("my-agent", "blocked", 1700000000)


def _agent_value(text: str, pg: str = "pg=42 ") -> str:
    return f"v1 {pg}" + base64.b64encode(text.encode()).decode()


@pytest.mark.parametrize(
    "value",
    [
        None,
        "",
        "v2 pg=42 state=idle",  # another version of the envelope
        "v1 pg=42",  # no record
        "v1 pg=x state=idle",
        "v1 pg=0 state=idle",
        "v1 pg=42  state=idle",  # empty word
        "v1 pg=42 state=idle\nP\t%1",  # a newline posing as another line
        "v1 pg=42 state=idle\x1b]7501;state=blocked\x07",  # raw escapes never reach the decoder
        "v1 pg=42 state=idle;x",  # outside the report alphabet
        "v1 pg=42 state=bogus",  # P7501-5: an unknown state is discarded, so nothing is left
        "v1 pg=42 state=blocked:msg=!!!!",  # invalid base64 rejects the report (P7501-19)
        "v1 pg=42 state=blocked:msg=" + b64("a\x07b"),  # a control character after decoding
        "v1 pg=42 state=clear",  # a clear is never stored state
        "v1 pg=42 " + "state=idle:msg=" + "QUFB" * 1100,  # one body over the sequence limit
        "v1 pg=42 " + " ".join(f"state=idle:id=t{i}" for i in range(MAX_RECORDS + 1)),
        "v1 pg=42 " + "state=idle " * 800,  # the whole value over its limit
        "v1 pg=42 state=idle:app=clé",  # not ASCII
    ],
)
def test_refused_7501_values(value: str | None) -> None:
    assert parse_7501(value) is None


@pytest.mark.parametrize(
    "value",
    [
        None,
        "v1 pg=42",
        "v1 pg=42 abc def",
        _agent_value("v1;agent=x;state=blocked") + "\x07",
        "v1 pg=42 !!!!",
        _agent_value("v9;agent=x;state=blocked"),  # TA-8: unknown major version
        _agent_value("v1;state=blocked"),  # TA-9: agent required
        "v1 pg=42 " + "QUFB" * 1100,
    ],
)
def test_refused_agent_values(value: str | None) -> None:
    assert parse_agent(value) is None


def _records(*pairs: str) -> list[dict]:
    out = []
    for i, p in enumerate(pairs):
        (ev,) = Decoder().feed(osc7501(p))
        out.append({k: getattr(ev, k) for k in ("state", "kind", "app", "msg", "title", "progress")})
        out[-1].update(id=ev.id or "", updated=float(i))
    return out


def test_restore_feeds_the_writer_in_front() -> None:
    stored = parse_7501(live(osc7501(BLOCKED)).value_7501())
    events = restore_events(stored, None, 42, {"records": [], "contract": None}, since=100.0)
    assert isinstance(events[0], ClearReport) and events[0].id is None
    assert [type(e) for e in events[1:]] == [StatusReport] and events[1].kind == "permission"


def test_restore_writer_gone_gives_results_only_and_only_to_an_empty_pane() -> None:
    stored = parse_7501(live(osc7501("state=blocked:id=a"), osc7501("state=done:id=b")).value_7501())
    events = restore_events(stored, None, 7, {"records": [], "contract": None}, since=100.0)
    assert [(e.id, e.state) for e in events] == [("b", "done")]
    held = {"records": _records("state=working:id=z"), "contract": None}
    assert restore_events(stored, None, 7, held, since=100.0) == []


def test_restore_live_evidence_wins_and_nothing_missed_feeds_nothing() -> None:
    stored = parse_7501(live(osc7501(BLOCKED)).value_7501())
    newer = _records("state=working")
    newer[0]["updated"] = 150.0  # reported on this connection already
    assert restore_events(stored, None, 42, {"records": newer, "contract": None}, since=100.0) == []
    same = _records(BLOCKED)
    assert restore_events(stored, None, 42, {"records": same, "contract": None}, since=100.0) == []
    done = parse_7501(live(osc7501("state=done:app=claude-code")).value_7501())
    seen = _records("state=idle:app=claude-code")  # the user looked: done turned idle
    assert restore_events(done, None, 42, {"records": seen, "contract": None}, since=100.0) == []
    other = _records("state=working:app=claude-code")  # missed a change while away
    assert len(restore_events(done, None, 42, {"records": other, "contract": None}, since=100.0)) == 2


def test_restore_contract_only_for_the_writer_in_front() -> None:
    agent = parse_agent(live(thinkterm("my-agent", "blocked", ts=1700000000)).value_agent())
    empty = {"records": [], "contract": None}
    (ev,) = restore_events(None, agent, 42, empty, since=100.0)
    assert isinstance(ev, AgentReport) and ev.state == "blocked"
    assert restore_events(None, agent, 43, empty, since=100.0) == []  # TA-4: left behind
    same = {"agent": "my-agent", "state": "blocked", "session": None, "ts": 1700000000, "ended": False}
    earlier = {"records": [], "contract": {**same, "received": 1.0}}
    assert restore_events(None, agent, 42, earlier, 100.0) == []
    live_one = {**same, "state": "working", "received": 150.0}
    assert restore_events(None, agent, 42, {"records": [], "contract": live_one}, 100.0) == []


def test_listing_lines_need_the_token_and_the_end_field() -> None:
    token = "0123abcd"
    assert state_format(token).startswith(token + "\t#{pane_id}")
    lines = [
        f"{token}\t%1\t100\tv1 pg=100 state=idle\t\tE".encode(),
        f"{token}\t%2\t200\t\t\tE".encode(),  # nothing stored: not listed
        b"forged\t%3\t300\tv1 pg=300 state=blocked\t\tE",  # a value's newline posing as a line
        f"{token}\t%4\t400\tv1 pg=400 state=idle".encode(),  # cut: no end field
        f"{token}\t%5\t500\tv1\tx\t\tE".encode(),  # a tab inside a value
    ]
    assert [(s.pane_id, s.pane_pid) for s in parse_lines(lines, token)] == [("%1", 100)]


def test_pane_target_and_set_argv() -> None:
    assert pane_target({"TMUX": "/tmp/tmux-0/default,123,0", "TMUX_PANE": "%7"}) == (
        ["tmux", "-S", "/tmp/tmux-0/default"],
        "%7",
    )
    assert pane_target({"TMUX_PANE": "%7"}) is None
    assert pane_target({"TMUX": "/s,1,0", "TMUX_PANE": "7; kill"}) is None
    argv = set_argv(["tmux"], "%7", {OPTION_7501: "v1 x", OPTION_AGENT: None})
    first = ["set-option", "-p", "-t", "%7", OPTION_7501, "v1 x"]
    assert argv == ["tmux", *first, ";", "set-option", "-p", "-u", "-t", "%7", OPTION_AGENT]


def test_a_tracker_restored_from_stored_state_classifies_as_live() -> None:
    t = PaneTracker(PaneKey("h", "default", "%1"), "main")
    now = 1_800_000_000.0
    t.step(
        Listed(
            now,
            PaneInfo("$0", "@0", "0", "%1", 42, False, "/dev/pts/9", "main", "w", "claude"),
            Observation("claude", 42, True),
        )
    )
    stored = parse_7501(live(osc7501(BLOCKED)).value_7501())
    events = restore_events(stored, None, 42, t.classifier.evidence(), since=now - 1)
    update = t.step(Restored(now + 1, tuple(events))).update
    assert update is not None
    assert (update.agent, update.state, update.kind, update.msg, update.source) == (
        "claude",
        "blocked",
        "permission",
        "Apply 3 to add?",
        "protocol",
    )
    # read again after a reconnect that missed nothing: nothing to feed, nothing changes
    assert restore_events(stored, None, 42, t.classifier.evidence(), since=now + 5) == []
