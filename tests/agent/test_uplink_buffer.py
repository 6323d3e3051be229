"""The uplink's bookkeeping (`UplinkBuffer`), as tables: inputs in, what it sends out.

Each row drives a fresh buffer through steps (changes from the collector, the server's
welcome, acks, refusals, closes) and compares what the "out" steps produced: the next
delta, a snapshot, what a welcome resends, how a close leaves it. No socket and no
clock: what goes over the wire and when is the I/O code's (tests/server/test_server_ingest.py
and test_server_poison.py drive that against a real server).
"""

from __future__ import annotations

from typing import Any

import pytest
from paneboard_agent.uplink import PaneKey, UplinkBuffer
from paneboard_protocol import server_messages as sm
from paneboard_protocol import wire
from support.reports import pane_report

Step = tuple[Any, ...]


def _op(op: wire.Op) -> str:
    if isinstance(op, wire.PaneOp):
        return f"{op.update.key.host}/{op.update.key.pane}={op.update.state}"
    if isinstance(op, wire.GoneOp):
        return f"{op.key.host}/{op.key.pane} gone"
    return f"host {op.host} {'up' if op.reachable else 'down'}"


def _msg(msg: wire.Snapshot | wire.Delta) -> tuple[Any, ...]:
    if isinstance(msg, wire.Delta):
        return ("delta", msg.seq, [_op(o) for o in msg.ops])
    panes = sorted(f"{p.key.host}/{p.key.pane}={p.state}" for p in msg.panes)
    return ("snapshot", msg.seq, panes, sorted(msg.hosts))


def _drive(steps: list[Step], **size: int) -> list[Any]:
    """Run `steps`; return what each output step gave."""
    b = UplinkBuffer(**size)
    out: list[Any] = []
    for kind, *args in steps:
        if kind == "changed":  # ("changed", pane, state[, host])
            b.pane_changed(pane_report(args[0], args[1], host=args[2] if len(args) > 2 else "h"))
        elif kind == "gone":
            b.pane_gone(PaneKey("h", "default", args[0]), 2.0)
        elif kind == "host":  # ("host", name, reachable)
            b.host_status(args[0], args[1], 1.0, None if args[1] else "lost")
        elif kind == "health":
            b.host_health(args[0], {"rtt": 0.01}, 1.0)
        elif kind == "snapshot":
            out.append(_msg(b.snapshot(1.0, None)))
        elif kind == "delta":
            delta = b.next_delta()
            out.append(None if delta is None else _msg(delta))
        elif kind == "ack":
            b.ack(args[0])
        elif kind == "resync":
            b.resync()
        elif (
            kind == "welcome"
        ):  # ("welcome", acked, snapshot asked): what is resent, and whether a snapshot must go
            resent = b.welcome(args[0], args[1])
            out.append(("resend", [m.seq for m in resent], "snapshot" if b.need_snapshot else "no snapshot"))
        elif kind == "refused":  # ("refused", seq, at, host)
            r = b.refused(sm.Refused(reason="no", seq=args[0], at=args[1], host=args[2]))
            out.append(("refused", r.what))
        elif kind == "closed":
            out.append(("closed", b.closed(args[0])))
        elif kind == "buffered":
            out.append(("buffered", b.buffered))
        elif kind == "need_snapshot":
            out.append(("need_snapshot", b.need_snapshot))
        else:
            raise AssertionError(f"unknown step {kind}")
    return out


ROWS: list[tuple[str, list[Step], dict[str, int], list[Any]]] = [
    (
        "changes are coalesced, the latest per pane; a changed pane goes behind the others",
        [
            ("snapshot",),
            ("changed", "%1", "working"),
            ("changed", "%2", "idle"),
            ("changed", "%1", "done"),
            ("delta",),
        ],
        {},
        [("snapshot", 1, [], []), ("delta", 2, ["h/%2=idle", "h/%1=done"])],
    ),
    (
        "a gone pane replaces its pending change",
        [("snapshot",), ("changed", "%1", "working"), ("gone", "%1"), ("delta",), ("delta",)],
        {},
        [("snapshot", 1, [], []), ("delta", 2, ["h/%1 gone"]), None],
    ),
    (
        "a message carries at most ops_per_message ops",
        [
            ("snapshot",),
            ("changed", "%1", "a"),
            ("changed", "%2", "b"),
            ("changed", "%3", "c"),
            ("delta",),
            ("delta",),
        ],
        {"ops_per_message": 2},
        [("snapshot", 1, [], []), ("delta", 2, ["h/%1=a", "h/%2=b"]), ("delta", 3, ["h/%3=c"])],
    ),
    (
        "a full window sends nothing until an ack frees it",
        [
            ("snapshot",),
            ("changed", "%1", "a"),
            ("delta",),
            ("changed", "%2", "b"),
            ("delta",),
            ("ack", 1),
            ("delta",),
            ("buffered",),
        ],
        {"window": 2},
        [("snapshot", 1, [], []), ("delta", 2, ["h/%1=a"]), None, ("delta", 3, ["h/%2=b"]), ("buffered", 2)],
    ),
    (
        "pending and in flight both count as buffered, an ack releases what it covers",
        [
            ("snapshot",),
            ("changed", "%1", "a"),
            ("changed", "%2", "b"),
            ("delta",),
            ("changed", "%3", "c"),
            ("buffered",),
            ("ack", 2),
            ("buffered",),
        ],
        {},
        [("snapshot", 1, [], []), ("delta", 2, ["h/%1=a", "h/%2=b"]), ("buffered", 4), ("buffered", 1)],
    ),
    (
        "a snapshot holds every pane and host and supersedes what is pending and in flight",
        [
            ("host", "h", True),
            ("changed", "%1", "a"),
            ("delta",),
            ("changed", "%2", "b"),
            ("snapshot",),
            ("delta",),
            ("buffered",),
        ],
        {},
        [
            ("delta", 1, ["host h up", "h/%1=a"]),
            ("snapshot", 2, ["h/%1=a", "h/%2=b"], ["h"]),
            None,
            ("buffered", 1),
        ],
    ),
    (
        "a welcome that follows what is in flight resends it, in order",
        [
            ("snapshot",),
            ("changed", "%1", "a"),
            ("delta",),
            ("changed", "%2", "b"),
            ("delta",),
            ("closed", 1006),
            ("welcome", 1, False),
        ],
        {},
        [
            ("snapshot", 1, [], []),
            ("delta", 2, ["h/%1=a"]),
            ("delta", 3, ["h/%2=b"]),
            ("closed", "resend"),
            ("resend", [2, 3], "no snapshot"),
        ],
    ),
    (
        "a welcome that acks part of it resends the rest",
        [
            ("snapshot",),
            ("changed", "%1", "a"),
            ("delta",),
            ("changed", "%2", "b"),
            ("delta",),
            ("welcome", 2, False),
        ],
        {},
        [
            ("snapshot", 1, [], []),
            ("delta", 2, ["h/%1=a"]),
            ("delta", 3, ["h/%2=b"]),
            ("resend", [3], "no snapshot"),
        ],
    ),
    (
        "a gap between what the server has and what is in flight means a snapshot",
        [
            ("snapshot",),
            ("changed", "%1", "a"),
            ("delta",),
            ("ack", 2),
            ("changed", "%2", "b"),
            ("delta",),
            ("welcome", 1, False),
        ],
        {},
        [
            ("snapshot", 1, [], []),
            ("delta", 2, ["h/%1=a"]),
            ("delta", 3, ["h/%2=b"]),
            ("resend", [], "snapshot"),
        ],
    ),
    (
        "a server that asks for a snapshot, or knows nothing, gets one",
        [("snapshot",), ("welcome", 1, True), ("snapshot",), ("welcome", None, False)],
        {},
        [
            ("snapshot", 1, [], []),
            ("resend", [], "snapshot"),
            ("snapshot", 2, [], []),
            ("resend", [], "snapshot"),
        ],
    ),
    (
        "a resync asks for a snapshot",
        [("snapshot",), ("need_snapshot",), ("resync",), ("need_snapshot",)],
        {},
        [("snapshot", 1, [], []), ("need_snapshot", False), ("need_snapshot", True)],
    ),
    (
        "a host seen again asks for a snapshot; one still seen does not",
        [
            ("host", "h", True),
            ("snapshot",),
            ("host", "h", True),
            ("need_snapshot",),
            ("host", "h", False),
            ("need_snapshot",),
            ("host", "h", True),
            ("need_snapshot",),
        ],
        {},
        [
            ("snapshot", 1, [], ["h"]),
            ("need_snapshot", False),
            ("need_snapshot", False),
            ("need_snapshot", True),
        ],
    ),
    (
        "a host's health goes with its status, one op per host",
        [("snapshot",), ("host", "h", False), ("health", "h"), ("delta",)],
        {},
        [("snapshot", 1, [], []), ("delta", 2, ["host h down"])],
    ),
    (
        "a refused pane update stays out until the pane changes",
        [
            ("snapshot",),
            ("changed", "%1", "bad"),
            ("changed", "%2", "ok"),
            ("delta",),
            ("refused", 2, "ops.0.update.msg", None),
            ("ack", 2),
            ("changed", "%1", "bad"),
            ("delta",),
            ("snapshot",),
            ("changed", "%1", "good"),
            ("delta",),
        ],
        {},
        [
            ("snapshot", 1, [], []),
            ("delta", 2, ["h/%1=bad", "h/%2=ok"]),
            ("refused", "1 pane update(s) of seq 2"),
            None,
            ("snapshot", 3, ["h/%2=ok"], ["h"]),
            ("delta", 4, ["h/%1=good"]),
        ],
    ),
    (
        "a refusal naming no part drops the whole message",
        [
            ("snapshot",),
            ("changed", "%1", "a"),
            ("changed", "%2", "b"),
            ("delta",),
            ("refused", 2, None, None),
            ("snapshot",),
        ],
        {},
        [
            ("snapshot", 1, [], []),
            ("delta", 2, ["h/%1=a", "h/%2=b"]),
            ("refused", "2 pane update(s) of seq 2"),
            ("snapshot", 3, [], []),
        ],
    ),
    (
        "a gone pane forgets its quarantine",
        [
            ("snapshot",),
            ("changed", "%1", "bad"),
            ("delta",),
            ("refused", 2, "ops.0", None),
            ("gone", "%1"),
            ("changed", "%1", "bad"),
            ("delta",),
        ],
        {},
        [
            ("snapshot", 1, [], []),
            ("delta", 2, ["h/%1=bad"]),
            ("refused", "1 pane update(s) of seq 2"),
            ("delta", 3, ["h/%1=bad"]),
        ],
    ),
    (
        "a refused host's panes and status stay out for good, of deltas and snapshots",
        [
            ("snapshot",),
            ("host", "h2", True),
            ("changed", "%1", "a", "h2"),
            ("changed", "%1", "a"),
            ("delta",),
            ("refused", 2, None, "h2"),
            ("changed", "%1", "b", "h2"),
            ("host", "h2", False),
            ("changed", "%2", "c"),
            ("delta",),
            ("snapshot",),
        ],
        {},
        [
            ("snapshot", 1, [], []),
            ("delta", 2, ["host h2 up", "h2/%1=a", "h/%1=a"]),
            ("refused", "host 'h2'"),
            ("delta", 3, ["h/%2=c"]),
            ("snapshot", 4, ["h/%1=a", "h/%2=c"], ["h"]),
        ],
    ),
    (
        "a refusing close after a refusal starts over from a snapshot of the rest",
        [
            ("snapshot",),
            ("changed", "%1", "a"),
            ("delta",),
            ("refused", 2, "ops.0", None),
            ("closed", 1009),
            ("buffered",),
            ("need_snapshot",),
        ],
        {},
        [
            ("snapshot", 1, [], []),
            ("delta", 2, ["h/%1=a"]),
            ("refused", "1 pane update(s) of seq 2"),
            ("closed", "refused"),
            ("buffered", 0),
            ("need_snapshot", True),
        ],
    ),
    (
        "a refusing close that named nothing is poison: in flight dropped, a snapshot next",
        [
            ("snapshot",),
            ("changed", "%1", "a"),
            ("delta",),
            ("closed", 1007),
            ("buffered",),
            ("need_snapshot",),
        ],
        {},
        [
            ("snapshot", 1, [], []),
            ("delta", 2, ["h/%1=a"]),
            ("closed", "poison"),
            ("buffered", 0),
            ("need_snapshot", True),
        ],
    ),
    (
        "a refusal acknowledged past is over: a later refusing close is poison",
        [
            ("snapshot",),
            ("changed", "%1", "a"),
            ("delta",),
            ("refused", 2, "ops.0", None),
            ("ack", 2),
            ("closed", 4403),
        ],
        {},
        [
            ("snapshot", 1, [], []),
            ("delta", 2, ["h/%1=a"]),
            ("refused", "1 pane update(s) of seq 2"),
            ("closed", "poison"),
        ],
    ),
    (
        "any other close keeps what is in flight for the next welcome",
        [
            ("snapshot",),
            ("changed", "%1", "a"),
            ("delta",),
            ("closed", 1012),
            ("buffered",),
            ("closed", None),
            ("buffered",),
        ],
        {},
        [
            ("snapshot", 1, [], []),
            ("delta", 2, ["h/%1=a"]),
            ("closed", "resend"),
            ("buffered", 2),
            ("closed", "resend"),
            ("buffered", 2),
        ],
    ),
]


@pytest.mark.parametrize(("steps", "size", "expected"), [r[1:] for r in ROWS], ids=[r[0] for r in ROWS])
def test_uplink_buffer(steps: list[Step], size: dict[str, int], expected: list[Any]) -> None:
    assert _drive(steps, **size) == expected


def _screen(n: int) -> wire.Screen:
    return wire.screen(PaneKey("h", "default", "%1"), float(n), [str(n)], (80, 24), (0, 0), "")


def test_side_messages_wait_only_while_connected_and_are_bounded() -> None:
    b = UplinkBuffer()
    assert b.side_put(_screen(0)) is False  # not connected: dropped
    assert b.side_next() is None
    b.welcome(None, False)
    assert b.side_put(_screen(0)) is False  # welcomed, but its answer is not out yet
    b.up()
    for n in range(300):
        assert b.side_put(_screen(n)) is True
    got = []
    while (msg := b.side_next()) is not None:
        got.append(msg)
    assert [m.t for m in got] == [float(n) for n in range(300 - 256, 300)]  # the oldest went
    b.side_put(_screen(1))
    b.closed(1006)
    assert b.side_next() is None and b.side_put(_screen(2)) is False
    b.up()
    b.side_put(_screen(3))
    b.lost()
    assert b.side_next() is None and b.side_put(_screen(4)) is False


def test_hello_names_hosts_but_not_refused_ones() -> None:
    b = UplinkBuffer()
    for host in ("b", "a", "c"):
        b.host_status(host, True, 1.0, None)
    b.refused(sm.Refused(reason="owned", host="c"))
    assert b.hello_hosts({"a", "c"}) == (["a", "b"], ["a"])
