"""THINKTERM_AGENT contract freshness (TA-12, TA-13, TA-14, RI-4), as pure functions.

The contract itself is stored in the evidence dict as plain data; what needs care is
*time*: a non-idle contract with a `ts` loses authority 6 hours after `ts` (an age of
exactly 21,600 s is still fresh) or while `ts` lies more than 300 s in the future
(a fast clock must not keep a report fresh forever). Idle contracts and contracts
without `ts` never go stale (TA-14). The server calls these with its own clock.
"""

from __future__ import annotations

import math
from typing import Any

MAX_AGE = 21_600.0
"""TA-12 / RI-4: six hours; an age of exactly this is still fresh."""

MAX_AHEAD = 300.0
"""TA-12 / RI-4: a `ts` more than five minutes ahead is stale."""


def subject_to_staleness(contract: dict[str, Any]) -> bool:
    """RI-4: only non-idle contracts with a parseable `ts` can go stale (TA-14)."""
    return contract.get("ts") is not None and contract.get("state") != "idle"


def is_fresh(contract: dict[str, Any], now: float) -> bool:
    """TA-12: is the contract authoritative at `now`?"""
    if not subject_to_staleness(contract):
        return True
    ts = float(contract["ts"])
    return (now - ts) <= MAX_AGE and (ts - now) <= MAX_AHEAD


def staleness_instants(contract: dict[str, Any]) -> list[float]:
    """The instants at which `is_fresh` flips: the first stale instant after the 6-hour
    window, and the instant a future `ts` comes within 300 s."""
    if not subject_to_staleness(contract):
        return []
    ts = float(contract["ts"])
    return [math.nextafter(ts + MAX_AGE, math.inf), ts - MAX_AHEAD]


def next_instant(contract: dict[str, Any] | None, now: float) -> float | None:
    """The first staleness instant strictly after `now`, if any."""
    if contract is None:
        return None
    later = [t for t in staleness_instants(contract) if t > now]
    return min(later) if later else None
