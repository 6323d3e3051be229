"""HTTP routes for notifications: Web Push subscription, tab watch heartbeats, quiet
rules (mutes, DND, quiet hours) and the channels' test button.

Auth comes from the server's dependencies: reads need a viewer (cookie or token),
changes need a logged-in, non-read-only viewer with the CSRF header -- except
`POST /api/watch`, which a read-only wall screen may send too (it changes nothing
stored, it only says "this tab is looking").
"""

from __future__ import annotations

import time
from typing import Annotated, Literal

from fastapi import APIRouter, Depends, HTTPException, Path, Query, Response
from pydantic import BaseModel, ConfigDict, Field, StrictBool

from ..auth import Principal
from ..notify import Notable, NotifyService, QuietHours, Subscription, check_endpoint, parse_hhmm, store
from ..services import Svc
from .access import require_viewer, require_writer
from .errors import ID_MAX, READ, WRITE, responses
from .typed import answer, ok
from .views import MuteAdded, NotifyLog, NotifyTested, PushDevices, Quiet, VapidKey

MAX_MINUTES = 60 * 24 * 365


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class WatchBody(_Body):
    tab: str = Field(min_length=1, max_length=64)
    watching: StrictBool
    pane: str | None = Field(default=None, max_length=255)


_B64URL = r"^[A-Za-z0-9_-]+=*$"


class PushKeys(BaseModel):
    """RFC 8291: the browser's P-256 public key and 16-byte secret, base64url."""

    model_config = ConfigDict(extra="ignore")
    p256dh: str = Field(min_length=80, max_length=100, pattern=_B64URL)
    auth: str = Field(min_length=22, max_length=24, pattern=r"^[A-Za-z0-9_-]{22}(==)?$")  # 16 bytes


class SubscriptionBody(BaseModel):
    model_config = ConfigDict(extra="ignore")  # browsers add expirationTime etc.
    endpoint: str = Field(max_length=2048, pattern=r"^https?://[^/?#\s]+")
    keys: PushKeys
    device: str | None = Field(default=None, max_length=128)  # the page's label for this browser


class ShownBody(_Body):
    """A notification the page showed by itself (the browser route)."""

    panes: list[Annotated[str, Field(max_length=64)]] = Field(min_length=1, max_length=100)
    state: Notable | None = None
    reason: Literal["block", "done", "error", "grouped"]


class EndpointBody(_Body):
    endpoint: str = Field(max_length=2048)


class MuteBody(_Body):
    scope: Literal["pane", "host", "agent"]
    value: str = Field(max_length=255)
    minutes: int | None = Field(default=None, gt=0, le=MAX_MINUTES)  # None: until lifted
    # "me": this account's pushes and pages; "everyone": every route (operators only).
    audience: Literal["me", "everyone"] = "me"


class DndBody(_Body):
    on: StrictBool
    minutes: int | None = Field(default=None, gt=0, le=MAX_MINUTES)
    # "me": this account's pushes and pages; "everyone": every route (operators only).
    scope: Literal["me", "everyone"] = "me"


_HHMM = r"^([01]?[0-9]|2[0-3]):[0-5][0-9]$"


class QuietHoursBody(_Body):
    """Both `start` and `end` (HH:MM), or neither (no quiet hours)."""

    model_config = ConfigDict(
        json_schema_extra={
            "anyOf": [
                {"properties": {"start": {"type": "null"}, "end": {"type": "null"}}},
                {
                    "required": ["start", "end"],
                    "properties": {"start": {"type": "string"}, "end": {"type": "string"}},
                },
            ]
        }
    )
    start: str | None = Field(default=None, max_length=5, pattern=_HHMM)
    end: str | None = Field(default=None, max_length=5, pattern=_HHMM)
    tz: str | None = Field(default=None, max_length=64)


def service(running: Svc) -> NotifyService:
    """The notifier of the running server (503 while it is not running: `services`)."""
    return running.notify


def _viewer_key(p: Principal) -> str:
    return f"{'viewer' if p.kind == 'viewer' else p.kind}:{p.id}"


def _account(p: Principal) -> int:
    """Stored settings belong to accounts; a wall screen's token has none."""
    if p.kind != "viewer" or p.readonly:
        raise HTTPException(403, "log in with an account to change notification settings")
    return p.id


Reader = Annotated[Principal, Depends(require_viewer)]
Writer = Annotated[Principal, Depends(require_writer)]  # logged in, CSRF header checked
Notifier = Annotated[NotifyService, Depends(service)]


def make_router() -> APIRouter:
    """The notification routes; app.py includes them before the static files' mount."""
    # Every route needs the notification service: 503 while it is not running.
    r = APIRouter(tags=["notifications"], responses=responses(503))
    # Settings belong to accounts: a wall screen's token (read-only) is refused them (403).
    mine = responses(
        *WRITE,
        e403="Read-only credentials (a viewer token), no or a wrong CSRF header, or a cross-origin request",
    )

    @r.get("/api/push/vapid-public-key", responses={**ok(VapidKey, "The key"), **responses(*READ)})
    async def vapid_public_key(_: Reader, svc: Notifier) -> Response:
        assert svc.keys is not None
        return answer(VapidKey(svc.keys.public_key))

    @r.post(
        "/api/push/subscribe",
        status_code=204,
        responses={
            **mine,
            **responses(
                409,
                422,
                e409="This account has `push_max_per_user` devices already",
                e422="Not a Web Push subscription, or one the server may not send to: the keys are not "
                "a P-256 key and a 16-byte secret, or the endpoint is not https or its host does not "
                "resolve to public addresses (`detail` says which)",
            ),
        },
    )
    async def push_subscribe(body: SubscriptionBody, who: Writer, svc: Notifier) -> Response:
        viewer_id = _account(who)
        try:
            sub = Subscription.from_json(body.model_dump())
            await check_endpoint(sub.endpoint, svc.settings.push_allow_local)
        except ValueError as e:  # TargetRefused included
            raise HTTPException(422, str(e)) from e
        try:
            await store.add_subscription(
                svc.engine, viewer_id, sub, cap=svc.settings.push_max_per_user, device=body.device
            )
        except store.SubscriptionRefused as e:
            raise HTTPException(409, str(e)) from e
        svc.operator_devices = svc.operator_devices or who.operator
        return Response(status_code=204)

    @r.get("/api/push/devices", responses={**ok(PushDevices, "This account's devices"), **responses(*READ)})
    async def push_devices(who: Reader, svc: Notifier) -> Response:
        """This account's push devices, each with its last delivery and last failure
        (the settings panel); a viewer token has none."""
        if who.kind != "viewer" or who.readonly:
            return answer({"devices": []})
        return answer({"devices": await store.devices(svc.engine, who.id)})

    @r.delete("/api/push/subscribe", status_code=204, responses=mine)
    async def push_unsubscribe(body: EndpointBody, who: Writer, svc: Notifier) -> Response:
        await store.remove_subscription(svc.engine, body.endpoint, _account(who))
        return Response(status_code=204)

    @r.post("/api/watch", status_code=204, responses=responses(400, 413, *READ))
    async def watch(body: WatchBody, who: Reader, svc: Notifier) -> Response:
        svc.tab_report(_viewer_key(who), body.tab, body.watching)
        return Response(status_code=204)

    @r.post(
        "/api/notify/shown",
        status_code=204,
        responses=responses(400, 413, *READ, e429="More reports than this viewer's token bucket allows"),
    )
    async def shown(body: ShownBody, who: Reader, svc: Notifier) -> Response:
        # A wall screen (read-only) shows notifications too; this only adds a log line,
        # and a token bucket per viewer bounds how many.
        if not svc.page_log_allowed(_viewer_key(who)):
            raise HTTPException(429, "too many notifications reported")
        await svc.record_page(_viewer_key(who), body.panes, body.state, body.reason)
        return Response(status_code=204)

    @r.get("/api/notify/log", responses={**ok(NotifyLog, "The entries, newest first"), **responses(*READ)})
    async def notify_log(
        who: Reader,
        svc: Notifier,
        limit: Annotated[int, Query(ge=1, le=500)] = 100,
        before: Annotated[int | None, Query(ge=-ID_MAX, le=ID_MAX)] = None,
    ) -> Response:
        """Notifications sent, newest first: where (`channel`: browser, webpush,
        apprise:NAME), about what, and why (`reason`: block, done, error, grouped,
        escalation, test). The server-wide channels' entries and the caller's own
        deliveries (its devices' pushes, its pages' notifications), never another's."""
        rows = await store.recent_log(svc.engine, limit, before, owner=_viewer_key(who))
        return answer({"entries": rows})

    @r.get("/api/notify/quiet", responses={**ok(Quiet, "What silences notifications"), **responses(*READ)})
    async def quiet(who: Reader, svc: Notifier) -> Response:
        now = time.time()
        dnd, mutes = await store.quiet_state(svc.engine, now)
        hours = own = None
        if who.kind == "viewer":
            settings = await store.viewer_settings(svc.engine, who.id)
            h = store.hours_from_settings(settings)
            hours = h.to_json() if h else None
            mine = store.own_dnd_from_settings(settings)
            own = mine if mine is not None and mine.active(now) else None
        effective = dnd or own
        return answer(
            {
                # `dnd`: whether this viewer is in do-not-disturb at all (the page's own
                # notifications follow it); `dnd_everyone` / `dnd_mine`: which switch.
                "dnd": {"until": effective.until} if effective else None,
                "dnd_everyone": {"until": dnd.until} if dnd else None,
                "dnd_mine": {"until": own.until} if own else None,
                "operator": who.operator,
                # everyone's mutes and the caller's own, each saying whose it is
                "mutes": [
                    {
                        "id": m.id,
                        "scope": m.scope,
                        "value": m.value,
                        "until": m.until,
                        "audience": "everyone" if m.everyone else "me",
                    }
                    for m in mutes
                    if m.everyone or (who.kind == "viewer" and m.viewer_id == who.id)
                ],
                "quiet_hours": hours,
                "channels": [c.label for c in svc.channels],
                "push_done": svc.settings.push_done,
            }
        )

    for_everyone = responses(
        *WRITE,
        e403="Read-only credentials, no or a wrong CSRF header, a cross-origin request, or a "
        "mute for everyone without the operator role",
    )

    @r.post("/api/notify/mutes", responses={**ok(MuteAdded, "The mute's id"), **for_everyone})
    async def add_mute(body: MuteBody, who: Writer, svc: Notifier) -> Response:
        """Mute a pane, host or agent: for this account (`audience: "me"`), or for every
        route and every viewer (`"everyone"`), which only an operator may: one plain user
        must not silence everyone's alerts."""
        viewer_id = _account(who)
        if body.audience == "everyone" and not who.operator:
            raise HTTPException(403, "a mute for everyone needs the operator role")
        until = time.time() + body.minutes * 60 if body.minutes else None
        owner = None if body.audience == "everyone" else viewer_id
        return answer(MuteAdded(await store.add_mute(svc.engine, body.scope, body.value, until, owner)))

    @r.delete("/api/notify/mutes/{rule_id}", status_code=204, responses={**for_everyone, **responses(404)})
    async def lift_mute(
        rule_id: Annotated[int, Path(ge=-ID_MAX, le=ID_MAX)], who: Writer, svc: Notifier
    ) -> Response:
        """Lift one of this account's mutes, or (operators) a mute for everyone."""
        viewer_id = _account(who)
        found, owner = await store.mute_owner(svc.engine, rule_id)
        if not found or (owner is not None and owner != viewer_id):
            raise HTTPException(404, "no such mute")
        if owner is None and not who.operator:
            raise HTTPException(403, "lifting a mute for everyone needs the operator role")
        if not await store.remove_mute(svc.engine, rule_id):
            raise HTTPException(404, "no such mute")
        return Response(status_code=204)

    @r.put(
        "/api/notify/dnd",
        status_code=204,
        responses=responses(
            *WRITE,
            e403="Read-only credentials, no or a wrong CSRF header, a cross-origin request, or "
            "`scope: everyone` without the operator role",
        ),
    )
    async def dnd(body: DndBody, who: Writer, svc: Notifier) -> Response:
        """Do-not-disturb: for this account (`scope: "me"`), or for every route and every
        viewer (`"everyone"`), which only an operator may switch: one plain user must not
        silence everyone's alerts."""
        viewer_id = _account(who)
        until = time.time() + body.minutes * 60 if body.minutes else None
        if body.scope == "me":
            await store.set_own_dnd(svc.engine, viewer_id, body.on, until)
            return Response(status_code=204)
        if not who.operator:
            raise HTTPException(403, "do-not-disturb for everyone needs the operator role")
        await store.set_dnd(svc.engine, body.on, until)
        return Response(status_code=204)

    @r.put("/api/notify/quiet-hours", status_code=204, responses=mine)
    async def quiet_hours(body: QuietHoursBody, who: Writer, svc: Notifier) -> Response:
        viewer_id = _account(who)
        if body.start is None and body.end is None:
            await store.set_quiet_hours(svc.engine, viewer_id, None)
            return Response(status_code=204)
        try:
            hours = QuietHours(parse_hhmm(body.start or ""), parse_hhmm(body.end or ""), body.tz)
        except ValueError as e:
            raise HTTPException(422, str(e)) from e
        await store.set_quiet_hours(svc.engine, viewer_id, hours)
        return Response(status_code=204)

    @r.post("/api/notify/test", responses={**ok(NotifyTested, "What the test reached"), **mine})
    async def test(who: Writer, svc: Notifier) -> Response:
        """Every channel and this account's devices; `devices`: which got it."""
        return answer(await svc.test(_account(who)))

    return r
