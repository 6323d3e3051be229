"""The page's own notifications in a real Chromium: changes that come together are one
notification, what happened while the page was away is not replayed, "done" can be
switched off in this browser, and what was shown reaches the server's log."""

from __future__ import annotations

import pytest
from paneboard_server.notify import webpush
from paneboard_server.notify.events import StateChange
from paneboard_server.notify.grouping import group_text
from support.wait import wait_for

from .test_board_browser import notes
from .test_push_answer import CLOSE_ALL, _registration

pytestmark = [pytest.mark.browser, pytest.mark.tmux]

# A Notifier of its own on a model of its own (the page's notifier leads the real
# board): nothing on screen, nobody watching; returns a function that feeds it panes.
SETUP = """async () => {
  const m = await import('/js/model.js');
  const n = await import('/js/notify.js');
  const model = new m.Model();
  const notifier = new n.Notifier(model, {
    isPaneOnScreen: () => false, currentPane: () => null, getQuiet: () => null,
  });
  notifier.leader = true;
  window.__feed = (panes) => { for (const p of panes) model.upsert(p); };
  window.__doneSwitch = n.doneSwitch;
  return n.GROUP_MS;
}"""


def pane(id_: str, state: str, since: float, msg: str = "", host: str = "burst-host") -> dict:
    return {
        "id": id_, "host": host, "tmux": "default", "pane": f"%{id_}", "session": "s", "window": "0",
        "agent": "claude", "state": state, "kind": "question" if state == "blocked" else None, "msg": msg,
        "since": since, "reachable": True, "observable": True,
    }  # fmt: skip


def test_a_burst_is_one_notification_and_missed_changes_are_not_replayed(page, board):
    group_ms = page.evaluate(SETUP)
    now = page.evaluate("Date.now() / 1000")
    before = len(notes(page))
    # What happened an hour ago, delivered now (a stream catching up): not notified.
    page.evaluate("ps => window.__feed(ps)", [pane(f"old{i}", "blocked", now - 3600) for i in range(5)])
    # Five fresh blocks together: one notification naming them.
    page.evaluate(
        "ps => window.__feed(ps)", [pane(f"b{i}", "blocked", now, f"question {i}") for i in range(5)]
    )
    page.wait_for_function("n => window.__notes.length > n", arg=before, timeout=group_ms + 5000)
    page.wait_for_timeout(group_ms + 300)  # nothing else follows
    got = notes(page)[before:]
    assert [(n["title"], n["tag"]) for n in got] == [("⚠ 5 agents waiting", "paneboard-burst")]
    assert got[0]["body"].splitlines()[0] == "claude blocked · burst-host: question 0"
    # One alone is itself, tagged with its pane.
    page.evaluate("ps => window.__feed(ps)", [pane("solo", "blocked", now, "alone?")])
    page.wait_for_function("n => window.__notes.length > n", arg=before + 1, timeout=group_ms + 5000)
    assert notes(page)[-1]["tag"] == "solo"
    # "done" switched off in this browser: not notified; on again: notified.
    page.evaluate("window.__doneSwitch.set(false)")
    page.evaluate("ps => window.__feed(ps)", [pane("d1", "done", now)])
    page.wait_for_timeout(group_ms + 300)
    assert len(notes(page)) == before + 2
    page.evaluate("window.__doneSwitch.set(true)")
    page.evaluate("ps => window.__feed(ps)", [pane("d2", "done", now)])
    page.wait_for_function("n => window.__notes.length > n", arg=before + 2, timeout=group_ms + 5000)
    assert notes(page)[-1]["tag"] == "d2"

    def logged():
        # The log shows a viewer its own deliveries only: read it as the page's account.
        entries = page.evaluate("async () => (await fetch('/api/notify/log?limit=20')).json()")["entries"]
        mine = [(e["channel"], e["reason"], e["state"]) for e in entries if e["channel"] == "browser"]
        return mine if len(mine) >= 3 else None

    assert wait_for(logged, timeout=10, what="the page's notifications in the log")[:3] == [
        ("browser", "done", "done"),
        ("browser", "block", "blocked"),
        ("browser", "grouped", "blocked"),
    ]
    # The stats page lists them with their reasons.
    page.goto(board.url + "/stats.html#sent")
    page.wait_for_selector("#sent-list li[data-reason='grouped']")
    assert "grouped burst" in page.locator("#sent-list li[data-reason='grouped']").first.inner_text()
    assert page.locator("#notify-done").count() == 0  # the switch lives on the board's settings
    page.goto(board.url + "/")
    page.wait_for_selector("html[data-ready='1']")
    assert page.locator("#notify-done").is_checked()


SHOWN = """async () => (await (await navigator.serviceWorker.ready).getNotifications())
    .map(n => ({title: n.title, tag: n.tag, renotify: n.renotify, url: n.data && n.data.url}))"""


def test_a_folded_burst_replaces_the_first_push_without_a_second_buzz(page, board):
    """The server's two pushes for fifteen blocks (the first at once, the rest folded into
    it), delivered to the real service worker: one notification, replaced under the first
    one's tag with `renotify` false, so the phone buzzed once."""
    page.evaluate("navigator.serviceWorker.ready.then(() => true)")
    page.evaluate(CLOSE_ALL)
    cdp, reg = _registration(page, board.url)
    burst = [
        StateChange(str(i), "build-1", "work", "0", "claude", "blocked", "working", "question", f"q{i}?", 1.0)
        for i in range(1, 16)
    ]
    title, body = group_text(burst)
    first = webpush.change_message(burst[0])
    folded = webpush.group_message(title, body, tag=webpush.tag_for("1"), renotify=False)

    def deliver(data: str, want: str) -> list[dict]:
        cdp.send(
            "ServiceWorker.deliverPushMessage",
            {"origin": board.url, "registrationId": str(reg), "data": data},
        )
        return wait_for(
            lambda: (got := page.evaluate(SHOWN)) and got[-1]["title"] == want and got, what=f"{want!r} shown"
        )

    assert deliver(first, "claude blocked (question)") == [
        {"title": "claude blocked (question)", "tag": "1", "renotify": True, "url": "/#/pane/1/screen"}
    ]
    assert deliver(folded, "15 agents waiting") == [
        {"title": "15 agents waiting", "tag": "1", "renotify": False, "url": "/"}
    ]


def test_a_push_opens_its_url_only_on_the_workers_own_origin(page, board):
    """The public URL's link to the pane is what a tap opens; a link elsewhere is not
    followed (the pane's page here instead)."""
    page.evaluate("navigator.serviceWorker.ready.then(() => true)")
    cdp, reg = _registration(page, board.url)
    change = StateChange("9", "build-1", "work", "0", "claude", "blocked", "working", "question", "q?", 1.0)
    for url, opens in (
        (board.url + "/#/pane/9/screen", "/#/pane/9/screen"),
        ("https://evil.example/#/pane/9/screen", "/#/pane/9/screen"),
        (board.url + "/#/pane/10/screen", "/#/pane/10/screen"),
    ):
        page.evaluate(CLOSE_ALL)
        data = webpush.change_message(change, {"url": url})
        cdp.send(
            "ServiceWorker.deliverPushMessage",
            {"origin": board.url, "registrationId": str(reg), "data": data},
        )
        shown = wait_for(lambda: page.evaluate(SHOWN), what=f"the push for {url} shown (registration {reg})")
        assert [n["url"] for n in shown] == [opens], url
