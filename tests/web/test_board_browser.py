"""The board in a real Chromium against a real server fed by a real collector.

One paneboard (server + tmux + collector) serves the whole module; each test opens
its own tmux window so panes do not share history. Headless Chromium keeps every
page `visible`, so "not watching" is produced the way a real unfocused window is:
focus emulation off (document.hasFocus() false), a card scrolled out of view, or
another pane's page open.
"""

from __future__ import annotations

import json
import os
import re
import secrets
from pathlib import Path

import pytest
from support.pushendpoint import PushService
from support.wait import wait_for

pytestmark = [pytest.mark.browser, pytest.mark.tmux]

RLO = "\u202e"


def new_pane(board, name=None) -> tuple[str, str]:
    """A fresh tmux window; returns (tmux pane id, paneboard id) once the server has it."""
    pane = board.tmux.new_window("work", name or f"w{secrets.token_hex(2)}")

    def hit():
        return next((p for p in board.panes() if p["pane"] == pane), None)

    p = wait_for(hit, timeout=15, what=f"pane {pane} on the server")
    return pane, str(p["id"])


def card(page, pid):
    return page.locator(f".card[data-id='{pid}']")


def wait_card_state(page, pid, word, timeout=15000):
    page.wait_for_function(
        "([id, w]) => { const c = document.querySelector(`.card[data-id='${id}'] .word`);"
        " return c && c.textContent === w; }",
        arg=[pid, word],
        timeout=timeout,
    )


def wait_text(page, element_id, text, exact=False):
    page.wait_for_function(
        "([id, t, exact]) => { const s = document.getElementById(id).textContent;"
        " return exact ? s === t : s.startsWith(t); }",
        arg=[element_id, text, exact],
    )


def notes(page, tag=None):
    got = page.evaluate("window.__notes")
    return [n for n in got if tag is None or n["tag"] == tag]


def unfocus(*pages):
    """Let the pages lose focus for real: Playwright's focus emulation off, then another
    window opened on top (as when the user switches to their editor)."""
    sessions = []
    for page in pages:
        s = page.context.new_cdp_session(page)
        s.send("Emulation.setFocusEmulationEnabled", {"enabled": False})
        sessions.append(s)
    other = pages[0].context.new_page()
    other.goto("about:blank")
    for page in pages:
        page.wait_for_function("() => !document.hasFocus()")
    return sessions, other


def focus(page, handle):
    sessions, other = handle
    other.close()
    for s in sessions:
        s.send("Emulation.setFocusEmulationEnabled", {"enabled": True})
        s.detach()
    page.bring_to_front()
    page.wait_for_function("() => document.hasFocus()")


def test_a_report_in_tmux_changes_the_card_without_reload(page, board):
    pane, pid = new_pane(board)
    page.evaluate("window.__sameDocument = true")
    card(page, pid).wait_for()
    board.report(pane, state="working", app="pytest")
    wait_card_state(page, pid, "working")
    board.report(pane, state="blocked", kind="question", msg="Which branch should I use?")
    wait_card_state(page, pid, "blocked")
    text = card(page, pid).inner_text()
    assert "(question)" in text and "Which branch should I use?" in text
    assert "⚠" in text  # icon and word, not colour alone
    assert page.evaluate("window.__sameDocument") is True  # no reload happened
    assert re.search(r"\(\d+ waiting, longest \d+ (s|min)", page.title())
    assert page.evaluate("document.getElementById('favicon').href").startswith("data:image/png")
    # Blocked sorts first: the first card on the board is a blocked one.
    assert page.locator(".card").first.locator(".word").inner_text() == "blocked"
    assert page.errors == []
    # Leave no pane waiting for the next test: the next page's first frames may bring this
    # block again as a change, which joins that test's own notification in one burst.
    board.report(pane, state="idle")
    wait_card_state(page, pid, "idle")


def test_unwatched_tab_notifies_and_watched_one_does_not(page, board):
    pane, pid = new_pane(board)
    card(page, pid).wait_for()
    card(page, pid).scroll_into_view_if_needed()
    board.report(pane, state="blocked", kind="permission", msg="Run rm -rf build?")
    wait_card_state(page, pid, "blocked")
    assert notes(page, pid) == []  # focused, visible, card on screen: no notification

    cdp = unfocus(page)
    board.report(pane, state="done", msg="All tests pass")
    wait_for(lambda: notes(page, pid), what="a notification for the done pane")
    [n] = notes(page, pid)
    assert "done" in n["title"] and "All tests pass" in n["body"]
    assert page.evaluate("document.documentElement.dataset.lastBeep") is None  # sound is off by default
    page.evaluate("localStorage.setItem('paneboard.sound', 'on')")  # what the switch stores
    board.report(pane, state="blocked", kind="question", msg="Merge now?")
    wait_for(lambda: len(notes(page, pid)) == 2, what="a second notification, same tag")
    assert page.evaluate("document.documentElement.dataset.lastBeep") is not None  # waiting: a beep
    assert notes(page, pid)[1]["tag"] == pid and "blocked" in notes(page, pid)[1]["title"]
    focus(page, cdp)
    # Clicking the notification opens the pane, a blocked one with its screen in view.
    page.evaluate("window.__noteObjs.at(-1).dispatchEvent(new Event('click'))")
    page.wait_for_url(re.compile(r"#/pane/" + re.escape(pid) + "/screen$"))
    page.wait_for_selector("#pane-view:not([hidden])")
    assert page.errors == []


def test_offscreen_card_or_other_pane_page_notifies(page, board):
    pane, pid = new_pane(board)
    _other, other_id = new_pane(board)
    card(page, pid).wait_for()
    # Another pane's page is open: this pane is not on screen.
    page.goto(board.url + f"/#/pane/{other_id}")
    page.wait_for_selector("#pane-view:not([hidden])")
    board.report(pane, state="blocked", msg="while you read another pane")
    wait_for(lambda: notes(page, pid), what="notification while another pane is open")
    # Back on the board with the card scrolled out of view: still not watched.
    page.set_viewport_size({"width": 800, "height": 120})
    page.goto(board.url + "/#/")
    page.wait_for_selector("#board:not([hidden])")
    page.evaluate("window.scrollTo(0, 0)")
    page.wait_for_function(
        "id => document.querySelector(`.card[data-id='${id}']`).getBoundingClientRect().top > innerHeight",
        arg=pid,
    )
    n0 = len(notes(page, pid))
    board.report(pane, state="done")
    wait_for(lambda: len(notes(page, pid)) > n0, what="notification for an off-screen card")
    assert page.errors == []


def test_only_one_of_several_tabs_notifies(context, page, board):
    from .conftest import login

    second = context.new_page()
    login(second, board)
    pane, pid = new_pane(board)
    for p in (page, second):
        card(p, pid).wait_for()
    unfocus(page, second)
    board.report(pane, state="blocked", msg="two tabs, one notification")
    wait_card_state(page, pid, "blocked")
    wait_card_state(second, pid, "blocked")
    wait_for(lambda: len(notes(page, pid)) + len(notes(second, pid)) >= 1, what="one notification")
    # Both tabs have the change; only the elected leader shows it.
    assert len(notes(page, pid)) + len(notes(second, pid)) == 1
    leaders = [p.evaluate("document.documentElement.dataset.notifyLeader || ''") for p in (page, second)]
    assert sorted(leaders) == ["", "1"]
    second.close()


def test_html_and_bidi_in_a_msg_render_inert(page, board):
    pane, pid = new_pane(board)
    card(page, pid).wait_for()
    evil = f"<img src=x onerror=alert(1)> {RLO}txt.exe\u200b"
    board.report(pane, state="blocked", kind="question", msg=evil, title="<b>bold</b>")
    wait_card_state(page, pid, "blocked")
    msg = card(page, pid).locator(".msg")
    text = msg.text_content()
    assert text.startswith("<img src=x onerror=alert(1)>")
    assert RLO not in text and "\u200b" not in text
    assert msg.locator("img").count() == 0
    assert page.locator("img").count() == 0
    # The pane page renders the same string inertly too.
    page.goto(board.url + f"/#/pane/{pid}")
    page.wait_for_selector("#pane-view .msg")
    assert page.locator("#pane-view img, #pane-view b").count() == 0
    assert RLO not in page.locator("#pane-view").inner_text()
    assert page.errors == []  # no alert dialog, no CSP violation, no script error


def test_sanitizer_and_helpers_in_the_page(page):
    got = page.evaluate(
        """async () => {
      const s = await import('/js/sanitize.js');
      const m = await import('/js/model.js');
      const q = await import('/js/quiet.js');
      const pane = {id: '3', host: 'h', agent: 'claude'};
      return {
        clean: s.clean('a\\u202eb\\u2066c\\u200dd\\u0007e\\ufeff'),
        dur: [m.formatDuration(5), m.formatDuration(65), m.formatDuration(7300), m.formatDuration(90000)],
        muted: q.quietReason({mutes: [{scope: 'host', value: 'h', until: null}]}, pane),
        expired: q.quietReason({mutes: [{scope: 'host', value: 'h', until: 1}]}, pane),
        dnd: q.quietReason({dnd: {until: null}}, pane),
      };
    }"""
    )
    assert got["clean"] == "abcd e"
    assert got["dur"] == ["5s", "1m 05s", "2h 01m", "1d 1h"]
    assert got["muted"] == "muted host" and got["expired"] == "" and got["dnd"] == "do not disturb"


def test_phone_layout_and_wall_view_do_not_overflow(browser, board, tmp_path):
    """Screenshots go to tmp_path (or $PANEBOARD_SCREENSHOTS, to keep them for a look)."""
    from .conftest import login

    if os.environ.get("PANEBOARD_SCREENSHOTS"):
        tmp_path = Path(os.environ["PANEBOARD_SCREENSHOTS"])
        tmp_path.mkdir(parents=True, exist_ok=True)

    pane, pid = new_pane(board, "a-window-with-a-long-name-" + "x" * 40)
    board.report(pane, state="blocked", kind="permission", msg="L" * 300 + " overflow test")
    board.wait_state("blocked", pane)
    overflow = "[document.documentElement.scrollWidth, document.documentElement.clientWidth]"
    phone = browser.new_context(
        viewport={"width": 360, "height": 740}, device_scale_factor=2, is_mobile=True, has_touch=True
    )
    try:
        p = phone.new_page()
        login(p, board)
        card(p, pid).wait_for()
        p.screenshot(path=str(tmp_path / "phone-board.png"), full_page=True)
        sw, cw = p.evaluate(overflow)
        assert sw <= cw, f"phone board overflows: {sw} > {cw}"
        p.goto(board.url + f"/#/pane/{pid}")
        p.wait_for_selector("#pane-view .timeline")
        p.screenshot(path=str(tmp_path / "phone-pane.png"), full_page=True)
        sw, cw = p.evaluate(overflow)
        assert sw <= cw, f"phone pane page overflows: {sw} > {cw}"
    finally:
        phone.close()
    dark = browser.new_context(viewport={"width": 360, "height": 740}, color_scheme="dark")
    try:
        p = dark.new_page()
        login(p, board)
        card(p, pid).wait_for()
        p.screenshot(path=str(tmp_path / "phone-dark.png"))
        bg = p.evaluate("getComputedStyle(document.body).backgroundColor")
        assert bg == "rgb(13, 17, 23)", bg  # the dark palette follows prefers-color-scheme
    finally:
        dark.close()
    wall = browser.new_context(viewport={"width": 1920, "height": 1080})
    try:
        p = wall.new_page()
        p.goto(board.url + f"/?token={board.viewer_token}&view=wall")
        p.wait_for_selector("html[data-stream='live']")
        card(p, pid).wait_for()
        p.screenshot(path=str(tmp_path / "wall.png"))
        sw, cw = p.evaluate(overflow)
        assert sw <= cw, f"wall view overflows: {sw} > {cw}"
        assert not p.locator("#filters").is_visible() and not p.locator("#settings-btn").is_visible()
        assert float(p.evaluate("getComputedStyle(document.body).fontSize").rstrip("px")) >= 20
    finally:
        wall.close()
    print(f"screenshots in {tmp_path}")


def test_viewer_token_becomes_a_cookie_and_leaves_the_address_bar(browser, board):
    ctx = browser.new_context()
    try:
        p = ctx.new_page()
        p.goto(board.url + f"/?token={board.viewer_token}")
        p.wait_for_selector("html[data-ready='1']")
        assert "token" not in p.url
        assert board.viewer_token not in p.evaluate("location.href + history.length")
        assert p.evaluate("document.body.classList.contains('readonly')")
        assert p.locator(".card").count() >= 1
        assert not p.locator("#settings-btn").is_visible()
    finally:
        ctx.close()


def test_pane_page_timeline_records_and_seen(page, board):
    pane, pid = new_pane(board)
    card(page, pid).wait_for()
    board.report(pane, state="working", id="task-1", app="pytest")
    wait_card_state(page, pid, "working")
    board.report(pane, state="done", id="task-1", app="pytest", msg="finished the task")
    wait_card_state(page, pid, "done")
    card(page, pid).click()
    page.wait_for_url(re.compile(r"#/pane/"))
    view = page.locator("#pane-view")
    view.locator(".timeline").wait_for()
    rows = view.locator(".timeline tr").all_inner_texts()
    assert any("done" in r for r in rows) and any("working" in r for r in rows)
    assert "task-1" in view.locator(".records").inner_text()
    view.locator("button.seen").click()  # POST .../seen with the CSRF header
    board.wait_state("idle", pane)
    page.keyboard.press("Escape")
    page.wait_for_selector("#board:not([hidden])")
    wait_card_state(page, pid, "idle")
    assert page.errors == []


def test_pane_page_timers_tick_and_timeline_is_bounded(page, board):
    """The "waiting since" line and the timeline's "(now)" grow while the page is open, and a
    pane with a long history shows its newest rows with a "show more"."""
    pane, pid = new_pane(board)
    for i in range(7):
        board.report(pane, state="working", id="t", app="pytest", msg=f"step {i}")
        board.wait_state("working", pane)
        board.report(pane, state="idle", id="t", app="pytest")
        board.wait_state("idle", pane)
    board.report(pane, state="blocked", id="t", kind="permission", app="pytest", msg="may I?")
    board.wait_state("blocked", pane)
    page.goto(board.url + f"/#/pane/{pid}")
    view = page.locator("#pane-view")
    view.locator(".timeline tr", has_text="(now)").wait_for()
    wait_text_change = (
        "([sel, before]) => { const e = document.querySelector(sel); return e && e.textContent !== before; }"
    )
    for sel in ("#pane-view .wait", "#pane-view .timeline tr:nth-child(2) td:nth-child(3)"):
        before = page.locator(sel).inner_text()
        page.wait_for_function(wait_text_change, arg=[sel, before], timeout=10000)
    rows = view.locator(".timeline tr")
    shown = rows.count() - 1  # the header
    assert shown == 10
    more = view.locator("button.timeline-more")
    assert "older" in more.inner_text()
    more.click()
    page.wait_for_function(
        "n => document.querySelectorAll('#pane-view .timeline tr').length - 1 > n", arg=shown
    )
    assert page.errors == []


def test_keyboard_and_filters(page, board):
    page.wait_for_selector(".card")
    page.locator(".card").first.focus()
    page.keyboard.press("j")
    assert page.evaluate("document.activeElement.classList.contains('card')")
    page.select_option("#f-state", "idle")
    words = page.locator(".card .word").all_inner_texts()
    assert words and all(w == "idle" for w in words)
    page.select_option("#f-state", "")
    page.locator(".card").first.focus()
    page.keyboard.press("Enter")
    page.wait_for_selector("#pane-view:not([hidden])")


def test_web_push_end_to_end_only_when_no_tab_watches(page, board):
    key = page.evaluate("fetch('/api/push/vapid-public-key').then(r => r.json())")["key"]
    svc = PushService(expected_vapid_key=key).start()
    try:
        sub = svc.subscription()
        status = page.evaluate(
            """async (sub) => {
          const api = await import('/js/api.js');
          await api.post('/api/push/subscribe', sub);
          return 'ok';
        }""",
            sub,
        )
        assert status == "ok"
        pane, pid = new_pane(board)
        card(page, pid).wait_for()
        board.report(pane, state="blocked", msg="seen in the tab, no push")
        wait_card_state(page, pid, "blocked")
        with page.expect_request(
            lambda r: r.url.endswith("/api/watch") and '"watching":false' in (r.post_data or ""),
            timeout=15000,
        ):
            cdp = unfocus(page)
        board.report(pane, state="done", msg="nobody watching: push")
        got = svc.wait_for(1, timeout=15)
        assert len(got) == 1, [g.payload for g in got]
        [push] = got
        assert push.payload["pane"] == pid and push.payload["state"] == "done"
        assert "nobody watching: push" in push.payload["body"]
        assert int(push.headers["ttl"]) > 0 and push.headers["urgency"] == "normal"
        assert push.headers.get("topic") and len(push.headers["topic"]) <= 32
        assert push.vapid_claims["sub"] == "mailto:test@example.org"
        # The push service says the subscription is gone: the server forgets it.
        svc.status = 410
        board.report(pane, state="blocked", msg="gone")
        svc.wait_for(2, timeout=15)
        svc.status = 201
        board.report(pane, state="done", msg="after gone")
        board.report(pane, state="blocked", msg="after gone 2")
        board.wait_state("blocked", pane)
        page.wait_for_timeout(1500)  # bounded: nothing more may arrive for a deleted subscription
        assert len(svc.received) == 2
        focus(page, cdp)
    finally:
        svc.stop()


def test_apprise_channel_and_test_button(page, board, receiver):
    pane, pid = new_pane(board)
    card(page, pid).wait_for()
    board.report(pane, state="blocked", kind="auth", msg="token for the channel test")

    def got(pred):
        return [b for b in receiver.bodies if pred(b)]

    wait_for(lambda: got(lambda b: "token for the channel test" in b["message"]), what="channel message")
    [m] = got(lambda b: "token for the channel test" in b["message"])
    assert m["title"].endswith("blocked (auth)") and m["type"] == "warning"
    board.report(pane, state="done")  # this channel wants blocked only
    board.wait_state("done", pane)
    page.click("#settings-btn")
    page.click("#notify-test")
    wait_text(page, "settings-status", "test sent")
    assert "1 channel(s)" in page.locator("#settings-status").inner_text()
    wait_for(lambda: got(lambda b: b["title"] == "paneboard test"), what="test message")
    assert not got(lambda b: "done" in b["title"] and pid in b["message"])


def test_mute_and_dnd_silence_notifications(page, board, receiver):
    pane, pid = new_pane(board)
    loud, loud_id = new_pane(board)
    card(page, pid).wait_for()
    page.goto(board.url + f"/#/pane/{pid}")
    page.locator("#pane-view select.snooze").first.select_option(label="1 hour")
    wait_text(page, "banner", "muted pane")
    page.goto(board.url + "/#/")
    page.wait_for_selector("#board:not([hidden])")
    wait_for(lambda: page.evaluate("document.querySelectorAll('#mutes li').length") >= 1, what="mute listed")
    cdp = unfocus(page)
    board.report(pane, state="blocked", msg="muted pane speaks")
    board.report(loud, state="blocked", msg="loud pane speaks")
    wait_for(lambda: notes(page, loud_id), what="the unmuted pane notifies")
    wait_card_state(page, pid, "blocked")
    assert notes(page, pid) == []
    wait_for(
        lambda: [b for b in receiver.bodies if "loud pane speaks" in b["message"]], what="loud on channel"
    )
    # A plain login's mute is its own: the shared channel still hears of the pane.
    wait_for(
        lambda: [b for b in receiver.bodies if "muted pane speaks" in b["message"]], what="muted on channel"
    )

    focus(page, cdp)
    page.click("#settings-btn")
    page.check("#dnd")
    wait_text(page, "settings-status", "do not disturb on", exact=True)
    cdp = unfocus(page)
    board.report(loud, state="done", msg="dnd is on")
    wait_card_state(page, loud_id, "done")
    focus(page, cdp)
    page.uncheck("#dnd")
    wait_text(page, "settings-status", "do not disturb off", exact=True)
    cdp = unfocus(page)
    board.report(loud, state="blocked", msg="dnd is off")
    wait_for(lambda: len(notes(page, loud_id)) == 2, what="notification after DND off")
    assert "dnd is off" in notes(page, loud_id)[1]["body"]
    focus(page, cdp)


def test_service_worker_shows_a_push_tagged_per_pane(page, board):
    """sw.js's push handler, driven by Chromium's own push delivery (DevTools)."""
    page.evaluate("navigator.serviceWorker.ready.then(() => true)")
    cdp = page.context.new_cdp_session(page)
    regs: list[dict] = []
    cdp.on("ServiceWorker.workerRegistrationUpdated", lambda e: regs.extend(e["registrations"]))
    cdp.send("ServiceWorker.enable")

    def registered():
        page.wait_for_timeout(50)  # lets Playwright deliver the DevTools events
        return [r for r in regs if r["scopeURL"] == board.url + "/" and not r["isDeleted"]]

    wait_for(registered, what="the service worker's registration")
    reg = next(r for r in regs if r["scopeURL"] == board.url + "/")
    for n, msg in enumerate(["first", "second"]):
        data = json.dumps({"pane": "42", "title": "claude blocked", "body": f"{msg}\u202e push"})
        cdp.send(
            "ServiceWorker.deliverPushMessage",
            {"origin": board.url, "registrationId": reg["registrationId"], "data": data},
        )

        def shown(n=n):
            got = page.evaluate(
                """async () => (await (await navigator.serviceWorker.ready).getNotifications())
                    .map(n => ({title: n.title, tag: n.tag, body: n.body, data: n.data}))"""
            )
            return got if got and got[-1]["body"].startswith(["first", "second"][n]) else None

        got = wait_for(shown, what=f"service worker notification {n}")
    assert len(got) == 1  # the second replaced the first: same tag
    [note] = got
    assert note["tag"] == "42" and note["title"] == "claude blocked"
    assert "\u202e" not in note["body"]
    assert note["data"]["url"] == "/#/pane/42/screen"  # opens with the screen in view
    cdp.detach()


def test_quiet_hours_hold_browser_notifications(page, board):
    pane, pid = new_pane(board)
    card(page, pid).wait_for()
    page.click("#settings-btn")
    # A window around the browser's "now", in its own time zone.
    start, end = page.evaluate(
        """() => { const f = d => d.toTimeString().slice(0, 5);
                   const n = Date.now(); return [f(new Date(n - 3600e3)), f(new Date(n + 3600e3))]; }"""
    )
    page.fill("#qh-start", start)
    page.fill("#qh-end", end)
    page.click("#qh-save")
    wait_text(page, "settings-status", "quiet hours saved", exact=True)
    quiet = page.evaluate("fetch('/api/notify/quiet').then(r => r.json())")
    assert quiet["quiet_hours"]["start"] == start and quiet["quiet_hours"]["end"] == end
    cdp = unfocus(page)
    board.report(pane, state="blocked", msg="during quiet hours")
    wait_card_state(page, pid, "blocked")
    assert notes(page, pid) == []
    focus(page, cdp)
    page.click("#qh-clear")
    wait_text(page, "settings-status", "quiet hours cleared", exact=True)
    cdp = unfocus(page)
    board.report(pane, state="done", msg="after quiet hours")
    wait_for(lambda: notes(page, pid), what="notification once quiet hours are gone")
    focus(page, cdp)


def test_unreachable_host_shows_last_known_state_with_age(page, board):
    pane, pid = new_pane(board)
    board.report(pane, state="blocked", msg="last thing we knew")
    wait_card_state(page, pid, "blocked")
    board.stop_collector()
    try:
        c = card(page, pid)
        wait_for(lambda: "host unreachable" in c.inner_text(), timeout=30, what="unreachable marker")
        text = c.inner_text()
        assert "blocked" in text and "last thing we knew" in text  # the last known state stays
        assert re.search(r"last known \d+ s ago", text)
        # a blocked card sits in the waiting section (naming its host when the board has
        # more than one: here it has one); the host's own group says it is unreachable
        assert page.locator(".group.waiting").locator(f".card[data-id='{pid}']").count() == 1
        assert "unreachable" in page.locator(".group:not(.waiting):not(.hosts-down) h2").first.inner_text()
        before = c.locator(".wait").inner_text()  # a blocked card tells its wait
        page.wait_for_function(  # the clocks tick
            "([id, t]) => document.querySelector(`.card[data-id='${id}'] .wait`).textContent !== t",
            arg=[pid, before],
            timeout=5000,
        )
    finally:
        board.start_collector()
    wait_for(lambda: "host unreachable" not in card(page, pid).inner_text(), timeout=30, what="reachable")


def test_reconnecting_banner_and_resume_after_server_restart(page, board):
    """Last in the module: it restarts the server."""
    pane, pid = new_pane(board)
    card(page, pid).wait_for()
    board.stop_server()
    page.wait_for_selector("#banner:not([hidden])")
    assert "reconnecting" in page.locator("#banner").inner_text()
    board.report(pane, state="blocked", msg="written while the server was down")
    board.start_server()
    wait_card_state(page, pid, "blocked", timeout=30000)
    page.wait_for_selector("#banner", state="hidden")
    assert "written while the server was down" in card(page, pid).inner_text()
