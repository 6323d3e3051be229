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
        if c.gone:
            told.forget(str(c.pane["id"]))
            continue  # a pane leaving: nothing new to tell
        if c.reason == "refresh":
            continue  # a re-send of what we had
        p = c.pane
        prev = c.prev_state
        if told.again(str(p["id"]), p.get("state"), p.get("records")):
            prev = p.get("state")  # a result shown before, showing again: never news
        if not svc.wants(p.get("state"), prev):
            continue
        svc.pane_changed(
            StateChange(
                pane_id=str(p["id"]),
                host=str(p.get("host") or ""),
                session=str(p.get("session") or ""),
                window=str(p.get("window") or ""),
                agent=p.get("agent"),
                state=p.get("state"),
                prev_state=prev,
                kind=p.get("kind"),
                msg=p.get("msg"),
                t=float(p.get("since") or 0.0),
            )
        )


def feed(svc: NotifyService, core: Core) -> None:
    told = ToldResults()
    core.listeners.append(lambda changes: _on_changes(svc, told, changes))
    svc.waiting = lambda: sum(1 for p in core.panes.values() if p.state == "blocked" and p.gone_at is None)
