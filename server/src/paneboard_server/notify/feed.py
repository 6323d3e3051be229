"""The notifier fed from the writer: each committed pane change, and the waiting count.

`feed(svc, core)` adds the core's change listener (run by the writer after every
commit) that tells the notifier of each change into a new state, and gives the
notifier the count of blocked panes its pushes carry as the app badge.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .events import StateChange
from .service import NotifyService

if TYPE_CHECKING:
    from ..panes import Change, Core


def _on_changes(svc: NotifyService, changes: list[Change]) -> None:
    """Core's change listener: each committed pane change, with its previous state."""
    for c in changes:
        if c.gone or c.reason == "refresh":
            continue  # a pane leaving, or a re-send of what we had: nothing new to tell
        p = c.pane
        if not svc.wants(p.get("state"), c.prev_state):
            continue
        svc.pane_changed(
            StateChange(
                pane_id=str(p["id"]),
                host=str(p.get("host") or ""),
                session=str(p.get("session") or ""),
                window=str(p.get("window") or ""),
                agent=p.get("agent"),
                state=p.get("state"),
                prev_state=c.prev_state,
                kind=p.get("kind"),
                msg=p.get("msg"),
                t=float(p.get("since") or 0.0),
            )
        )


def feed(svc: NotifyService, core: Core) -> None:
    core.listeners.append(lambda changes: _on_changes(svc, changes))
    svc.waiting = lambda: sum(1 for p in core.panes.values() if p.state == "blocked" and p.gone_at is None)
