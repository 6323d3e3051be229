"""Answering from the notification itself, in Chromium: a Claude-like program blocks in
a real tmux pane, the server's Web Push reaches the loopback push service, the real
service worker shows it with the answers as buttons (only on the operator's device), and
the worker's click handler -- driven inside the worker, since no test can tap an OS
notification -- posts the answer as the signed-in operator: the key reaches the program.
Then the same button on a prompt that moved on types nothing and says so."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from support.pushendpoint import PushService, Received
from support.stack import PASSWORD, Paneboard
from support.tmux import TmuxServer
from support.wait import wait_for
from support.webclient import WebClient

from .conftest import _need_browser
from .test_answer_browser import asker
from .test_board_browser import unfocus

pytestmark = [pytest.mark.browser, pytest.mark.tmux]


@pytest.fixture(scope="module")
def stack(tmp_path_factory: Any) -> Any:
    _need_browser()
    pb = Paneboard(
        tmp_path_factory.mktemp("pb-pushact"),
        notify={"subject": "mailto:test@example.org", "push_allow_local": True, "group_window": 0.5},
    )
    pb.start(collector=False)
    pb.tmux = TmuxServer().start("work")
    pb.pane = pb.tmux.panes()[0]
    pb.start_collector("--allow-input")
    pb.cli("user", "add", "olga", "--operator", stdin=PASSWORD + "\n")
    pb.cli("user", "add", "nora", stdin=PASSWORD + "\n")
    pb.cli("user", "add", "petra", stdin=PASSWORD + "\n")
    try:
        yield pb
    finally:
        pb.close()


def _registration(page: Any, url: str) -> tuple[Any, int]:
    """The page's service worker registration, through DevTools (for push delivery)."""
    cdp = page.context.new_cdp_session(page)
    # each registration as last told: an earlier event may list one that a later one deletes
    regs: dict[str, dict[str, Any]] = {}
    cdp.on(
        "ServiceWorker.workerRegistrationUpdated",
        lambda e: regs.update({r["registrationId"]: r for r in e["registrations"]}),
    )
    cdp.send("ServiceWorker.enable")

    def registered() -> list[dict[str, Any]]:
        page.wait_for_timeout(50)  # lets Playwright deliver the DevTools events
        return [r for r in regs.values() if r["scopeURL"] == url + "/" and not r["isDeleted"]]

    return cdp, int(wait_for(registered, what="the service worker's registration")[0]["registrationId"])


NOTES = """async () => (await (await navigator.serviceWorker.ready).getNotifications())
    .map(n => ({title: n.title, tag: n.tag, actions: n.actions, data: n.data}))"""
CLOSE_ALL = """async () => { for (const n of await (await navigator.serviceWorker.ready).getNotifications())
    n.close(); }"""


def _deliver(page: Any, cdp: Any, reg: int, url: str, push: Received) -> dict[str, Any]:
    """Hand a push the push service received to the real worker; the notification it shows."""
    page.evaluate(CLOSE_ALL)
    cdp.send(
        "ServiceWorker.deliverPushMessage",
        {"origin": url, "registrationId": str(reg), "data": json.dumps(push.payload)},
    )
    return wait_for(lambda: next(iter(page.evaluate(NOTES)), None), what="the worker's notification")


def _followup(page: Any) -> str:
    def got() -> str | None:
        notes = page.evaluate(NOTES)
        return notes[-1]["title"] if notes else None

    return wait_for(got, what="the follow-up notification")


def _login(ctx: Any, pb: Paneboard, name: str) -> Any:
    page = ctx.new_page()
    page.goto(pb.url + "/")
    page.fill("#login-user", name)
    page.fill("#login-pass", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_selector("html[data-stream='live']")
    return page


SUBSCRIBE = "async (sub) => { await (await import('/js/api.js')).post('/api/push/subscribe', sub); }"


def test_answer_from_the_notification_down_to_the_keys_typed(browser: Any, stack: Paneboard) -> None:
    pb = stack
    assert pb.tmux is not None
    ctx = browser.new_context(base_url=pb.url)
    ctx.grant_permissions(["notifications"], origin=pb.url)
    svc: PushService | None = None
    try:
        page = _login(ctx, pb, "olga")
        page.evaluate("navigator.serviceWorker.ready.then(() => true)")
        key = page.evaluate("fetch('/api/push/vapid-public-key').then(r => r.json())")["key"]
        svc = PushService(expected_vapid_key=key).start()
        mine, theirs = svc.subscription(), svc.subscription()
        page.evaluate(SUBSCRIBE, mine)
        nora = WebClient(pb.url).login("nora", PASSWORD)
        assert nora.request("POST", "/api/push/subscribe", theirs)[0] == 204
        with page.expect_request(
            lambda r: r.url.endswith("/api/watch") and '"watching":false' in (r.post_data or ""),
            timeout=15000,
        ):
            unfocus(page)  # olga is not looking at the board: the push is for her phone

        pane = pb.tmux.new_window("work", "ask", asker().replace(" --once", ""))
        got = svc.wait_for(2, timeout=40)
        by = {g.path: g for g in got[:2]}
        olga_push, nora_push = (by[s["endpoint"].rsplit("/", 1)[1]] for s in (mine, theirs))
        pid = str(next(p["id"] for p in pb.panes() if p["pane"] == pane))
        assert olga_push.payload["pane"] == pid and olga_push.payload["state"] == "blocked"
        offer = olga_push.payload["offer"]
        assert re.fullmatch(r"[0-9a-f]{64}", offer["fingerprint"])
        # the first two answers that change no standing permission: never "don't ask again"
        assert offer["answers"] == [{"id": "yes", "label": "1. Yes"}, {"id": "no", "label": "No"}]
        # the lock screen does not show the prompt: the body says what the buttons answer
        assert olga_push.payload["body"].startswith("Do you want to proceed?")
        assert "offer" not in nora_push.payload and nora_push.payload["pane"] == pid

        cdp, reg = _registration(page, pb.url)
        worker = ctx.service_workers[0] if ctx.service_workers else ctx.wait_for_event("serviceworker")
        most = worker.evaluate("Notification.maxActions")  # Chromium shows 2: Yes, No (the body opens)
        assert most >= 2
        note = _deliver(page, cdp, reg, pb.url, nora_push)
        assert [a["title"] for a in note["actions"]] == ["Open"]  # not an operator's device
        note = _deliver(page, cdp, reg, pb.url, olga_push)
        page.evaluate(CLOSE_ALL)
        assert [a["title"] for a in note["actions"]] == ["1. Yes", "No", "Open"][:most]
        assert [a["action"] for a in note["actions"]] == ["answer:yes", "answer:no", "open"][:most]
        data = note["data"]
        assert data["fingerprint"] == offer["fingerprint"] and data["pane"] == pid

        # The server forgets every screen (a restart, or the watch ran out long before
        # the tap): the answer is checked against a fresh capture all the same.
        pb.kill_server()
        pb.start_server()
        wait_for(
            lambda: any(p["pane"] == pane and p["input"] for p in pb.panes()),
            timeout=30,
            what="the collector",
        )
        assert "ANSWERED" not in pb.tmux.cmd("capture-pane", "-p", "-t", pane)
        tap = "([d, a]) => self.handleClick(d, a)"
        assert worker.evaluate(tap, [data, "answer:yes"]) == "typed"
        wait_for(lambda: "ANSWERED yes" in pb.tmux.cmd("capture-pane", "-p", "-t", pane), what="the key read")
        assert _followup(page) == "typed: 1. Yes"

        # The same button once the prompt has moved on: nothing is typed, and it says so.
        olga = WebClient(pb.url).login("olga", PASSWORD)
        wait_for(
            lambda: (
                olga.get(f"/api/panes/{pid}/screen?after={offer['fingerprint']}&wait=5")["fingerprint"]
                != offer["fingerprint"]
            ),
            what="a screen past the answered prompt",
        )
        assert worker.evaluate(tap, [data, "answer:no"]) == "changed"
        assert _followup(page) == "not typed: the prompt changed — open it"
        assert "ANSWERED no" not in pb.tmux.cmd("capture-pane", "-p", "-t", pane)
        audit = olga.get(f"/api/panes/{pid}/answers")["answers"]
        assert [(a["who"], a["answer"], a["outcome"]) for a in audit[:2]] == [
            ("olga", "no", "changed"),
            ("olga", "yes", "typed"),
        ]
        cdp.detach()
    finally:
        ctx.close()
        if svc is not None:
            svc.stop()


def test_settings_list_each_device_with_its_last_delivery_and_failure(browser: Any, stack: Paneboard) -> None:
    """The panel lists the account's push devices with their last delivery and last
    failure, and "test" says which of them got it."""
    pb = stack
    good, bad = PushService().start(), PushService(status=500).start()
    ctx = browser.new_context(base_url=pb.url)
    try:
        page = _login(ctx, pb, "petra")
        page.evaluate(SUBSCRIBE, {**good.subscription(), "device": "phone"})
        page.evaluate(SUBSCRIBE, {**bad.subscription(), "device": "tablet"})
        page.click("#settings-btn")
        devices = page.locator("#push-devices li")
        devices.filter(has_text="tablet").wait_for()
        assert [t.split(" (")[0] for t in devices.all_inner_texts()] == ["phone", "tablet"]
        assert all("last delivered never; no failure" in t for t in devices.all_inner_texts())
        page.click("#notify-test")
        page.locator("#settings-status", has_text="1 of 2 device(s) got it").wait_for()
        phone, tablet = devices.all_inner_texts()
        assert "test: got it" in phone and "no failure" in phone and "last delivered never" not in phone
        assert "test: not delivered (failed: 500)" in tablet and "last delivered never" in tablet
        assert "; last failed " in tablet and "(status 500)" in tablet
        assert len(good.received) == 1 and good.received[0].payload["title"] == "paneboard test"
    finally:
        ctx.close()
        good.stop()
        bad.stop()
