"""The debounce of screen-inferred transitions (TA-6, RI-3), clock-injected.

A half-drawn frame must never replay a notification, so a screen reading that would
*leave* `blocked`, or go `working` -> `idle`, does not take effect at once. RI-3
releases it after three confirming readings at a 150 ms cadence (450 ms after the
first reading) and caps the wait at 700 ms from the first reading. The collector
captures the screen when output settles, not on a fixed 150 ms tick, so the
confirmations are counted in time: a reading that contradicts the candidate before
its 450 ms are up restarts the candidate's clock (but never the 700 ms cap), and a
reading that returns to the current state cancels the transition. Entering
`blocked`, any other transition and the very first reading are immediate.
Protocol-reported states never pass through here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from paneboard_protocol.rules import RuleState

CONFIRM = 0.45
"""Three confirming readings at a 150 ms cadence (RI-3)."""

CAP = 0.70
"""No transition waits longer than this from its first reading (RI-3)."""

Reading = dict[str, Any] | None
"""A screen-rule result ({"state", "kind", "rule", "manifest", "native"}) or None: no rule matched."""


def _state(reading: Reading) -> RuleState | None:
    return None if reading is None else reading["state"]


def needs_debounce(old: Reading, new: Reading) -> bool:
    """TA-6: leaving blocked, or working -> idle (no match falls back to idle)."""
    a, b = _state(old), _state(new)
    if a == b:
        return False
    if a == "blocked":
        return True
    return a == "working" and b in ("idle", None)


@dataclass(slots=True)
class _Pending:
    reading: Reading
    opened: float
    since: float


class Debouncer:
    """Holds the released screen reading and at most one pending transition."""

    def __init__(self) -> None:
        self.released: Reading = None
        self.primed = False  # a first reading has been taken
        self._pending: _Pending | None = None
        # State before the first reading at the latest instant: several readings at one
        # instant collapse into the last one, so however the input was chunked, the
        # result is the same.
        self._instant: tuple[float, Reading, bool, _Pending | None] | None = None

    def reset(self) -> None:
        """A different manifest now applies: the next reading is a first classification."""
        self.released = None
        self.primed = False
        self._pending = None
        self._instant = None

    def deadline(self) -> float | None:
        """When the pending transition releases, if one is pending."""
        p = self._pending
        if p is None:
            return None
        return min(p.since + CONFIRM, p.opened + CAP)

    def advance(self, now: float) -> float | None:
        """Release the pending transition if its deadline has passed; return that deadline."""
        d = self.deadline()
        if d is not None and d <= now:
            assert self._pending is not None
            self.released = self._pending.reading
            self._pending = None
            return d
        return None

    def offer(self, now: float, reading: Reading) -> None:
        """A new screen reading at `now`."""
        self.advance(now)
        inst = self._instant
        if inst is not None and inst[0] == now:
            _, self.released, self.primed, pending = inst
            self._pending = (
                None if pending is None else _Pending(pending.reading, pending.opened, pending.since)
            )
        else:
            pending = self._pending
            snapshot = None if pending is None else _Pending(pending.reading, pending.opened, pending.since)
            self._instant = (now, self.released, self.primed, snapshot)
        if not self.primed:
            self.primed = True
            self.released = reading
            return
        if _state(reading) == _state(self.released):
            self.released = reading  # same state; a different rule may have matched
            self._pending = None
            return
        if not needs_debounce(self.released, reading):
            self.released = reading
            self._pending = None
            return
        p = self._pending
        if p is None:
            self._pending = _Pending(reading, now, now)
        elif _state(p.reading) == _state(reading):
            p.reading = reading
        else:
            self._pending = _Pending(reading, p.opened, now)
