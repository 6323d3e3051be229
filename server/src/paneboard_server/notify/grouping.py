"""Bursts told once: changes that arrive together become one message.

Fifteen agents blocking within a few seconds (a test run, a collector reconnecting)
would buzz a phone fifteen times. The first change is told at once (a person waiting
on a prompt should not wait for a burst that may never come); what follows within
`group_window` seconds is folded into it when the window closes: each device's push
is replaced under the tag its first one had, quietly (no second buzz), and each
Apprise route gets one further message for the lot, "15 agents waiting: …" (reason
`grouped`). `Window` remembers what each route was told in the current window.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from paneboard_protocol.pane import State

from .events import StateChange

LINES_MAX = 8  # panes named in a grouped message; the rest are counted
#: how a grouped message's title words each state it counts, in its order
_SAID: tuple[tuple[State, str], ...] = (("blocked", "waiting"), ("error", "failed"), ("done", "done"))


def reason_of(change: StateChange) -> str:
    """The log's reason for one change told by itself."""
    return "block" if change.state == "blocked" else (change.state or "change")


def group_title(changes: list[StateChange]) -> str:
    n = len(changes)
    states = Counter(c.state for c in changes)
    if states.get("blocked") == n:
        return f"{n} agents waiting"
    if states.get("done") == n:
        return f"{n} agents done"
    parts = [f"{states[s]} {w}" for s, w in _SAID if states.get(s)]
    return f"{n} agents need you: " + ", ".join(parts)


def group_body(changes: list[StateChange]) -> str:
    lines = []
    for c in changes[:LINES_MAX]:
        what = f" ({c.kind})" if c.kind and c.state == "blocked" else ""
        msg = f": {c.msg[:80]}" if c.msg else ""
        lines.append(f"{c.agent or 'shell'} {c.state}{what} · {c.host} {c.session}:{c.window}{msg}")
    if len(changes) > LINES_MAX:
        lines.append(f"… and {len(changes) - LINES_MAX} more")
    return "\n".join(lines)


def latest_per_pane(changes: list[StateChange]) -> list[StateChange]:
    """Each pane once, as its latest change, in the order panes first came: a pane that
    blocked again within the window is one pane waiting, on its newest question."""
    latest: dict[str, StateChange] = {}
    for c in changes:
        latest[c.pane_id] = c  # a dict keeps the key's first place
    return list(latest.values())


def group_text(changes: list[StateChange]) -> tuple[str, str]:
    """("15 agents waiting", one line per pane): a grouped message's title and body."""
    return group_title(changes), group_body(changes)


@dataclass(frozen=True, slots=True)
class Told:
    """What one device heard in the current window: the tag its notification has (a
    fold-in replaces it under the same tag) and the changes it named."""

    tag: str
    changes: tuple[StateChange, ...]


@dataclass(slots=True)
class Window:
    """One grouping window: what each route has been told since its first change."""

    channels: dict[str, list[StateChange]] = field(default_factory=dict)  # Apprise URL ->
    devices: dict[str, Told] = field(default_factory=dict)  # push endpoint ->
