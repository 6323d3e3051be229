"""What the uplink owes the server, as a state machine with no I/O: `UplinkBuffer`.

The uplink (`uplink.UplinkSink`) is two things: a WebSocket that comes and goes, and the
bookkeeping of what must cross it. This module is the second, driven by inputs (a
change from the collector, the server's welcome, an ack, a resync, a refusal, the
socket closing) and asked for outputs (the next delta, a snapshot, what to resend);
it never waits, sends or reads a clock, so its rules are tested as tables
(tests/agent/test_uplink_buffer.py) and the I/O code around it stays thin.

The rules (protocol in docs/wire.md):
- changes not yet sent are coalesced, the latest per pane and per host, so the buffer
  is bounded by the number of panes, however long the outage;
- a message sent stays in flight, under its sequence number, until acknowledged;
  a welcome that says what the server has lets the rest be resent, in order; anything
  else (a gap, the server asking, a host seen again) sends one snapshot, which
  supersedes everything before it;
- what the server refused is never sent again: a refused pane update stays out until
  the pane changes, a refused host's panes stay out for good;
- screens and answer outcomes wait only while connected, at most `SIDE_MAX` of them.
"""

from __future__ import annotations

import re
from collections import OrderedDict, deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from paneboard_protocol import server_messages as sm
from paneboard_protocol import wire

from paneboard_agent.uplink.sink import PaneKey, PaneUpdate

#: screens / answer outcomes waiting for the socket (the oldest dropped)
SIDE_MAX = 256
#: close codes after which the server would refuse the same bytes again
REFUSING_CLOSE = frozenset({1007, 1009, 4403})

Message = wire.Snapshot | wire.Delta
Hosts = Mapping[str, tuple[bool, str | None]]


@dataclass(frozen=True)
class Refusal:
    """What `UplinkBuffer.refused` quarantined, for the one log line that says so."""

    what: str
    reason: str


#: how a close leaves the buffer: `resend` (in flight goes again), `refused` (what the
#: server refused is out; a snapshot of the rest), `poison` (the server refused without
#: naming what: a fresh snapshot, and the caller waits long before trying again)
Closed = Literal["resend", "refused", "poison"]


class UplinkBuffer:
    """Pending changes, messages in flight, quarantine and side messages of one uplink."""

    def __init__(self, window: int = 64, ops_per_message: int = 500) -> None:
        self.window = window
        self.ops_per_message = ops_per_message
        # Not yet sent, coalesced per pane/host: the bound is the pane count.
        self.pending: OrderedDict[str, wire.Op] = OrderedDict()
        # Sent, not yet acknowledged: seq -> message.
        self.inflight: OrderedDict[int, Message] = OrderedDict()
        self.seq = 0
        self.acked = 0
        self.need_snapshot = True
        # The latest known view (what a snapshot holds when no collector is attached).
        self.view: dict[str, wire.PaneOp] = {}
        self.hosts: dict[str, tuple[bool, str | None]] = {}
        self.health: dict[str, dict[str, Any]] = {}  # the links' health (health.py), by host
        # What the server refused: pane key -> the refused update's fingerprint, and hosts
        # another collector owns. Bounded by the pane and host counts.
        self.quarantine: dict[str, str] = {}
        self.refused_hosts: set[str] = set()
        self.refusal: sm.Refused | None = None  # refused, and neither acked past nor closed yet
        self.online = False
        self.side: deque[wire.Screen | wire.Answered] = deque(maxlen=SIDE_MAX)

    # --- from the collector --------------------------------------------------------
    def pane_changed(self, update: PaneUpdate) -> None:
        op = wire.pane_op(update)
        self.view[str(update.key)] = op
        self._put(f"p:{update.key}", op)

    def pane_gone(self, key: PaneKey, t: float) -> None:
        self.view.pop(str(key), None)
        self.quarantine.pop(str(key), None)
        self._put(f"p:{key}", wire.gone_op(key, t))

    def host_status(self, host: str, reachable: bool, t: float, error: str | None) -> None:
        was = self.hosts.get(host, (False, None))[0]
        self.hosts[host] = (reachable, error)
        if reachable and not was:
            # The collector sees the host (again), its panes listed and their stored state
            # and screens read: a snapshot tells the server the whole of it at once. Panes
            # that closed while nobody watched go, and the server takes a pane that still
            # shows what it stored for the same wait (docs/wire.md, "snapshot").
            self.need_snapshot = True
        self._put(f"h:{host}", wire.host_op(host, reachable, error, t, self.health.get(host)))

    def host_health(self, host: str, health: dict[str, Any], t: float) -> None:
        """The link's health goes with the host's status: one op per host."""
        self.health[host] = health
        reachable, error = self.hosts.get(host, (True, None))
        self._put(f"h:{host}", wire.host_op(host, reachable, error, t, health))

    def side_put(self, msg: wire.Screen | wire.Answered) -> bool:
        """A screen or an answer's outcome: kept while connected, dropped otherwise (a
        screen is stale by the time the server is back, and the server tells a waiting
        operator `offline`). True when kept."""
        if self.online:
            self.side.append(msg)
        return self.online

    def _put(self, key: str, op: wire.Op) -> None:
        self.pending.pop(key, None)  # the newest goes last: order stays first-come otherwise
        self.pending[key] = op

    # --- from the server -----------------------------------------------------------
    def hello_hosts(self, input_hosts: set[str]) -> tuple[list[str], list[str]]:
        """The hosts a hello names, and those of them that take answers."""
        return sorted(set(self.hosts) - self.refused_hosts), sorted(input_hosts - self.refused_hosts)

    def welcome(self, acked: int | None, snapshot: bool) -> list[Message]:
        """The server said what it has. Returns what to resend, in order; when that
        cannot do, `need_snapshot` is set and nothing is returned."""
        if acked is not None:
            self.ack(acked)
        if snapshot or acked is None or (self.inflight and next(iter(self.inflight)) != acked + 1):
            self.need_snapshot = True
        return [] if self.need_snapshot else list(self.inflight.values())

    def up(self) -> None:
        """The welcome's answer is sent: side messages may queue from now on."""
        self.online = True

    def ack(self, seq: int) -> None:
        if self.refusal is not None and self.refusal.seq is not None and seq >= self.refusal.seq:
            self.refusal = None  # acknowledged: stored without the refused pane, no close follows
        self.acked = max(self.acked, seq)
        while self.inflight and next(iter(self.inflight)) <= seq:
            self.inflight.popitem(last=False)

    def resync(self) -> None:
        self.need_snapshot = True

    def refused(self, info: sm.Refused) -> Refusal:
        """Quarantine what the server refused (`seq`, and `at` such as `panes.3.msg`), now,
        while the message it names is still in flight: a pane the database refused comes
        before the ack of the rest, with no close."""
        host = info.host
        if host is not None:
            self.refused_hosts.add(host)
        msg = self.inflight.get(info.seq) if info.seq is not None else None
        items: list[PaneUpdate | wire.Op] = []
        if msg is not None:
            at = re.match(r"(panes|ops)\.(\d+)", info.at or "")
            whole: list[PaneUpdate] | list[wire.Op] = msg.panes if isinstance(msg, wire.Snapshot) else msg.ops
            if at is not None and int(at.group(2)) < len(whole):
                items = [whole[int(at.group(2))]]
            elif host is None:
                items = list(whole)  # no part named: the whole message is dropped
        for item in items:
            update = item.update if isinstance(item, wire.PaneOp) else item
            if isinstance(update, PaneUpdate):
                self.quarantine[str(update.key)] = _fingerprint(update)
        self.refusal = info  # a close that follows starts over from a snapshot
        what = f"host {host!r}" if host is not None else f"{len(items)} pane update(s) of seq {info.seq}"
        return Refusal(what, info.reason)

    def closed(self, code: int | None) -> Closed:
        """The socket closed (`code` None: it broke). Side messages go; what is in
        flight stays for the next welcome, unless the server refused it."""
        self.online = False
        self.side.clear()
        refusal, self.refusal = self.refusal, None
        if code not in REFUSING_CLOSE:
            return "resend"
        # The server would refuse the same bytes again: resending them would loop. Start
        # over from a snapshot (what the panes show now) without what it named, if it did.
        self.inflight.clear()
        self.need_snapshot = True
        return "refused" if refusal is not None else "poison"

    def lost(self) -> None:
        """The connection failed without a close (or never opened)."""
        self.online = False
        self.side.clear()

    # --- what to send --------------------------------------------------------------
    def snapshot(self, t: float, source: tuple[list[PaneUpdate], Hosts] | None) -> wire.Snapshot:
        """Everything, in one message that supersedes everything before it, sent or not;
        `source` is the collector's whole view (`SnapshotSource.snapshot`), else the
        buffer's own."""
        if source is not None:
            panes, hosts = source
        else:
            panes, hosts = [op.update for op in self.view.values()], self.hosts
        host_map = {h: wire.host_state(r, e, self.health.get(h)) for h, (r, e) in hosts.items()}
        panes = [p for p in panes if not self._held_back(p)]
        for h in self.refused_hosts:
            host_map.pop(h, None)
        for p in panes:
            host_map.setdefault(p.key.host, wire.host_state(True, None))
        self.seq += 1
        msg = wire.snapshot(self.seq, t, host_map, panes)
        self.pending.clear()
        self.inflight.clear()
        self.inflight[self.seq] = msg
        self.need_snapshot = False
        return msg

    def next_delta(self) -> wire.Delta | None:
        """The next message of pending changes, when the window has room; None when
        nothing is to be sent (what is held back is dropped on the way)."""
        ops: list[wire.Op] = []
        while self.pending and len(self.inflight) < self.window and len(ops) < self.ops_per_message:
            _, op = self.pending.popitem(last=False)
            if isinstance(op, wire.PaneOp) and self._held_back(op.update):
                continue
            if _host_of(op) in self.refused_hosts:
                continue
            ops.append(op)
        if not ops:
            return None
        self.seq += 1
        msg = wire.delta(self.seq, ops)
        self.inflight[self.seq] = msg
        return msg

    def side_next(self) -> wire.Screen | wire.Answered | None:
        return self.side.popleft() if self.side else None

    @property
    def buffered(self) -> int:
        """Changes not yet acknowledged by the server (pending + in flight)."""
        inflight = sum(len(m.ops) if isinstance(m, wire.Delta) else 1 for m in self.inflight.values())
        return len(self.pending) + inflight

    @property
    def idle(self) -> bool:
        """Nothing pending and nothing in flight."""
        return not self.pending and not self.inflight

    def _held_back(self, update: PaneUpdate) -> bool:
        if update.key.host in self.refused_hosts:
            return True
        fp = self.quarantine.get(str(update.key))
        return fp is not None and fp == _fingerprint(update)


def _host_of(op: wire.Op) -> str:
    if isinstance(op, wire.PaneOp):
        return op.update.key.host
    return op.key.host if isinstance(op, wire.GoneOp) else op.host


def _fingerprint(update: PaneUpdate) -> str:
    return wire.encode(update)
