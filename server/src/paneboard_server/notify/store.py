"""The notification tables (in `paneboard_server.store.schema`): VAPID keys, push
subscriptions, quiet rules, per-viewer settings and the notification log.

Quiet rules reuse one table: scope `pane`/`host`/`agent` are mutes (shared,
`viewer_id` NULL), scope `global` is do-not-disturb. Quiet hours are per viewer, in
`viewers.settings["quiet_hours"]`.
"""

from __future__ import annotations

import time
from typing import Any

from sqlalchemy import delete, insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncEngine

from ..store import schema as s
from .quiet import SCOPES, Dnd, Mute, QuietHours, parse_hhmm
from .vapid import VapidKeys
from .webpush import Subscription

LOG_DETAIL_MAX = 500


async def vapid_keys(engine: AsyncEngine, subject: str) -> VapidKeys:
    """The server's VAPID keys, made on first call and kept for good."""
    async with engine.begin() as conn:
        row = (await conn.execute(select(s.vapid_keys).order_by(s.vapid_keys.c.id).limit(1))).first()
        if row is not None:
            return VapidKeys(private_pem=row.private_pem, public_key=row.public_b64)
        keys = VapidKeys.generate()
        await conn.execute(
            insert(s.vapid_keys).values(
                private_pem=keys.private_pem,
                public_b64=keys.public_key,
                subject=subject,
                created_at=time.time(),
            )
        )
    # Two processes racing on a fresh database: the lowest id wins for both.
    async with engine.connect() as conn:
        row = (await conn.execute(select(s.vapid_keys).order_by(s.vapid_keys.c.id).limit(1))).one()
    return VapidKeys(private_pem=row.private_pem, public_key=row.public_b64)


async def add_subscription(engine: AsyncEngine, viewer_id: int | None, sub: Subscription) -> None:
    """Insert or re-own a subscription (the endpoint is unique)."""
    async with engine.begin() as conn:
        found = (
            await conn.execute(
                select(s.push_subscriptions.c.id).where(s.push_subscriptions.c.endpoint == sub.endpoint)
            )
        ).first()
        values = {"viewer_id": viewer_id, "p256dh": sub.p256dh, "auth": sub.auth}
        if found:
            await conn.execute(
                update(s.push_subscriptions).where(s.push_subscriptions.c.id == found.id).values(**values)
            )
        else:
            await conn.execute(
                insert(s.push_subscriptions).values(endpoint=sub.endpoint, created_at=time.time(), **values)
            )


async def remove_subscription(engine: AsyncEngine, endpoint: str, viewer_id: int | None = None) -> int:
    q = delete(s.push_subscriptions).where(s.push_subscriptions.c.endpoint == endpoint)
    if viewer_id is not None:
        q = q.where(s.push_subscriptions.c.viewer_id == viewer_id)
    async with engine.begin() as conn:
        return (await conn.execute(q)).rowcount or 0


async def subscriptions(engine: AsyncEngine) -> list[tuple[int | None, Subscription]]:
    async with engine.connect() as conn:
        rows = (await conn.execute(select(s.push_subscriptions))).all()
    return [(r.viewer_id, Subscription(r.endpoint, r.p256dh, r.auth)) for r in rows]


async def mark_push_ok(engine: AsyncEngine, endpoint: str) -> None:
    async with engine.begin() as conn:
        await conn.execute(
            update(s.push_subscriptions)
            .where(s.push_subscriptions.c.endpoint == endpoint)
            .values(last_ok=time.time())
        )


async def quiet_state(engine: AsyncEngine, now: float) -> tuple[Dnd | None, list[Mute]]:
    """Active shared rules; expired ones are deleted on the way (they never come back)."""
    async with engine.begin() as conn:
        await conn.execute(
            delete(s.quiet_rules).where(s.quiet_rules.c.until.is_not(None), s.quiet_rules.c.until <= now)
        )
        rows = (await conn.execute(select(s.quiet_rules).order_by(s.quiet_rules.c.id))).all()
    dnd: Dnd | None = None
    mutes: list[Mute] = []
    for r in rows:
        if r.scope == "global":
            dnd = Dnd(True, r.until)
        elif r.scope in SCOPES:
            mutes.append(Mute(r.id, r.scope, r.value or "", r.until))
    return dnd, mutes


async def add_mute(engine: AsyncEngine, scope: str, value: str, until: float | None) -> int:
    if scope not in SCOPES:
        raise ValueError(f"scope must be one of {', '.join(SCOPES)}")
    async with engine.begin() as conn:
        res = await conn.execute(
            insert(s.quiet_rules).values(scope=scope, value=value, until=until, created_at=time.time())
        )
        key = res.inserted_primary_key
        assert key is not None  # an insert into a table with a primary key
        return int(key[0])


async def remove_mute(engine: AsyncEngine, rule_id: int) -> int:
    async with engine.begin() as conn:
        res = await conn.execute(
            delete(s.quiet_rules).where(s.quiet_rules.c.id == rule_id, s.quiet_rules.c.scope != "global")
        )
        return res.rowcount or 0


async def set_dnd(engine: AsyncEngine, on: bool, until: float | None) -> None:
    async with engine.begin() as conn:
        await conn.execute(delete(s.quiet_rules).where(s.quiet_rules.c.scope == "global"))
        if on:
            await conn.execute(
                insert(s.quiet_rules).values(scope="global", value=None, until=until, created_at=time.time())
            )


async def viewer_settings(engine: AsyncEngine, viewer_id: int) -> dict[str, Any]:
    async with engine.connect() as conn:
        row = (await conn.execute(select(s.viewers.c.settings).where(s.viewers.c.id == viewer_id))).first()
    return dict(row.settings or {}) if row else {}


async def set_quiet_hours(engine: AsyncEngine, viewer_id: int, hours: QuietHours | None) -> None:
    settings = await viewer_settings(engine, viewer_id)
    if hours is None:
        settings.pop("quiet_hours", None)
    else:
        settings["quiet_hours"] = hours.to_json()
    async with engine.begin() as conn:
        await conn.execute(update(s.viewers).where(s.viewers.c.id == viewer_id).values(settings=settings))


def hours_from_settings(settings: dict[str, Any]) -> QuietHours | None:
    q = settings.get("quiet_hours")
    if not isinstance(q, dict):
        return None
    try:
        return QuietHours(parse_hhmm(q["start"]), parse_hhmm(q["end"]), q.get("tz"))
    except (KeyError, ValueError, TypeError):
        return None


async def all_quiet_hours(engine: AsyncEngine) -> dict[int, QuietHours]:
    async with engine.connect() as conn:
        rows = (await conn.execute(select(s.viewers.c.id, s.viewers.c.settings))).all()
    out: dict[int, QuietHours] = {}
    for r in rows:
        h = hours_from_settings(dict(r.settings or {}))
        if h:
            out[r.id] = h
    return out


async def log(
    engine: AsyncEngine,
    pane_id: int | None,
    channel: str,
    state: str | None,
    ok: bool,
    detail: str = "",
    *,
    reason: str | None = None,
    wait_id: int | None = None,
    t: float | None = None,
) -> None:
    """One notification sent (or tried): where, about what, and why (`reason`: block,
    done, error, escalation, grouped, test)."""
    row = {
        "channel": channel[:255],
        "state": state,
        "t": time.time() if t is None else t,
        "ok": ok,
        "detail": detail[:LOG_DETAIL_MAX],
        "reason": reason,
        "wait_id": wait_id,
    }
    try:
        async with engine.begin() as conn:
            await conn.execute(insert(s.notification_log).values(pane_id=pane_id, **row))
    except IntegrityError:  # the pane was removed meanwhile: keep the entry, unlinked
        async with engine.begin() as conn:
            await conn.execute(insert(s.notification_log).values(pane_id=None, **row))


async def recent_log(
    engine: AsyncEngine, limit: int = 100, before: int | None = None
) -> list[dict[str, Any]]:
    """The newest notifications first: what went where, and why."""
    nl = s.notification_log
    q = select(nl).order_by(nl.c.id.desc()).limit(limit)
    if before is not None:
        q = q.where(nl.c.id < before)
    async with engine.connect() as conn:
        return [dict(r._mapping) for r in (await conn.execute(q)).all()]


async def escalated(engine: AsyncEngine, wait_id: int, channel: str) -> bool:
    """Has this wait been escalated to this channel already (before a restart, too)?"""
    nl = s.notification_log
    q = select(nl.c.id).where(nl.c.wait_id == wait_id, nl.c.reason == "escalation", nl.c.channel == channel)
    async with engine.connect() as conn:
        return (await conn.execute(q.limit(1))).first() is not None
