"""The board as a person reads it (issue #16), in a real Chromium against a real
server fed by a real collector: the question on the card and the title labelled
apart, the last known state of a pane behind ssh, error counted and notified, the
pane page's timeline, markers and switches, who is signed in, the live wait, a
copyable attach command that really attaches, and the fields the page reads.
"""

from __future__ import annotations

import re
import secrets
import shlex

import pytest
from support.stack import osc7501
from support.tmux import TmuxServer, printf_cmd
from support.wait import wait_for

from .conftest import login
from .test_board_browser import card, focus, new_pane, notes, unfocus, wait_card_state

pytestmark = [pytest.mark.browser, pytest.mark.tmux]


def osc_title(text: str) -> bytes:
    return b"\x1b]2;" + text.encode() + b"\x07"


def run_held(board, pane: str, *chunks: bytes) -> None:
    """Write these bytes from one program that then stays in front (as an agent does):
    a title set by a program lasts only while that program runs (TA-18)."""
    line = f"{printf_cmd(*chunks)}; exec sleep 600"
    board.tmux.send(pane, f"sh -c {shlex.quote(line)}")


def test_title_is_labelled_apart_from_the_msg_and_msg_is_the_question(page, board):
    pane, pid = new_pane(board)
    card(page, pid).wait_for()
    run_held(
        board,
        pane,
        osc_title("\u280b Release build"),
        osc7501(state="blocked", kind="permission", msg="Do you want to proceed?", app="pytest"),
    )
    wait_card_state(page, pid, "blocked")
    c = card(page, pid)
    wait_for(lambda: c.locator(".title-line").is_visible(), what="the title line")
    assert c.locator(".msg").inner_text() == "Do you want to proceed?"
    assert "question" in (c.locator(".msg").get_attribute("class") or "")
    title = c.locator(".title-line").inner_text()
    assert title.lower().startswith("title") and "Release build" in title
    assert "\u280b" not in c.inner_text()  # the spinner glyph is stripped
    board.tmux.cmd("send-keys", "-t", pane, "C-c")
    # A pane with a title and no msg: the title is not shown as if it were the msg.
    run_held(board, pane, osc_title("\u2733 Claude Code"), osc7501(state="working", app="pytest"))
    wait_card_state(page, pid, "working")
    wait_for(lambda: "Claude Code" in c.locator(".title-line").inner_text(), what="the new title")
    assert c.locator(".msg").text_content() == ""
    assert "\u2733" not in c.locator(".title-line").inner_text()
    page.goto(board.url + f"/#/pane/{pid}")
    page.wait_for_selector("#pane-view .title-line")
    assert page.locator("#pane-view .title-line").inner_text().lower().startswith("title")
    board.tmux.cmd("send-keys", "-t", pane, "C-c")
    assert page.errors == []


def test_pane_behind_ssh_shows_its_last_known_state_quietly(page, board):
    pane, pid = new_pane(board)
    board.report(pane, state="blocked", kind="permission", msg="Deploy to prod?")
    wait_card_state(page, pid, "blocked")
    # A real ssh in front (its connection held by a proxy that never answers): the
    # report behind it can no longer be observed.
    board.tmux.send(pane, "ssh -o BatchMode=yes -o ProxyCommand='sleep 600' paneboard-test.invalid")

    def hidden():
        p = next(p for p in board.panes() if str(p["id"]) == pid)
        return p if p["state"] is None and not p["observable"] else None

    api = wait_for(hidden, timeout=20, what="the pane unobservable, without a state")
    lk = api["last_known"]
    assert lk["state"] == "blocked" and lk["kind"] == "permission" and lk["msg"] == "Deploy to prod?"
    assert lk["at"] >= lk["since"]
    c = card(page, pid)
    wait_for(lambda: "last known: blocked (permission)" in c.inner_text(), what="the last known line")
    text = c.inner_text()
    assert re.search(r"last known: blocked \(permission\), \d+ s ago", text), text
    assert "Deploy to prod?" in text
    marker = c.locator(".markers span", has_text="not observable")
    weight, colour, error = marker.evaluate(
        """e => { const probe = document.createElement('span'); probe.style.color = 'var(--error)';
                  document.body.append(probe); const err = getComputedStyle(probe).color; probe.remove();
                  const s = getComputedStyle(e); return [s.fontWeight, s.color, err]; }"""
    )
    assert int(weight) < 600 and colour != error, (weight, colour, error)  # not bold, not red
    board.tmux.cmd("send-keys", "-t", pane, "C-c")
    assert page.errors == []


def test_error_is_counted_in_the_header_and_notified(page, board):
    pane, pid = new_pane(board)
    card(page, pid).wait_for()
    handle = unfocus(page)
    board.report(pane, state="error", msg="build failed: 3 tests")
    wait_for(lambda: notes(page, pid), what="a notification for the error")
    [n] = notes(page, pid)
    assert "error" in n["title"] and "build failed" in n["body"]
    counts = page.locator("#counts").inner_text()
    assert re.search(r"[1-9]\d* error", counts), counts
    assert re.search(r"[1-9]\d* error", page.title())
    focus(page, handle)
    board.report(pane, state="idle")
    wait_card_state(page, pid, "idle")


def test_timeline_msg_cells_stay_in_their_rows(page, board):
    pane, pid = new_pane(board)
    card(page, pid).wait_for()
    board.report(pane, state="working", id="t", app="pytest", msg="compiling")
    wait_card_state(page, pid, "working")
    board.report(pane, state="blocked", id="t", app="pytest", kind="question", msg="Merge now? " * 30)
    wait_card_state(page, pid, "blocked")
    board.report(pane, state="done", id="t", app="pytest", msg="")
    wait_card_state(page, pid, "done")
    page.goto(board.url + f"/#/pane/{pid}")
    page.wait_for_function("() => document.querySelectorAll('#pane-view .timeline tr').length >= 4")
    rows = page.evaluate(
        """() => [...document.querySelectorAll('#pane-view .timeline tr')].map(tr => ({
            top: tr.getBoundingClientRect().top, bottom: tr.getBoundingClientRect().bottom,
            cells: [...tr.children].map(td => ({display: getComputedStyle(td).display,
                                               top: td.getBoundingClientRect().top,
                                               bottom: td.getBoundingClientRect().bottom}))}))"""
    )
    widths = {len(r["cells"]) for r in rows}
    assert widths == {5}, rows
    for r in rows:
        for cell in r["cells"]:
            assert cell["display"] == "table-cell", r
            assert abs(cell["top"] - r["top"]) < 1.5 and abs(cell["bottom"] - r["bottom"]) < 1.5, r
    assert page.errors == []


def test_no_card_wears_a_focus_ring_on_load(page, board):
    _pane, pid = new_pane(board)
    card(page, pid).wait_for()
    page.reload()
    page.wait_for_selector("html[data-ready='1']")
    card(page, pid).wait_for()
    assert page.evaluate("document.activeElement === document.body")
    assert page.locator(".card:focus-visible").count() == 0
    page.keyboard.press("j")  # the keys still start from the first card
    assert page.evaluate("document.activeElement.classList.contains('card')")


def test_sound_switch_is_off_by_default_and_remembered(page):
    btn = page.locator("#sound-btn")
    assert btn.get_attribute("aria-pressed") == "false" and "off" in btn.inner_text().lower()
    btn.click()
    assert btn.get_attribute("aria-pressed") == "true" and "on" in btn.inner_text().lower()
    page.reload()
    page.wait_for_selector("html[data-ready='1']")
    assert page.locator("#sound-btn").get_attribute("aria-pressed") == "true"


def test_disabled_seen_button_looks_disabled(page, board):
    _pane, pid = new_pane(board)
    page.goto(board.url + f"/#/pane/{pid}")
    seen = page.locator("#pane-view button.seen")
    seen.wait_for()
    assert seen.is_disabled()
    # Read from the button in the document at that moment: the pane view re-renders as
    # its data arrives, and a replaced (detached) button has no computed style ("").
    style = page.wait_for_function(
        """() => {
          const e = document.querySelector('#pane-view button.seen');
          const s = e && e.isConnected ? getComputedStyle(e) : null;
          return s && s.opacity !== '' ? [s.opacity, s.cursor] : null;
        }"""
    ).json_value()
    opacity, cursor = style
    assert float(opacity) <= 0.6 and cursor == "not-allowed"
    assert page.errors == []


def test_muted_pane_carries_a_marker(page, board):
    _pane, pid = new_pane(board)
    page.goto(board.url + f"/#/pane/{pid}")
    snooze = page.locator("#pane-view select.snooze").first
    assert "for you" in snooze.get_attribute("aria-label")  # a plain login mutes for itself alone
    snooze.select_option(label="15 min")
    page.wait_for_function("() => document.getElementById('banner').textContent.startsWith('muted pane')")
    page.goto(board.url + "/#/")
    wait_for(lambda: "muted" in card(page, pid).locator(".markers").inner_text(), what="the muted marker")
    # the Notifications panel says whose mute it is
    wait_for(lambda: f"pane {pid}" in (page.locator("#mutes").text_content() or ""), what="the mute listed")
    assert "(only you)" in (page.locator("#mutes").text_content() or "")
    assert page.errors == []


def test_phone_is_compact_and_offers_no_desktop_notifications_without_the_api(browser, board):
    phone = browser.new_context(
        viewport={"width": 360, "height": 740}, device_scale_factor=2, is_mobile=True, has_touch=True
    )
    phone.add_init_script("delete window.Notification;")
    try:
        p = phone.new_page()
        login(p, board)
        p.wait_for_selector(".card")
        assert not p.locator("#filters").is_visible() and not p.locator("#sound-btn").is_visible()
        assert p.locator("#tools-btn").is_visible()
        # Issue 24 item 9: Stats, Notifications and Sign out stay in reach, not behind Filters.
        for el in ("#settings-btn", "#stats-link", "#sign-out", "#who-name"):
            assert p.locator(el).is_visible(), el
        height = p.evaluate("document.getElementById('top').getBoundingClientRect().height")
        assert height < 110, height  # two short lines, not a third of the screen
        assert p.evaluate("document.activeElement === document.body")
        p.click("#tools-btn")
        assert p.locator("#filters").is_visible() and p.locator("#sound-btn").is_visible()
        p.click("#settings-btn")
        p.wait_for_selector("#settings:not([hidden])")
        assert not p.locator("#enable-notify").is_visible()
    finally:
        phone.close()


def test_viewer_link_offers_sign_in_and_a_bad_token_gets_a_page(browser, board):
    ctx = browser.new_context()
    try:
        p = ctx.new_page()
        p.goto(board.url + f"/?token={board.viewer_token}")
        p.wait_for_selector("html[data-ready='1']")
        who = p.locator("#who")
        assert "wall" in who.inner_text() and "read-only" in who.inner_text()
        assert p.locator("#sign-in").is_visible() and not p.locator("#sign-out").is_visible()
        p.click("#sign-in")
        p.wait_for_url(board.url + "/login")
        r = p.goto(board.url + "/?token=pbv_not-a-real-token")
        assert r is not None and r.status == 401
        assert "text/html" in r.headers["content-type"]
        text = p.locator("body").inner_text()
        assert "not valid" in text and "{" not in text
        assert p.locator("a[href='/login']").is_visible()
    finally:
        ctx.close()


def test_signed_in_shows_who_and_signs_out(browser, board):
    ctx = browser.new_context()
    try:
        p = ctx.new_page()
        login(p, board)
        assert "ann" in p.locator("#who-name").inner_text()
        assert p.locator("#sign-out").is_visible() and not p.locator("#sign-in").is_visible()
        p.click("#sign-out")
        p.wait_for_url(board.url + "/login")
        assert p.evaluate("fetch('/api/me').then(r => r.status)") == 401
    finally:
        ctx.close()


def test_blocked_cards_count_the_wait_live_longest_first(page, board):
    first, first_id = new_pane(board)
    second, second_id = new_pane(board)
    board.report(first, state="blocked", kind="question", msg="first question")
    wait_card_state(page, first_id, "blocked")
    page.wait_for_timeout(1100)  # the two waits differ by a second at least
    board.report(second, state="blocked", kind="question", msg="second question")
    wait_card_state(page, second_id, "blocked")
    wait = card(page, first_id).locator(".wait")
    text = wait.inner_text()
    assert re.fullmatch(r"waiting since \d{1,2}:\d{2}(\s?[AP]M)? \(\d+ s\)", text), text
    page.wait_for_function(  # counted live
        "([id, t]) => document.querySelector(`.card[data-id='${id}'] .wait`).textContent !== t",
        arg=[first_id, text],
        timeout=5000,
    )
    ids = page.evaluate("[...document.querySelectorAll('.card.st-blocked')].map(c => c.dataset.id)")
    assert ids.index(first_id) < ids.index(second_id)  # the longest wait first
    assert re.search(r"\(\d+ waiting, longest \d+ (s|min)", page.title()), page.title()
    for pane in (first, second):
        board.report(pane, state="idle")


def test_every_blocked_card_is_on_top_longest_wait_first_whatever_its_session(page, board):
    """Blocked cards of different tmux sessions (different groups) are not ordered by
    group: the one waiting longest comes first, then the next, wherever they run."""
    a1, a1_id = new_pane(board)  # session "work"
    b1 = board.tmux.new_session(f"other{secrets.token_hex(2)}")
    row = wait_for(
        lambda: next((p for p in board.panes() if p["pane"] == b1), None), timeout=20, what="the new pane"
    )
    b1_id = str(row["id"])
    a2, a2_id = new_pane(board)
    for pane, pid in ((a1, a1_id), (b1, b1_id), (a2, a2_id)):
        board.report(pane, state="blocked", kind="question", msg=f"question of {pid}")
        wait_card_state(page, pid, "blocked")
        page.wait_for_timeout(1100)  # waits a second apart at least
    section = page.locator(".group.waiting")
    ids = section.locator(".card").evaluate_all("cs => cs.map(c => c.dataset.id)")
    assert [i for i in ids if i in (a1_id, b1_id, a2_id)] == [a1_id, b1_id, a2_id]
    assert page.locator(".group").first.get_attribute("class") == "group waiting"
    assert re.fullmatch(r"Waiting on you · \d+", section.locator("h2 .group-name").inner_text())
    # Outside its group, but the board has one host: its name on the card would say
    # nothing the group headers do not (issue 24 item 9); see test_board_plain for two.
    where = card(page, b1_id).locator(".where").inner_text()
    assert where.startswith(f"{row['session']}:") and row["host"] not in where, where
    board.report(b1, state="working")  # no longer waiting: back in its session's group
    wait_card_state(page, b1_id, "working")
    assert section.locator(f".card[data-id='{b1_id}']").count() == 0
    assert " · " not in card(page, b1_id).locator(".where").inner_text()  # its group header names it
    for pane in (a1, b1, a2):
        board.report(pane, state="idle")


def test_attach_command_is_copyable_and_attaches(page, board):
    pane, pid = new_pane(board, "attach-me")
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=board.url)
    c = card(page, pid)
    c.wait_for()
    window = next(p["window"] for p in board.panes() if str(p["id"]) == pid)
    index = window.split(":", 1)[0]
    want = f"tmux -L {board.tmux.name} attach -t work:{index}.{pane}"  # local: no ssh
    assert c.locator(".copy-attach").get_attribute("data-cmd") == want
    c.locator(".copy-attach").click()
    wait_for(lambda: page.evaluate("navigator.clipboard.readText()") == want, what="the command copied")
    assert "#/pane/" not in page.url  # copying did not open the pane
    # The command really attaches to that pane: run it in a terminal of another tmux.
    outer = TmuxServer()
    try:
        outer.start("outer", command=f"env -u TMUX {want}")

        def attached():
            out = board.tmux.cmd("list-clients", "-F", "#{client_control_mode} #{session_name} #{pane_id}")
            return [line for line in out.splitlines() if line.startswith("0 ")]

        [line] = wait_for(attached, what="a terminal client attached")
        assert line.split() == ["0", "work", pane]
    finally:
        outer.kill()
    page.goto(board.url + f"/#/pane/{pid}")
    assert page.locator("#pane-view .attach-cmd").inner_text() == want
    assert page.errors == []


def test_model_reads_exactly_the_fields_the_server_sends(page, board):
    pane, pid = new_pane(board)
    board.report(pane, state="blocked", kind="question", msg="fields?")
    board.wait_state("blocked", pane)
    sent = next(p for p in board.panes() if str(p["id"]) == pid)
    got = page.evaluate(
        """async (raw) => {
          const m = await import('/js/model.js');
          const read = new Set();
          const spy = new Proxy(raw, {get(t, k) { if (typeof k === 'string') read.add(k); return t[k]; }});
          const model = m.normalise(spy);
          const added = m.normalise({...raw, trial_field_2: {x: 1}});
          return {read: [...read].sort(), fields: m.PANE_FIELDS, model: Object.keys(model),
                  added: added.trialField2};
        }""",
        sent,
    )
    assert set(got["read"]) <= set(sent), set(got["read"]) - set(sent)  # nothing guessed at
    assert set(got["fields"]) <= set(sent), set(got["fields"]) - set(sent)  # read by name: sent
    assert set(got["read"]) == set(sent)  # and nothing the server sends forgotten
    assert {re.sub(r"_([a-z0-9])", lambda m: m[1].upper(), k) for k in sent} <= set(got["model"])
    # A field the server starts sending (one added to the pane definition) reaches the page.
    assert got["added"] == {"x": 1}
