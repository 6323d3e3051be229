"""Web Push through a real push endpoint that decrypts what it gets (RFC 8291)."""

from __future__ import annotations

import asyncio

import pytest
from paneboard_server.notify import webpush
from paneboard_server.notify.events import StateChange
from paneboard_server.notify.vapid import VapidKeys
from support.pushendpoint import PushService


@pytest.fixture
def keys() -> VapidKeys:
    return VapidKeys.generate()


@pytest.fixture
def service(keys: VapidKeys):
    svc = PushService(expected_vapid_key=keys.public_key).start()
    yield svc
    svc.stop()


def change(state: str = "blocked") -> StateChange:
    return StateChange(
        pane_id="7",
        host="build-1",
        session="work",
        window="0",
        agent="claude",
        state=state,
        prev_state="working",
        kind="permission" if state == "blocked" else None,
        msg="Apply 3 changes?",
        t=1000.0,
    )


def test_payload_decrypts_with_subscriber_keys_and_headers_are_set(service, keys):
    sub = webpush.Subscription.from_json(service.subscription())
    c = change()
    outcome, status = asyncio.run(
        webpush.send(
            sub,
            webpush.change_message(c),
            keys,
            subject="mailto:test@example.org",
            topic=webpush.topic_for(c.pane_id),
            urgency=webpush.urgency_for(c.state),
            ttl=600,
        )
    )
    assert (outcome, status) == ("sent", 201)
    [got] = service.wait_for(1)
    assert got.payload["pane"] == "7"
    assert got.payload["title"] == "claude blocked (permission)"
    assert "Apply 3 changes?" in got.payload["body"]
    assert got.headers["ttl"] == "600"
    assert got.headers["urgency"] == "high"
    assert got.headers["topic"] == webpush.topic_for("7")
    assert got.vapid_claims["sub"] == "mailto:test@example.org"
    assert got.vapid_claims["aud"] == f"http://127.0.0.1:{service.port}"


def test_gone_subscription_is_reported(service, keys):
    service.status = 410
    sub = webpush.Subscription.from_json(service.subscription())
    outcome, status = asyncio.run(webpush.send(sub, "{}", keys, subject="mailto:a@b.c", topic=None))
    assert (outcome, status) == ("gone", 410)


def test_unreachable_endpoint_is_a_failure_not_an_exception(keys):
    sub = webpush.Subscription(
        endpoint="http://127.0.0.1:9/push/x",
        p256dh=VapidKeys.generate().public_key,
        auth="AAAAAAAAAAAAAAAAAAAAAA",
    )
    outcome, _ = asyncio.run(webpush.send(sub, "{}", keys, subject="mailto:a@b.c", topic=None, timeout=3))
    assert outcome == "failed"


def test_topic_is_short_urlsafe_and_stable():
    t = webpush.topic_for("host/default/%3")
    assert len(t) <= 32
    assert set(t) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
    assert t == webpush.topic_for("host/default/%3") != webpush.topic_for("host/default/%4")


@pytest.mark.parametrize(
    "bad",
    [
        None,
        {},
        {"endpoint": "ftp://x/y", "keys": {"p256dh": "A" * 87, "auth": "A" * 22}},
        {"endpoint": "https://x/y", "keys": {"p256dh": "short", "auth": "A" * 22}},
        {"endpoint": "https://x/y", "keys": {"p256dh": "A" * 87}},
        {"endpoint": "https://" + "x" * 3000, "keys": {"p256dh": "A" * 87, "auth": "A" * 22}},
    ],
)
def test_malformed_subscriptions_are_refused(bad):
    with pytest.raises(ValueError):
        webpush.Subscription.from_json(bad)
