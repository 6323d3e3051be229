"""The notification tables (in `paneboard_server.store.schema`): VAPID keys, push
subscriptions, quiet rules, per-viewer settings and the notification log.

Quiet rules reuse one table: scope `pane`/`host`/`agent` are mutes (everyone's with
`viewer_id` NULL, else that login's own), scope `global` is do-not-disturb for
everyone. Quiet hours are per viewer, in `viewers.settings["quiet_hours"]`.
"""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import urlsplit

from sqlalchemy import delete, func, insert, or_, select, update
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


class SubscriptionRefused(ValueError):
    """A subscription the server will not keep; the message says why (shown to the user)."""


async def add_subscription(
    engine: AsyncEngine, viewer_id: int, sub: Subscription, *, cap: int = 10, device: str | None = None
) -> None:
    """Insert a subscription, or refresh the keys of one this viewer already has.

    An endpoint belongs to the account that registered it: another account sending the
    same URL is refused, not handed the device's pushes (the endpoint is the device's
    address at its push service; a browser changing accounts unsubscribes and gets a new
    one). At most `cap` subscriptions per account, so one login cannot make the server
    push to thousands of URLs per change.
    """
    ps = s.push_subscriptions
    values = {"p256dh": sub.p256dh, "auth": sub.auth, "device": (device or None) and device[:128]}
    async with engine.begin() as conn:
        found = (
            await conn.execute(select(ps.c.id, ps.c.viewer_id).where(ps.c.endpoint == sub.endpoint))
        ).first()
        if found is not None:
            if found.viewer_id != viewer_id:
                raise SubscriptionRefused("this push endpoint is registered to another account")
            await conn.execute(update(ps).where(ps.c.id == found.id).values(**values))
            return
        have = (
            await conn.execute(select(func.count()).select_from(ps).where(ps.c.viewer_id == viewer_id))
        ).scalar_one()
        if have >= cap:
            raise SubscriptionRefused(
                f"this account has {have} push devices, the most allowed; remove one in the settings first"
            )
        try:
            await conn.execute(
                insert(ps).values(
                    endpoint=sub.endpoint, viewer_id=viewer_id, created_at=time.time(), **values
                )
            )
        except IntegrityError as exc:  # the same endpoint registered meanwhile by someone
            raise SubscriptionRefused("this push endpoint is registered to another account") from exc


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


async def operator_ids(engine: AsyncEngine, *, with_devices: bool = False) -> set[int]:
    """The accounts with the operator role (only their devices are offered answers in a
    push); `with_devices`: only those with a push subscription."""
    q = select(s.viewers.c.id).where(s.viewers.c.operator.is_(True))
    if with_devices:
        ps = s.push_subscriptions
        q = q.where(s.viewers.c.id.in_(select(ps.c.viewer_id).where(ps.c.viewer_id.is_not(None))))
    async with engine.connect() as conn:
        return {r.id for r in (await conn.execute(q)).all()}


async def own_subscriptions(engine: AsyncEngine, viewer_id: int) -> list[tuple[int, Subscription]]:
    """One account's subscriptions with their row ids (the test button says which got it)."""
    ps = s.push_subscriptions
    q = select(ps).where(ps.c.viewer_id == viewer_id).order_by(ps.c.id)
    async with engine.connect() as conn:
        rows = (await conn.execute(q)).all()
    return [(r.id, Subscription(r.endpoint, r.p256dh, r.auth)) for r in rows]


async def mark_push_ok(engine: AsyncEngine, endpoint: str, t: float | None = None) -> None:
    async with engine.begin() as conn:
        await conn.execute(
            update(s.push_subscriptions)
            .where(s.push_subscriptions.c.endpoint == endpoint)
            .values(last_ok=time.time() if t is None else t)
        )


async def mark_push_failed(engine: AsyncEngine, endpoint: str, why: str, t: float | None = None) -> None:
    async with engine.begin() as conn:
        await conn.execute(
            update(s.push_subscriptions)
            .where(s.push_subscriptions.c.endpoint == endpoint)
            .values(last_fail=time.time() if t is None else t, last_error=why[:255])
        )


async def devices(engine: AsyncEngine, viewer_id: int) -> list[dict[str, Any]]:
    """One account's push devices for its settings panel: never the endpoint's path (the
    device's secret address), only its push service's host."""
    ps = s.push_subscriptions
    q = select(ps).where(ps.c.viewer_id == viewer_id).order_by(ps.c.id)
    async with engine.connect() as conn:
        rows = (await conn.execute(q)).all()
    return [
        {
            "id": r.id,
            "service": urlsplit(r.endpoint).hostname or "",
            "device": r.device,
            "created_at": r.created_at,
            "last_ok": r.last_ok,
            "last_fail": r.last_fail,
            "last_error": r.last_error,
        }
        for r in rows
    ]


async def quiet_state(engine: AsyncEngine, now: float) -> tuple[Dnd | None, list[Mute]]:
    """Active rules, every login's own mutes among them (`Mute.viewer_id`); expired ones
    are deleted on the way (they never come back)."""
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
            mutes.append(Mute(r.id, r.scope, r.value or "", r.until, r.viewer_id))
    return dnd, mutes


async def add_mute(
    engine: AsyncEngine, scope: str, value: str, until: float | None, viewer_id: int | None = None
) -> int:
    """A mute for everyone (`viewer_id` None) or one login's own."""
    if scope not in SCOPES:
        raise ValueError(f"scope must be one of {', '.join(SCOPES)}")
    async with engine.begin() as conn:
        res = await conn.execute(
            insert(s.quiet_rules).values(
                scope=scope, value=value, until=until, created_at=time.time(), viewer_id=viewer_id
            )
        )
        key = res.inserted_primary_key
        assert key is not None  # an insert into a table with a primary key
        return int(key[0])


async def mute_owner(engine: AsyncEngine, rule_id: int) -> tuple[bool, int | None]:
    """(whether mute `rule_id` exists, whose it is: None for everyone's)."""
    async with engine.connect() as conn:
        row = (
            await conn.execute(
                select(s.quiet_rules.c.viewer_id).where(
                    s.quiet_rules.c.id == rule_id, s.quiet_rules.c.scope != "global"
                )
            )
        ).first()
    return (False, None) if row is None else (True, row.viewer_id)


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


async def set_own_dnd(engine: AsyncEngine, viewer_id: int, on: bool, until: float | None) -> None:
    """One viewer's own do-not-disturb (their pushes and pages only), in their settings."""
    settings = await viewer_settings(engine, viewer_id)
    if on:
        settings["dnd"] = {"until": until}
    else:
        settings.pop("dnd", None)
    async with engine.begin() as conn:
        await conn.execute(update(s.viewers).where(s.viewers.c.id == viewer_id).values(settings=settings))


def own_dnd_from_settings(settings: dict[str, Any]) -> Dnd | None:
    d = settings.get("dnd")
    if not isinstance(d, dict):
        return None
    until = d.get("until")
    return Dnd(True, float(until)) if isinstance(until, (int, float)) else Dnd(True, None)


async def all_own_dnd(engine: AsyncEngine, now: float) -> set[int]:
    """The viewers whose own do-not-disturb is on now."""
    async with engine.connect() as conn:
        rows = (await conn.execute(select(s.viewers.c.id, s.viewers.c.settings))).all()
    out = set()
    for r in rows:
        d = own_dnd_from_settings(dict(r.settings or {}))
        if d is not None and d.active(now):
            out.add(r.id)
    return out


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
    owner: str | None = None,
) -> None:
    """One notification sent (or tried): where, about what, and why (`reason`: block,
    done, error, escalation, grouped, test); `owner`: whose delivery it is (None for a
    server-wide channel)."""
    row = {
        "channel": channel[:255],
        "state": state,
        "t": time.time() if t is None else t,
        "ok": ok,
        "detail": detail[:LOG_DETAIL_MAX],
        "reason": reason,
        "wait_id": wait_id,
        "owner": owner[:64] if owner else None,
    }
    try:
        async with engine.begin() as conn:
            await conn.execute(insert(s.notification_log).values(pane_id=pane_id, **row))
    except IntegrityError:  # the pane was removed meanwhile: keep the entry, unlinked
        async with engine.begin() as conn:
            await conn.execute(insert(s.notification_log).values(pane_id=None, **row))


async def recent_log(
    engine: AsyncEngine, limit: int = 100, before: int | None = None, *, owner: str | None = None
) -> list[dict[str, Any]]:
    """The newest notifications first: what went where, and why. With `owner` (always,
    for a request): the server-wide channels' entries and that owner's own deliveries,
    never another viewer's (a push entry tells whose device was told what, and how its
    push service answered). Without: every entry (the server's own reading)."""
    nl = s.notification_log
    q = select(nl).order_by(nl.c.id.desc()).limit(limit)
    if owner is not None:
        q = q.where(or_(nl.c.owner.is_(None), nl.c.owner == owner))
    if before is not None:
        q = q.where(nl.c.id < before)
    async with engine.connect() as conn:
        rows = [dict(r._mapping) for r in (await conn.execute(q)).all()]
    for r in rows:
        r.pop("owner", None)
    return rows


async def escalated(engine: AsyncEngine, wait_id: int, channel: str) -> bool:
    """Has this wait been escalated to this channel already (before a restart, too)?"""
    nl = s.notification_log
    q = select(nl.c.id).where(nl.c.wait_id == wait_id, nl.c.reason == "escalation", nl.c.channel == channel)
    async with engine.connect() as conn:
        return (await conn.execute(q.limit(1))).first() is not None
