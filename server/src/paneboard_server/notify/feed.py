"""The notifier fed from the writer: each committed pane change, and the waiting count.

`feed(svc, core)` adds the core's change listener (run by the writer after every
commit) that tells the notifier of each change into a new state, and gives the
notifier the count of blocked panes its pushes carry as the app badge.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .events import StateChange
from .results import ToldResults
from .service import NotifyService

if TYPE_CHECKING:
    from ..panes import Change, Core


def _on_changes(svc: NotifyService, told: ToldResults, changes: list[Change]) -> None:
    """Core's change listener: each committed pane change, with its previous state."""
    for c in changes:
        p = c.pane
        if p is None:
            told.forget(str(c.pane_id))
            continue  # a pane leaving: nothing new to tell
        if c.reason == "refresh":
            continue  # a re-send of what we had
        prev = c.prev_state
        if told.again(str(p.id), p.state, p.records):
            prev = p.state  # a result shown before, showing again: never news
        if not svc.wants(p.state, prev):
            continue
        svc.pane_changed(
            StateChange(
                pane_id=str(p.id),
                host=p.host or "",
                session=p.session or "",
                window=p.window or "",
                agent=p.agent,
                state=p.state,
                prev_state=prev,
                kind=p.kind,
                msg=p.msg,
                t=float(p.since or 0.0),
            )
        )


def feed(svc: NotifyService, core: Core) -> None:
    told = ToldResults()
    core.listeners.append(lambda changes: _on_changes(svc, told, changes))
    svc.waiting = lambda: sum(1 for p in core.panes.values() if p.state == "blocked" and p.gone_at is None)
