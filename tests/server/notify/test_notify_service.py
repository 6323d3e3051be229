"""The notifier against a real migrated SQLite, a real push service and a real
Apprise json:// receiver: routing, quiet rules, watching tabs and gone subscriptions."""

from __future__ import annotations

import asyncio
import datetime as dt
import uuid

import pytest
from paneboard_server.auth import accounts
from paneboard_server.config import ConfigError
from paneboard_server.notify import store
from paneboard_server.notify.events import StateChange
from paneboard_server.notify.grouping import Window
from paneboard_server.notify.quiet import QuietHours
from paneboard_server.notify.service import NotifyService, NotifySettings
from paneboard_server.notify.webpush import Subscription
from paneboard_server.store import schema
from paneboard_server.store.database import create_engine, resolve_url
from paneboard_server.store.migrate import upgrade
from sqlalchemy import insert, select
from sqlalchemy.engine import make_url
from support.postgres import PG_ADMIN, pg_exec, require_postgres
from support.pushendpoint import PushService
from support.receiver import JsonReceiver


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db_url(request, tmp_path):
    """A freshly migrated database: SQLite file, or a new PostgreSQL database."""
    if request.param == "sqlite":
        url = resolve_url(str(tmp_path / "pb.db"))
        upgrade(url)
        yield url
        return
    require_postgres()
    name = f"pb_web_{uuid.uuid4().hex[:10]}"
    pg_exec(f'CREATE DATABASE "{name}"')
    try:
        url = resolve_url(make_url(PG_ADMIN).set(database=name).render_as_string(hide_password=False))
        upgrade(url)
        yield url
    finally:
        pg_exec(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def receiver():
    r = JsonReceiver().start()
    yield r
    r.stop()


@pytest.fixture
def pushsvc():
    p = PushService().start()
    yield p
    p.stop()


def change(state="blocked", pane="1", host="build-1", agent="claude", prev="working") -> StateChange:
    return StateChange(pane, host, "work", "0", agent, state, prev, "question", "Which branch?", 1.0)


async def add_panes(engine, n=10):
    """Real pane rows (the notification log points at them)."""
    await accounts.create_token(engine, "c1", "collector")
    async with engine.begin() as conn:
        tok = (await conn.execute(select(schema.tokens.c.id))).scalar_one()
        host = (
            await conn.execute(insert(schema.hosts).values(collector_id=tok, name="build-1"))
        ).inserted_primary_key[0]
        for i in range(1, n + 1):
            await conn.execute(
                insert(schema.panes).values(id=i, host_id=host, tmux="default", pane=f"%{i}", rev=i)
            )


async def setup(db_url, notify_cfg, pushsvc, clock=None):
    engine = create_engine(db_url)
    await add_panes(engine)
    await accounts.add_viewer(engine, "ann", "pw-ann-123456")
    [(name, _)] = await accounts.list_viewers(engine)
    viewer_id = await accounts.check_login(engine, "ann", "pw-ann-123456")
    assert viewer_id is not None and name == "ann"
    notify_cfg = {"push_allow_local": True, **notify_cfg}  # the test push service is on loopback
    svc = NotifyService(engine, notify_cfg, **({"clock": clock} if clock else {}))
    await svc.start()
    pushsvc.expected_vapid_key = svc.keys.public_key
    sub = Subscription.from_json(pushsvc.subscription())
    await store.add_subscription(engine, viewer_id, sub)
    return engine, svc, viewer_id, sub


def test_blocked_goes_to_matching_channels_and_push(db_url, receiver, pushsvc):
    cfg = {
        "channels": [
            {"url": receiver.url, "states": ["blocked"]},
            {"url": receiver.url + "-done", "states": ["done"]},
        ]
    }

    async def go():
        engine, svc, _, _ = await setup(db_url, cfg, pushsvc)
        try:
            counts = await svc.handle(change())
            assert counts["channels"] == 1 and counts["push"] == 1
            again = await svc.handle(change())  # same pane+state: the channel dedupes
            assert again["limited"] == 1
            keys_again = await store.vapid_keys(engine, "mailto:x@y")
            assert keys_again == svc.keys  # made once, kept in the database
        finally:
            await svc.stop()
            await engine.dispose()

    asyncio.run(go())
    [body] = receiver.wait_for(1)
    assert body["title"] == "claude blocked (question)"
    got = pushsvc.wait_for(2)
    assert got[0].payload["pane"] == "1"
    assert got[0].headers["urgency"] == "high"


def test_watching_tab_holds_push_back_and_mute_dnd_quiet_hours_silence(db_url, receiver, pushsvc):
    noon = dt.datetime(2026, 12, 2, 12, 0, tzinfo=dt.UTC).timestamp()

    async def go():
        engine, svc, viewer_id, _ = await setup(
            db_url, {"channels": [{"url": receiver.url}]}, pushsvc, lambda: noon
        )
        try:
            svc.tab_report(f"viewer:{viewer_id}", "tab1", True)
            c = await svc.handle(change(pane="2"))
            assert (c["push"], c["watched"], c["channels"]) == (0, 1, 1)
            svc.tab_report(f"viewer:{viewer_id}", "tab1", False)

            await store.set_quiet_hours(engine, viewer_id, QuietHours(dt.time(11, 0), dt.time(13, 0), "UTC"))
            c = await svc.handle(change(pane="3"))
            assert (c["push"], c["quiet"], c["channels"]) == (0, 1, 1)  # quiet hours are per viewer
            await store.set_quiet_hours(engine, viewer_id, None)

            mute = await store.add_mute(engine, "host", "build-1", noon + 600)
            c = await svc.handle(change(pane="4"))
            assert (c["push"], c["channels"], c["quiet"]) == (0, 0, 1)
            assert (await svc.handle(change(pane="4", host="other")))["push"] == 1
            await store.remove_mute(engine, mute)

            await store.set_dnd(engine, True, None)
            c = await svc.handle(change(pane="5"))
            assert (c["push"], c["channels"]) == (0, 0)
            await store.set_dnd(engine, False, None)
            assert (await svc.handle(change(pane="6")))["push"] == 1
        finally:
            await svc.stop()
            await engine.dispose()

    asyncio.run(go())


def test_gone_subscription_is_deleted(db_url, pushsvc):
    async def go():
        engine, svc, _, _sub = await setup(db_url, {}, pushsvc)
        try:
            pushsvc.status = 410
            c = await svc.handle(change())
            assert c["push"] == 0
            assert await store.subscriptions(engine) == []
        finally:
            await svc.stop()
            await engine.dispose()

    asyncio.run(go())


def test_queue_is_bounded_and_only_notable_changes_enter(db_url):
    async def go():
        engine = create_engine(db_url)
        svc = NotifyService(engine, {})
        await add_panes(engine, 1)
        svc.pane_changed(change(state="working"))
        assert svc._queue.qsize() == 0
        for i in range(1200):
            svc.pane_changed(change(pane=str(i)))
        assert svc._queue.qsize() == 1000 and svc.dropped == 200
        await engine.dispose()

    asyncio.run(go())


@pytest.mark.parametrize(
    ("cfg", "msg"),
    [
        ({"colour": 1}, "unknown key"),
        ({"push_ttl": "long"}, "push_ttl"),
        ({"push_ttl": -1}, "greater than 0"),
        ({"subject": "me"}, "mailto"),
    ],
)
def test_bad_notify_config_is_one_clear_error(cfg, msg):
    with pytest.raises(ConfigError, match=msg):
        NotifySettings.from_table(cfg)


def test_failing_subscription_is_removed_after_repeated_failures_logged_in_one_line(db_url, pushsvc, caplog):
    async def go():
        engine, svc, _viewer_id, _sub = await setup(db_url, {"push_max_failures": 3}, pushsvc)
        try:
            pushsvc.status = 500  # the push service keeps failing (not "gone")
            for i in range(2):
                assert (await svc.handle(change(pane=str(i + 1))))["push"] == 0
                assert len(await store.subscriptions(engine)) == 1
            await svc.handle(change(pane="3"))
            assert await store.subscriptions(engine) == []
        finally:
            await svc.stop()
            await engine.dispose()

    with caplog.at_level("WARNING", logger="paneboard.notify"):
        asyncio.run(go())
    lines = [r for r in caplog.records if "web push" in r.getMessage()]
    assert len(lines) == 3 and "removed after 3 failures" in lines[-1].getMessage()
    assert all(r.exc_info is None and "\n" not in r.getMessage() for r in lines)


def test_a_stored_bad_key_fails_in_one_line_and_test_button_answers(db_url, pushsvc, caplog):
    """A subscription stored before keys were validated (or edited in the database):
    sending to it is a counted failure, never an exception out of the notifier."""

    async def go():
        engine, svc, viewer_id, _sub = await setup(db_url, {}, pushsvc)
        try:
            async with engine.begin() as conn:
                from sqlalchemy import update

                await conn.execute(update(schema.push_subscriptions).values(p256dh="B" * 87))
            got = await svc.test(viewer_id)
            assert {k: got[k] for k in ("sent", "failed", "push")} == {"sent": 0, "failed": 0, "push": 0}
            # the test button says which device did not get it, and why, in one line
            [device] = got["devices"]
            assert device["ok"] is False and device["outcome"] == "failed: ValueError: Invalid EC key."
            assert (await svc.handle(change()))["push"] == 0
        finally:
            await svc.stop()
            await engine.dispose()

    with caplog.at_level("WARNING", logger="paneboard.notify"):
        asyncio.run(go())
    lines = [r for r in caplog.records if "web push" in r.getMessage()]
    assert len(lines) == 2 and all(r.exc_info is None for r in lines)


def test_keys_are_validated_on_subscribe():
    import base64

    def b64(b: bytes) -> str:
        return base64.urlsafe_b64encode(b).rstrip(b"=").decode()

    good = PushService().subscription()  # a real key pair (not started: only the keys are used)
    Subscription.from_json({**good, "endpoint": "https://push.example/x"})
    not_on_curve = b64(b"\x04" + b"\x01" * 64)  # the right length, no P-256 point
    for keys in (
        {**good["keys"], "p256dh": not_on_curve},
        {**good["keys"], "p256dh": "A" * 87},
        {**good["keys"], "auth": b64(b"x" * 12)},
        {**good["keys"], "p256dh": good["keys"]["p256dh"][:-2] + "!!"},
    ):
        with pytest.raises(ValueError, match="subscription key"):
            Subscription.from_json({"endpoint": "https://push.example/x", "keys": keys})


def test_web_push_groups_a_burst_counts_who_waits_and_can_leave_done_out(db_url, pushsvc):
    async def go():
        engine, svc, _, _ = await setup(db_url, {"push_done": False}, pushsvc)
        svc.waiting = lambda: 7  # the server's count of blocked panes
        try:
            burst = [(change(pane=str(i)), frozenset()) for i in range(1, 4)]
            counts = await svc.handle_many(burst)
            assert counts["push"] == 1 and counts["grouped"] == 1
            assert (await svc.handle(change(state="done", pane="5", prev="working")))["push"] == 0
            assert (await svc.handle(change(pane="6")))["push"] == 1
            log = await store.recent_log(engine)
            assert [(e["channel"], e["reason"]) for e in reversed(log)] == [
                ("webpush", "grouped"),
                ("webpush", "block"),
            ]
            assert log[-1]["detail"].startswith("3 panes; sent")
        finally:
            await svc.stop()
            await engine.dispose()

    asyncio.run(go())
    first, second = pushsvc.wait_for(2)
    assert first.payload["title"] == "3 agents waiting" and first.payload["pane"] == ""
    assert first.payload["body"].count("\n") == 2 and first.payload["waiting"] == 7
    assert second.payload["pane"] == "6" and second.payload["waiting"] == 7


def buzzes(received) -> dict[str, int]:
    """How many times each device buzzed for these pushes, as web/sw.js shows them: a
    push buzzes unless it replaces a shown notification (same tag) with `renotify` false."""
    shown: dict[str, set[str]] = {}
    out: dict[str, int] = {}
    for r in received:
        tags = shown.setdefault(r.path, set())
        tag = r.payload.get("tag") or r.payload["pane"] or "paneboard"
        if tag not in tags or r.payload.get("renotify", True) is not False:
            out[r.path] = out.get(r.path, 0) + 1
        tags.add(tag)
    return out


def test_a_burst_is_told_at_once_and_buzzes_each_device_once(db_url, receiver, pushsvc):
    """The first block goes out before the window closes; the fourteen that follow
    within it replace each device's push under the same tag without a second buzz, and
    each Apprise route gets one further message for the lot."""
    window_closes = asyncio.Event()

    async def sleep(_seconds: float) -> None:  # the window closes when the test says
        await window_closes.wait()

    async def go():
        engine = create_engine(db_url)
        await add_panes(engine, 15)
        cfg = {"push_allow_local": True, "channels": [{"url": receiver.url}]}
        svc = NotifyService(engine, cfg, sleep=sleep)
        await svc.start()
        pushsvc.expected_vapid_key = svc.keys.public_key
        for name in ("ann", "bob"):
            await accounts.add_viewer(engine, name, f"pw-{name}-123456")
            viewer_id = await accounts.check_login(engine, name, f"pw-{name}-123456")
            await store.add_subscription(engine, viewer_id, Subscription.from_json(pushsvc.subscription()))
        try:
            svc.pane_changed(change(pane="1"))
            # At once: both devices and the route hear the first block inside the window.
            first = list(await asyncio.to_thread(pushsvc.wait_for, 2, 30))[:2]
            assert await asyncio.to_thread(receiver.wait_for, 1, 30)
            for i in range(2, 16):
                svc.pane_changed(change(pane=str(i)))
            window_closes.set()
            await svc.idle()
        finally:
            await svc.stop()
            await engine.dispose()
        return first

    first = asyncio.run(go())
    assert {r.payload["pane"] for r in first} == {"1"}
    got = pushsvc.wait_for(4)
    assert len(pushsvc.received) == 4
    assert set(buzzes(got).values()) == {1} and len(buzzes(got)) == 2  # one buzz per device
    folded = got[2:]
    for r in folded:
        assert r.payload["title"] == "15 agents waiting" and r.payload["tag"] == "1"
        assert r.payload["renotify"] is False
        assert r.headers["topic"] == first[0].headers["topic"]  # an undelivered first is replaced
    told = receiver.wait_for(2)
    assert [b["title"] for b in told] == ["claude blocked (question)", "15 agents waiting"]
    assert len(receiver.bodies) == 2


def test_every_message_links_to_the_panes_page_under_the_public_url(db_url, receiver, pushsvc):
    """Apprise's body ends with the pane's link, ntfy's click action opens it, and a
    push carries it; a burst's message links to the board."""
    ntfy = JsonReceiver().start()
    cfg = {"group_window": 0.01, "channels": [{"url": receiver.url}, {"url": ntfy.ntfy_url}]}

    async def go():
        engine = create_engine(db_url)
        await add_panes(engine)
        svc = NotifyService(engine, {"push_allow_local": True, **cfg}, public_url="https://board.example/pb")
        await svc.start()
        pushsvc.expected_vapid_key = svc.keys.public_key
        await accounts.add_viewer(engine, "ann", "pw-ann-123456")
        viewer_id = await accounts.check_login(engine, "ann", "pw-ann-123456")
        await store.add_subscription(engine, viewer_id, Subscription.from_json(pushsvc.subscription()))
        try:
            await svc.handle(change(pane="7"))
            await svc.handle_many([(change(pane="2"), None), (change(pane="3"), None)])
        finally:
            await svc.stop()
            await engine.dispose()

    try:
        asyncio.run(go())
        pane7, board = "https://board.example/pb/#/pane/7/screen", "https://board.example/pb/"
        one, burst = receiver.wait_for(2)
        assert one["message"].splitlines()[-1] == pane7
        assert burst["message"].splitlines()[-1] == board
        ntfy.wait_for(2)
        assert [h.get("x-click") for h in ntfy.headers] == [pane7, board]
        assert ntfy.bodies[0]["topic"] == "agents" and ntfy.bodies[0]["message"].endswith(pane7)
        pushes = pushsvc.wait_for(2)
        assert [p.payload["url"] for p in pushes] == [pane7, board]
    finally:
        ntfy.stop()


def test_without_a_public_url_messages_carry_no_link(db_url, receiver, pushsvc):
    async def go():
        engine, svc, _, _ = await setup(db_url, {"channels": [{"url": receiver.url}]}, pushsvc)
        try:
            await svc.handle(change(pane="7"))
        finally:
            await svc.stop()
            await engine.dispose()

    asyncio.run(go())
    [body] = receiver.wait_for(1)
    assert "://" not in body["message"]
    [push] = pushsvc.wait_for(1)
    assert "url" not in push.payload


def test_a_pane_that_blocks_again_within_the_window_is_itself_again_quietly(db_url, pushsvc):
    """Not "2 agents waiting" about one pane: its new question replaces its push under
    its own tag without a second buzz."""

    async def go():
        engine, svc, _, _ = await setup(db_url, {}, pushsvc)
        try:
            window = Window()
            await svc.handle_many([(change(pane="4"), None)], window)
            again = StateChange(
                "4", "build-1", "work", "0", "claude", "blocked", "working", "question", "And now?"
            )
            await svc.handle_many([(again, None)], window)
        finally:
            await svc.stop()
            await engine.dispose()

    asyncio.run(go())
    first, second = pushsvc.wait_for(2)
    assert first.payload["title"] == second.payload["title"] == "claude blocked (question)"
    assert second.payload["pane"] == "4" and second.payload["body"].startswith("And now?")
    assert second.payload["tag"] == "4" and second.payload["renotify"] is False
    assert buzzes([first, second]) == {first.path: 1}
