"""The notifier: takes pane state changes from the server and tells people.

The server calls `NotifyService.pane_changed(change)` for every history row it
writes (never blocking: changes go on a bounded queue, a worker sends). For a change
into blocked, error or done:
- Apprise channels that want it (routing), unless DND or a mute for everyone covers it, each
  rate-limited and de-duplicated per pane+state;
- Web Push to every subscription whose viewer has no tab watching (tabs report via
  `POST /api/watch`), unless DND, a mute (everyone's, or that viewer's own) or that
  viewer's quiet hours say no;
  subscriptions the push service calls gone (404/410) are deleted.
The first change is told at once; changes that follow within `group_window` seconds
of it are folded into it when the window closes (`grouping.py`): each device's push
is replaced under the same tag without a second buzz, each Apprise route gets one
further message for the lot ("15 agents waiting: …"). A block
still open after a channel's `escalate_after` is told once to its `escalate_to`
channel (`escalation.py`). Every attempt lands in `notification_log` with its reason
(block, done, error, grouped, escalation, test; the page's own notifications too).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from paneboard_protocol.pane import State
from sqlalchemy.ext.asyncio import AsyncEngine

from ..notify_config import NotifySettings
from . import apprise_send, escalation, links, store, targets, webpush
from .events import Notable, StateChange, is_notable
from .grouping import Told, Window, group_text, latest_per_pane, reason_of
from .limits import Limiter, TokenBucket
from .quiet import shared_quiet, viewer_quiet
from .routing import Channel
from .settings import settings_and_routes
from .vapid import VapidKeys
from .watch import WatchTracker

if TYPE_CHECKING:
    import aiohttp

    from ..answers import Offers

log = logging.getLogger("paneboard.notify")

QUEUE_MAX = 1000
PUSH_CONCURRENCY = 8


class NotifyService:
    def __init__(
        self,
        engine: AsyncEngine,
        notify_config: NotifySettings | Mapping[str, Any] | None = None,
        *,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], Any] = asyncio.sleep,
        public_url: str | None = None,
    ) -> None:
        self.engine = engine
        # Where people reach the board (`server.public_url`): every message links to the
        # pane's page under it (`links.py`).
        self.public_url = public_url
        self._sleep = sleep
        self.waiting: Callable[[], int] | None = None  # how many panes wait (the app badge)
        # Answers a blocked pane's push offers operators (`answers/offer.py`, set by the
        # app once screens run): `prepare` at the change, `offer` when the push goes out.
        self.offers: Offers | None = None
        # Whether some operator has a push device: only then is a blocked pane's screen
        # fetched for its push (refreshed with every push round, and on subscribing).
        self.operator_devices = False
        self._escalator: asyncio.Task[None] | None = None
        self.settings, self.channels = settings_and_routes(notify_config)
        self.clock = clock
        self.limiter = Limiter(
            per_minute=self.settings.rate_per_minute,
            burst=self.settings.burst,
            dedupe_window=self.settings.dedupe_seconds,
        )
        self.watch = WatchTracker(ttl=self.settings.watch_ttl)
        self.keys: VapidKeys | None = None
        self.dropped = 0
        self._queue: asyncio.Queue[tuple[StateChange, frozenset[str]]] = asyncio.Queue(QUEUE_MAX)
        self._worker: asyncio.Task[None] | None = None
        self._no_window = asyncio.Event()  # set while no grouping window is open
        self._no_window.set()
        self._http: aiohttp.ClientSession | None = None
        self._failures: dict[str, int] = {}  # endpoint -> consecutive failed sends
        self._page_buckets: dict[str, TokenBucket] = {}  # viewer -> its page's log reports
        self._unblocked_at: dict[str, float] = {}  # pane id -> when last committed not blocked

    async def start(self) -> None:
        self.keys = await store.vapid_keys(self.engine, self.settings.subject)
        self.operator_devices = bool(await store.operator_ids(self.engine, with_devices=True))
        self._worker = asyncio.create_task(self._run(), name="paneboard-notify")
        if any(c.escalate_after is not None for c in self.channels):
            self._escalator = asyncio.create_task(self._escalate_loop(), name="paneboard-escalate")

    async def stop(self) -> None:
        if self._escalator:
            self._escalator.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._escalator
            self._escalator = None
        if self._worker:
            self._worker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._worker
            self._worker = None
        if self._http:
            await self._http.close()
            self._http = None

    # -- input -------------------------------------------------------------------------

    def wants(self, state: State | None, prev_state: State | None) -> bool:
        """Whether a change from `prev_state` to `state` is any of the notifier's business:
        asked before the change is built, since most are not (the writer calls this for
        every committed change, thousands a second under load)."""
        return (self.offers is not None and self.operator_devices) or is_notable(state, prev_state)

    def pane_changed(self, change: StateChange) -> None:
        """Called by the server for each state change; never blocks, never raises."""
        if self.offers is not None and self.operator_devices:
            if change.state != "blocked":
                # A later block's offer is read only from a screen that came after this:
                # never the prompt of an earlier block (the commit time of the block
                # itself would not do: its screen may arrive before the commit).
                if len(self._unblocked_at) >= QUEUE_MAX:
                    self._unblocked_at.clear()
                self._unblocked_at[change.pane_id] = self.clock()
            elif change.notable:
                self.offers.prepare(change.pane_id)
        if not change.notable:
            return
        try:
            self._queue.put_nowait((change, self.watch.watchers(self.clock())))
        except asyncio.QueueFull:
            self.dropped += 1

    def tab_report(self, viewer: str, tab: str, watching: bool) -> None:
        self.watch.report(viewer, tab, watching, self.clock())

    async def idle(self) -> None:
        """Wait until every queued change has been handled and its window has closed
        (tests, shutdown): a change after this starts a window of its own."""
        await self._queue.join()
        await self._no_window.wait()

    # -- work --------------------------------------------------------------------------

    def _drain(self) -> list[tuple[StateChange, frozenset[str] | None]]:
        """What is queued now, without waiting."""
        out: list[tuple[StateChange, frozenset[str] | None]] = []
        while True:
            try:
                out.append(self._queue.get_nowait())
            except asyncio.QueueEmpty:
                return out

    async def _run(self) -> None:
        """A window per first change: it (and whatever came with it) is told at once,
        what follows within `group_window` is folded into it when the window closes."""
        while True:
            first: list[tuple[StateChange, frozenset[str] | None]] = [await self._queue.get()]
            self._no_window.clear()
            try:
                closes = time.monotonic() + self.settings.group_window
                window = Window()
                await self._tell(first + self._drain(), window)
                if self.settings.group_window > 0:
                    await self._sleep(max(0.0, closes - time.monotonic()))
                    later = self._drain()
                    if later:
                        await self._tell(later, window)
            finally:
                self._no_window.set()

    async def _tell(self, batch: list[tuple[StateChange, frozenset[str] | None]], window: Window) -> None:
        try:
            await self.handle_many(batch, window)
        except Exception as exc:  # one bad batch must not stop the notifier; one line, no traceback
            log.warning("notifying about %d change(s) failed: %s", len(batch), _one_line(exc))
        finally:
            for _ in batch:
                self._queue.task_done()

    async def handle(self, change: StateChange, watchers: frozenset[str] | None = None) -> dict[str, int]:
        """Tell whoever should know; `watchers`: viewers watching when the change happened."""
        return await self.handle_many([(change, watchers)])

    async def handle_many(
        self, items: list[tuple[StateChange, frozenset[str] | None]], window: Window | None = None
    ) -> dict[str, int]:
        """Tell every route what it wants of these changes: one of them as itself, several
        as one grouped message. With the `window` these follow, a route already told in
        it hears them folded into what it was told (`grouping.py`)."""
        window = Window() if window is None else window
        now = self.clock()
        dnd, mutes = await store.quiet_state(self.engine, now)
        counts = {"channels": 0, "push": 0, "quiet": 0, "watched": 0, "limited": 0, "grouped": 0}
        live: list[tuple[StateChange, frozenset[str]]] = []
        for change, watchers in items:
            if shared_quiet(change, now, dnd=dnd, mutes=mutes):
                counts["quiet"] += 1
            else:
                live.append((change, watchers if watchers is not None else self.watch.watchers(now)))
        if not live:
            return counts
        for ch in self.channels:
            wanted = []
            for change, _ in live:
                if not ch.wants(change):
                    continue
                if self.limiter.duplicate(ch.url, change.pane_id, change.state or "", now):
                    counts["limited"] += 1
                else:
                    wanted.append(change)
            if not wanted:
                continue
            if not self.limiter.allow_many(ch.url, [(c.pane_id, c.state or "") for c in wanted], now):
                counts["limited"] += len(wanted)
                continue
            told = latest_per_pane([*window.channels.get(ch.url, ()), *wanted])  # one further message
            window.channels[ch.url] = told
            await self._tell_channel(ch, told, now, counts)
        await self._push_changes(live, now, dnd, mutes, counts, window)
        return counts

    async def _tell_channel(
        self, ch: Channel, wanted: list[StateChange], now: float, counts: dict[str, int]
    ) -> None:
        one = wanted[0] if len(wanted) == 1 else None
        title, body = (one.title(), one.body()) if one else group_text(wanted)
        states = {c.state for c in wanted}
        state = states.pop() if len(states) == 1 else None
        ok = await apprise_send.send(ch.url, title, body, state, self._link(one))
        counts["channels"] += int(ok)
        counts["grouped"] += int(one is None)
        detail = "" if one else f"{len(wanted)} panes: " + ",".join(c.pane_id for c in wanted)
        await store.log(
            self.engine,
            _db_id(one.pane_id) if one else None,
            f"apprise:{ch.label}",
            state,
            ok,
            detail,
            reason=reason_of(one) if one else "grouped",
            t=now,
        )

    async def _push_changes(
        self,
        live: list[tuple[StateChange, frozenset[str]]],
        now: float,
        dnd: Any,
        mutes: Any,
        counts: dict[str, int],
        window: Window,
    ) -> None:
        """Web Push: per subscription, what it should hear of these changes; the same
        list for several subscriptions is one encrypted message each, sent together.
        A device told something earlier in the window gets the lot under the tag it was
        told with, marked not to buzz again (`renotify` false in the service worker)."""
        subs = await store.subscriptions(self.engine)
        operators = await store.operator_ids(self.engine)
        self.operator_devices = any(v in operators for v, _ in subs)
        if not subs:
            return
        hours = await store.all_quiet_hours(self.engine)
        own_dnd = await store.all_own_dnd(self.engine, now)
        plan: dict[tuple[tuple[int, ...], Told | None], list[tuple[int | None, webpush.Subscription]]] = {}
        for viewer_id, sub in subs:
            mine: list[int] = []
            for i, (change, watchers) in enumerate(live):
                if change.state == "done" and not self.settings.push_done:
                    continue
                if viewer_id in own_dnd or viewer_quiet(
                    change, now, dnd=dnd, mutes=mutes, hours=hours.get(viewer_id or -1), viewer_id=viewer_id
                ):
                    counts["quiet"] += 1
                elif viewer_id is not None and f"viewer:{viewer_id}" in watchers:
                    counts["watched"] += 1
                else:
                    mine.append(i)
            if mine:
                plan.setdefault((tuple(mine), window.devices.get(sub.endpoint)), []).append((viewer_id, sub))
        waiting = {"waiting": self.waiting()} if self.waiting is not None else {}
        for (idx, before), targets_ in plan.items():
            changes = [live[i][0] for i in idx]
            every = latest_per_pane([*(before.changes if before else ()), *changes])
            if len(every) == 1:  # one pane: as itself (again, quietly, if it blocked anew)
                c = every[0]
                again = {"tag": before.tag, "renotify": False} if before else {}
                counts["push"] += await self._push_one(c, targets_, operators, {**waiting, **again})
                told = Told(webpush.tag_for(c.pane_id), (c,))
            else:
                tag = before.tag if before else webpush.GROUP_TAG
                title, body = group_text(every)
                extra = {**waiting, **self._url(None)}
                data = webpush.group_message(title, body, extra, tag=tag, renotify=before is None)
                counts["push"] += await self._push_all(targets_, data, every[0], None, "grouped", len(every))
                counts["grouped"] += 1
                told = Told(tag, tuple(every))
            for _, sub in targets_:
                window.devices[sub.endpoint] = told

    async def _push_one(
        self,
        c: StateChange,
        subs: list[tuple[int | None, webpush.Subscription]],
        operators: set[int],
        waiting: dict[str, Any],
    ) -> int:
        """One change's push. For a block, operators' devices get the prompt's answers
        (`offer`; none found: a plain push), and the others' pushes do not wait for the
        screen that takes."""
        db_id, why = _db_id(c.pane_id), reason_of(c)
        waiting = {**waiting, **self._url(c)}
        ops = [t for t in subs if t[0] in operators] if c.state == "blocked" and self.offers else []
        rest = [t for t in subs if t not in ops]

        async def to_operators() -> int:
            if not ops or self.offers is None:
                return 0
            offer = await self.offers.offer(c.pane_id, self._unblocked_at.get(c.pane_id, 0.0))
            extra = waiting
            if offer is not None:
                # the buttons answer the screen's prompt: the body says that question
                extra = {**waiting, "offer": offer.to_json(), "body": c.body(offer.prompt)}
            return await self._push_all(ops, webpush.change_message(c, extra), c, db_id, why)

        plain = webpush.change_message(c, waiting)
        sent = await asyncio.gather(to_operators(), self._push_all(rest, plain, c, db_id, why))
        return sum(sent)

    def _link(self, change: StateChange | None) -> str | None:
        """The absolute link a message about `change` (None: several) carries, if any."""
        return links.link(self.public_url, change.pane_id if change else "")

    def _url(self, change: StateChange | None) -> dict[str, str]:
        """A push's `url` (the service worker opens it if it is on its own origin)."""
        url = self._link(change)
        return {"url": url} if url else {}

    async def escalate(self) -> int:
        """Tell each escalation route about the blocks past their threshold (once each);
        returns how many were sent."""
        now = self.clock()
        due = await escalation.due(self.engine, self.channels, now)
        if not due:
            return 0
        dnd, mutes = await store.quiet_state(self.engine, now)
        sent = 0
        for d in due:
            if shared_quiet(d.change, now, dnd=dnd, mutes=mutes):
                continue  # told when the quiet ends, if it still waits then
            title, body = escalation.message(d, now)
            link = self._link(d.change)
            ok = await apprise_send.send(d.target.url, title, body, "blocked", link)
            sent += int(ok)
            await store.log(
                self.engine,
                d.wait.pane_id,
                escalation.channel_key(d.target),
                "blocked",
                ok,
                f"waited {escalation.minutes(now - d.wait.start_t)}; past {d.route.label}'s threshold",
                reason="escalation",
                wait_id=d.wait.id,
                t=now,
            )
        return sent

    async def _escalate_loop(self) -> None:
        while True:
            await self._sleep(self.settings.escalation_check)
            try:
                await self.escalate()
            except Exception as exc:
                log.warning("escalation check failed: %s", _one_line(exc))

    def page_log_allowed(self, viewer: str) -> bool:
        """At most 30 page notifications a minute per viewer reach the log."""
        if len(self._page_buckets) > 10000:
            self._page_buckets.clear()
        return self._page_buckets.setdefault(viewer, TokenBucket(0.5, 30)).take(self.clock())

    async def record_page(self, viewer: str, panes: list[str], state: Notable | None, reason: str) -> None:
        """A notification the page showed itself (the browser route), for the log."""
        one = panes[0] if len(panes) == 1 else None
        detail = f"{viewer}; " + (f"pane {one}" if one else f"{len(panes)} panes: " + ",".join(panes))
        await store.log(
            self.engine,
            _db_id(one) if one else None,
            "browser",
            state,
            True,
            detail,
            reason=reason,
            t=self.clock(),
            owner=viewer,
        )

    async def _push_all(
        self,
        subs: Sequence[tuple[int | None, webpush.Subscription]],
        data: str,
        change: StateChange | None,
        pane_db_id: int | None,
        reason: str = "test",
        grouped: int = 0,
        outcomes: dict[str, str] | None = None,
    ) -> int:
        """Send `data` to each subscription; `outcomes` (if given) gets each endpoint's
        outcome in words (`sent`, `gone`, `failed: why`)."""
        if not subs or self.keys is None:
            return 0
        sem = asyncio.Semaphore(PUSH_CONCURRENCY)
        keys = self.keys
        if self._http is None:  # made on the first push: aiohttp is heavy to import
            import aiohttp

            resolver = None if self.settings.push_allow_local else targets.safe_resolver()
            self._http = aiohttp.ClientSession(connector=aiohttp.TCPConnector(resolver=resolver))

        async def one(viewer_id: int | None, sub: webpush.Subscription) -> bool:
            detail = ""
            async with sem:
                try:
                    await targets.check_endpoint(sub.endpoint, self.settings.push_allow_local)
                    outcome, status = await webpush.send(
                        sub,
                        data,
                        keys,
                        subject=self.settings.subject,
                        topic=webpush.topic_for(change.pane_id) if change else None,
                        urgency=webpush.urgency_for(change.state if change else None),
                        ttl=self.settings.push_ttl,
                        session=self._http,
                    )
                except Exception as exc:  # a refused target, a bad stored key, ...: a failure
                    outcome, status, detail = "failed", None, _one_line(exc)
            state = change.state if change else "test"
            if outcome == "gone":
                self._failures.pop(sub.endpoint, None)
                await store.remove_subscription(self.engine, sub.endpoint)
            elif outcome == "sent":
                self._failures.pop(sub.endpoint, None)
                await store.mark_push_ok(self.engine, sub.endpoint, self.clock())
            else:
                await self._failed(sub, status, detail)
            ok = outcome == "sent"
            if outcomes is not None:
                outcomes[sub.endpoint] = outcome if ok or outcome == "gone" else f"failed: {detail or status}"
            what = f"{grouped} panes; " if grouped else ""
            await store.log(
                self.engine,
                pane_db_id,
                "webpush",
                state,
                ok,
                f"{what}{outcome} {status} {detail}"[:200],
                reason=reason,
                t=self.clock(),
                owner=None if viewer_id is None else f"viewer:{viewer_id}",
            )
            return outcome == "sent"

        results = await asyncio.gather(*(one(v, s) for v, s in subs))
        return sum(results)

    async def _failed(self, sub: webpush.Subscription, status: int | None, detail: str) -> None:
        """Count a failed send (one log line); delete the subscription after too many in a row."""
        n = self._failures.get(sub.endpoint, 0) + 1
        self._failures[sub.endpoint] = n
        host = urlsplit(sub.endpoint).hostname or "?"  # the path is the subscription's secret
        why = detail or f"status {status}"
        await store.mark_push_failed(self.engine, sub.endpoint, why, self.clock())
        limit = self.settings.push_max_failures
        if n >= limit:
            self._failures.pop(sub.endpoint, None)
            await store.remove_subscription(self.engine, sub.endpoint)
            log.warning("web push to %s failed (%s); removed after %d failures in a row", host, why, n)
        else:
            log.warning("web push to %s failed (%s); failure %d of %d", host, why, n, limit)

    async def test(self, viewer_id: int | None) -> dict[str, Any]:
        """The settings panel's test button: every channel, and this viewer's pushes;
        `devices` says which of the viewer's devices got it (and why not)."""
        sent = failed = 0
        for ch in self.channels:
            ok = await apprise_send.send(ch.url, "paneboard test", "If you can read this, the channel works.")
            sent += int(ok)
            failed += int(not ok)
            await store.log(
                self.engine, None, f"apprise:{ch.label}", "test", ok, reason="test", t=self.clock()
            )
        own = await store.own_subscriptions(self.engine, viewer_id) if viewer_id is not None else []
        data = '{"title": "paneboard test", "body": "Push notifications work on this device."}'
        outcomes: dict[str, str] = {}
        pushed = await self._push_all(
            [(viewer_id, sub) for _, sub in own], data, None, None, outcomes=outcomes
        )
        devices = [
            {
                "id": row_id,
                "outcome": outcomes.get(sub.endpoint, "not sent"),
                "ok": outcomes.get(sub.endpoint) == "sent",
            }
            for row_id, sub in own
        ]
        return {"sent": sent, "failed": failed, "push": pushed, "devices": devices}


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:200]}" if text else type(exc).__name__


#: the largest id a row has (a signed 64-bit column): a larger number names no pane, and
#: the database refuses it as a parameter
_ID_MAX = 2**63 - 1


def _db_id(pane_id: str) -> int | None:
    """The pane's row id, or None when `pane_id` (from a page) cannot be one."""
    try:
        n = int(pane_id)
    except ValueError:
        return None
    return n if 0 < n <= _ID_MAX else None
