"""Which results were already told: a left-over result that shows again is not news.

A pane's `done` or `error` is reported once, by its program, and stays (P7501-8, RI-5):
a shell's `done` outlives the commands it runs next, a program's result outlives the
program. When something else shows for a while (a command's own `working`) and then
ends, the same result shows again: a change *into* done that told nobody anything new.
A result is known by when it was reported: the newest `updated` of the pane's records
in that state. Results the screen reads (no record) are always new, as before.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from paneboard_protocol.pane import State
from paneboard_protocol.records import RESULT_STATES

#: panes remembered at most (panes that leave are forgotten; this bounds the rest)
MAX_PANES = 100_000


def result_at(state: State | None, records: Iterable[Mapping[str, Any]] | None) -> float | None:
    """When the result the pane shows was reported: the newest of its records in that
    state; None when it shows no result or no record says it."""
    if state not in RESULT_STATES or not records:
        return None
    times = [
        r["updated"]
        for r in records
        if r.get("state") == state
        and isinstance(r.get("updated"), int | float)
        and not isinstance(r.get("updated"), bool)
    ]
    return float(max(times)) if times else None


class ToldResults:
    """Per pane, the time of the last result shown (so told, when it was a change)."""

    def __init__(self, limit: int = MAX_PANES) -> None:
        self._limit = limit
        self._at: dict[str, float] = {}

    def again(self, pane_id: str, state: State | None, records: Iterable[Mapping[str, Any]] | None) -> bool:
        """True when the pane shows a result already shown before (never notify again);
        otherwise remembers the one it shows now."""
        at = result_at(state, records)
        if at is None:
            return False
        before = self._at.get(pane_id)
        if before is not None and at <= before:
            return True
        if len(self._at) >= self._limit and pane_id not in self._at:
            self._at.clear()
        self._at[pane_id] = at
        return False

    def forget(self, pane_id: str) -> None:
        """The pane left."""
        self._at.pop(pane_id, None)
