"""Bursts told once: changes that arrive together become one message.

Fifteen agents blocking within a few seconds (a test run, a collector reconnecting)
would buzz a phone fifteen times; the notifier waits `group_window` seconds after the
first change, then tells each route what it wants of the lot: one change as itself,
several as "15 agents waiting: …" (reason `grouped`).
"""

from __future__ import annotations

from collections import Counter

from .events import StateChange

LINES_MAX = 8  # panes named in a grouped message; the rest are counted


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
    parts = [
        f"{states[s]} {w}"
        for s, w in (("blocked", "waiting"), ("error", "failed"), ("done", "done"))
        if states.get(s)
    ]
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


def group_text(changes: list[StateChange]) -> tuple[str, str]:
    """("15 agents waiting", one line per pane): a grouped message's title and body."""
    return group_title(changes), group_body(changes)
