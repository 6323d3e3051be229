"""Escalation: a block still unanswered after a route's `escalate_after` seconds is
told to a second route (`escalate_to`), once, saying how long it has waited and where.

The blocks come from the ledger (`waits` rows still open), so a server restart neither
forgets a block nor escalates it twice: each escalation is written to the notification
log with its `wait_id`, and a wait already there for that route is not told again.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from ..store import schema as s
from .events import StateChange
from .routing import Channel


@dataclass(frozen=True, slots=True)
class Due:
    """One block to escalate: from `route` (whose threshold it passed) to `target`."""

    route: Channel
    target: Channel
    wait: Any  # the `waits` row
    change: StateChange


def minutes(seconds: float) -> str:
    m = int(seconds // 60)
    if m < 60:
        return f"{max(1, m)} min"
    return f"{m // 60} h {m % 60:02d} min"


def as_change(w: Any) -> StateChange:
    """A ledger row in the shape routes and quiet rules judge."""
    return StateChange(
        pane_id=str(w.pane_id) if w.pane_id is not None else "",
        host=w.host,
        session=w.session or "",
        window=w.pane,
        agent=w.agent,
        state="blocked",
        prev_state=None,
        kind=w.kind,
        msg=w.msg,
        t=w.start_t,
    )


async def due(engine: AsyncEngine, channels: list[Channel], now: float) -> list[Due]:
    """Every (route, open block) past the route's threshold, not yet escalated."""
    routes = [c for c in channels if c.escalate_after is not None and c.escalate_to is not None]
    if not routes:
        return []
    by_name = {c.name: c for c in channels if c.name}
    oldest = now - min(c.escalate_after or 0 for c in routes)
    W = s.waits
    async with engine.connect() as conn:
        waits = (
            await conn.execute(
                select(W).where(W.c.state == "blocked", W.c.end_t.is_(None), W.c.start_t <= oldest)
            )
        ).all()
        if not waits:
            return []
        nl = s.notification_log
        told = {
            (r.wait_id, r.channel)
            for r in (
                await conn.execute(
                    select(nl.c.wait_id, nl.c.channel).where(
                        nl.c.reason == "escalation", nl.c.wait_id.in_([w.id for w in waits])
                    )
                )
            ).all()
        }
    out = []
    for w in waits:
        change = as_change(w)
        for r in routes:
            target = by_name[r.escalate_to or ""]
            if now - w.start_t < (r.escalate_after or 0) or not r.wants(change):
                continue
            if (w.id, channel_key(target)) in told:
                continue
            told.add((w.id, channel_key(target)))  # two routes escalating to one target: once
            out.append(Due(r, target, w, change))
    return out


def channel_key(c: Channel) -> str:
    """The notification log's name of a channel."""
    return f"apprise:{c.label}"


def message(d: Due, now: float) -> tuple[str, str]:
    """ "⏰ claude waiting 12 min (permission)", then what it asks and where."""
    w = d.wait
    waited = minutes(now - w.start_t)
    kind = f" ({w.kind})" if w.kind else ""
    since = datetime.fromtimestamp(w.start_t, UTC).strftime("%H:%M UTC")
    where = f"{w.host} · {w.session or '?'} {w.pane}"
    lines = [
        f"{w.agent or 'shell'} has waited {waited} for an answer, since {since}.",
        *([w.msg[:300]] if w.msg else []),
        where,
        f"(unanswered past {minutes(d.route.escalate_after or 0)} on {d.route.label})",
    ]
    return f"⏰ {w.agent or 'shell'} waiting {waited}{kind}", "\n".join(lines)
