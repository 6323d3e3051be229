"""A follow-up from an idle or done card (issue #44), in Chromium against a real server,
a real collector and real tmux: a program drawn as Claude Code draws its input prompt
(tests/support/idle_prompt.py, started as `claude`) records what it is sent.

- "Tell it what next" opens, in the card, the last rows of the pane's screen and a text
  box; nothing is asked of the pane's screen before (a card nobody opened costs no
  capture), and closing it ends the watch's request. The send names the fingerprint of
  the screen the preview drew: the text is typed exactly as written.
- Text typed at the terminal after the preview was drawn (the page held from drawing
  anything newer) makes the send come back `changed`, nothing typed; the preview then
  shows the screen as it is, pane text as text, and the same box sends again.
- A viewer without the operator role gets the card's sentence why, and no capture; a
  screen that takes no follow-up (a shell's) opens on its sentence, not a box.
- From a done notification to a sent follow-up: the taps counted (docs/answers.md).

The pictures in docs/answers.md are taken here (docs/img/card-next-*.png)."""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import sys
from pathlib import Path
from typing import Any

import pytest
from support.pushendpoint import PushService
from support.stack import PASSWORD, Paneboard
from support.tmux import TmuxServer
from support.wait import wait_for

from .conftest import _need_browser
from .test_board_browser import unfocus
from .test_push_answer import CLOSE_ALL, NOTES, SUBSCRIBE, _registration

pytestmark = [pytest.mark.browser, pytest.mark.tmux]

IMG = Path(__file__).resolve().parents[2] / "docs" / "img"
PROGRAM = Path(__file__).resolve().parents[1] / "support" / "idle_prompt.py"
PHONE = {
    "viewport": {"width": 390, "height": 844},
    "is_mobile": True,
    "has_touch": True,
    "device_scale_factor": 2,
}
DESKTOP = {"viewport": {"width": 1440, "height": 900}, "has_touch": True}
SCREEN = re.compile(r"/api/panes/[0-9]+/screen")
#: what someone types at the terminal meanwhile: markup, which the card shows as text
TERMINAL = "<b>fix</b> & <img src=x onerror=alert(1)>"
#: taps from a done notification to a sent follow-up: open the notification, send
#: (the follow-up box has the focus when the pane's page opens; docs/answers.md)
TAPS_TO_FOLLOW_UP = ["open the notification", "Send"]


@pytest.fixture(scope="module")
def stack(tmp_path_factory: Any) -> Any:
    _need_browser()
    pb = Paneboard(
        tmp_path_factory.mktemp("pb-cardnext"),
        notify={"subject": "mailto:test@example.org", "push_allow_local": True, "group_window": 0.5},
    )
    pb.start(collector=False)
    pb.tmux = TmuxServer().start("work")
    pb.start_collector("--allow-input")
    pb.cli("user", "add", "olga", "--operator", stdin=PASSWORD + "\n")
    pb.cli("user", "add", "vera", stdin=PASSWORD + "\n")
    try:
        yield pb
    finally:
        pb.close()


def _records(path: Path) -> list[dict[str, str]]:
    return [json.loads(ln) for ln in path.read_text(encoding="utf-8").splitlines()] if path.exists() else []


def _agent(pb: Paneboard, record: Path, window: str, *extra: str) -> tuple[str, dict[str, Any]]:
    """An agent at its input prompt in a new window: its tmux pane and its board row."""
    assert pb.tmux is not None
    args = " ".join(shlex.quote(a) for a in (str(PROGRAM), str(record), *extra))
    # named `claude`, Python finds no venv of its own: it gets this one's path
    path = shlex.quote(os.pathsep.join(p for p in sys.path if p))
    inner = f"PYTHONPATH={path} exec -a claude {shlex.quote(sys.executable)} {args}"
    pane = pb.tmux.new_window("work", window, f"bash -c {shlex.quote(inner)}")
    row = wait_for(
        lambda: next((p for p in pb.panes() if p["pane"] == pane and p["state"] == "idle"), None),
        timeout=30,
        what="the agent idle",
    )
    if "--done" in extra:  # the collector has the pane: the turn ends (the program reports done)
        wait_for(lambda: "for shortcuts" in pb.tmux.cmd("capture-pane", "-p", "-t", pane), what="its screen")
        pid = pb.tmux.cmd("display-message", "-p", "-t", pane, "#{pane_pid}").strip()
        os.kill(int(pid), signal.SIGUSR1)
        row = wait_for(
            lambda: next((p for p in pb.panes() if p["pane"] == pane and p["state"] == "done"), None),
            timeout=30,
            what="the agent done",
        )
    return pane, row


def _login(browser: Any, pb: Paneboard, who: str, device: dict[str, Any]) -> tuple[Any, Any, list[str]]:
    """A signed-in board, and the screen requests it makes from now on."""
    ctx = browser.new_context(base_url=pb.url, **device)
    page = ctx.new_page()
    asked: list[str] = []
    page.on("request", lambda r: asked.append(r.url) if SCREEN.search(r.url) else None)
    page.goto(pb.url + "/login")
    page.fill("#login-user", who)
    page.fill("#login-pass", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_selector("html[data-stream='live']")
    return ctx, page, asked


def _leave(ctx: Any) -> None:
    """Close the board's tabs as a person closes them (each page's pagehide runs, which
    tells the server the tab watches no more), then the browser (which may cut that
    word short: a later test that needs nobody watching signs in as someone else)."""
    for tab in ctx.pages:
        with tab.expect_event("close"):
            tab.close(run_before_unload=True)
    ctx.close()


def _open_preview(page: Any, row: dict[str, Any], first_row: str) -> Any:
    card = page.locator(f".card[data-id='{row['id']}']")
    card.locator(".card-next-open").tap()
    card.locator(".card-preview-screen .screen-row", has_text=first_row).first.wait_for(timeout=30000)
    return card


def test_a_card_sends_a_follow_up_exactly_as_shown(browser: Any, stack: Paneboard, tmp_path: Path) -> None:
    pb = stack
    record = tmp_path / "record.jsonl"
    _, row = _agent(pb, record, "agent")
    ctx, page, asked = _login(browser, pb, "olga", PHONE)
    try:
        card = page.locator(f".card[data-id='{row['id']}']")
        card.locator(".card-next-open").wait_for(timeout=30000)
        assert "Tell it what next" in card.locator(".card-next-open").inner_text()
        assert asked == [], "a card nobody opened asks for no screen"
        card = _open_preview(page, row, "Ready. All 3 tests pass.")
        # the screen's last rows: the answer above the input box, the box, its footer
        rows = card.locator(".card-preview-screen .screen-row").all_inner_texts()
        assert len(rows) <= 8 and rows[-1].strip() == "? for shortcuts", rows
        assert any(r.startswith("\u276f") for r in rows), rows
        text = card.locator(".card-follow-up textarea")
        text.fill("run the tests\nthen commit")
        IMG.mkdir(exist_ok=True)
        card.scroll_into_view_if_needed()
        page.screenshot(path=str(IMG / "card-next-phone.png"))
        assert _records(record) == []
        card.locator(".card-follow-up button[type=submit]").tap()
        card.locator(".card-answer-outcome.ok", has_text="typed").wait_for(timeout=20000)
        wait_for(lambda: _records(record), timeout=20, what="the submission")
        assert _records(record) == [{"submitted": "run the tests\nthen commit"}]
        assert text.input_value() == ""
        # the preview is live: the agent's answer to it shows
        said = card.locator(".card-preview-screen .screen-row", has_text="You said: run the tests / then")
        said.wait_for(timeout=20000)
        audit = pb.api(f"/api/panes/{row['id']}/answers")["answers"]
        assert [(a["who"], a["outcome"]) for a in audit] == [("olga", "typed")]
        # closing the preview ends the watch's request in flight: nothing asks any more
        with page.expect_event("requestfailed", predicate=lambda r: SCREEN.search(r.url) is not None):
            card.locator(".card-next-close").tap()
        card.locator(".card-next-open").wait_for()
        assert card.locator(".card-preview-screen").count() == 0
    finally:
        _leave(ctx)
    ctx, page, asked = _login(browser, pb, "olga", DESKTOP)
    try:  # the desktop's picture
        card = _open_preview(page, row, "You said: run the tests / then commit")
        card.locator(".card-follow-up textarea").fill("now push it")
        page.screenshot(path=str(IMG / "card-next-desktop.png"))
    finally:
        _leave(ctx)


def test_text_typed_at_the_terminal_after_the_preview_makes_it_changed(
    browser: Any, stack: Paneboard, tmp_path: Path
) -> None:
    pb = stack
    assert pb.tmux is not None
    record = tmp_path / "record.jsonl"
    pane, row = _agent(pb, record, "changed")
    ctx, page, _ = _login(browser, pb, "olga", DESKTOP)
    held: list[Any] = []
    hold = [True]

    def route(r: Any) -> None:
        if hold[0] and "since=" in r.request.url:
            held.append(r)  # the preview's long polls are held back: it draws nothing newer
        else:
            r.continue_()  # its first ask (no `since`) draws the screen as it is

    try:
        drawn = "All 3 tests pass"
        wait_for(lambda: drawn in pb.tmux.cmd("capture-pane", "-p", "-t", pane), what="its screen")
        page.route(SCREEN, route)
        card = _open_preview(page, row, "Ready. All 3 tests pass.")
        card.locator(".card-follow-up textarea").fill("deploy it")
        # the preview asks for what comes after the screen it drew: that ask is held
        wait_for(lambda: (page.wait_for_timeout(100), held)[1], timeout=60, what="the preview's next ask")
        pb.tmux.cmd("send-keys", "-t", pane, "-l", TERMINAL)
        wait_for(lambda: TERMINAL in pb.tmux.cmd("capture-pane", "-p", "-t", pane), what="the typed text")
        assert card.locator(".card-preview-screen", has_text="<b>fix").count() == 0  # still the old preview
        card.locator(".card-follow-up button[type=submit]").click()
        failed = card.locator(".card-answer-outcome.failed", has_text="changed since the preview")
        failed.wait_for(timeout=20000)
        assert _records(record) == []
        assert "deploy it" not in pb.tmux.cmd("capture-pane", "-p", "-t", pane)
        # the page draws the screen as it is now: the terminal's text, as text
        hold[0] = False
        for r in held:
            r.continue_()
        card.locator(".card-preview-screen .screen-row", has_text=TERMINAL).wait_for(timeout=30000)
        assert card.locator(".card-preview-screen img, .card-preview-screen b").count() == 0
        assert card.locator(".card-follow-up textarea").input_value() == "deploy it"
        # and it sends again, on the screen it now shows (the box holds the terminal's text)
        card.locator(".card-follow-up button[type=submit]").click()
        card.locator(".card-answer-outcome.ok", has_text="typed").wait_for(timeout=20000)
        wait_for(lambda: _records(record), timeout=20, what="the submission")
        assert _records(record) == [{"submitted": TERMINAL + "deploy it"}]
        audit = pb.api(f"/api/panes/{row['id']}/answers")["answers"]
        assert [a["outcome"] for a in audit] == ["typed", "changed"]
    finally:
        _leave(ctx)


def test_where_nothing_can_be_sent_the_card_says_why(browser: Any, stack: Paneboard, tmp_path: Path) -> None:
    pb = stack
    assert pb.tmux is not None
    _, row = _agent(pb, tmp_path / "record.jsonl", "viewer")
    # a shell that reports an agent's done: its collector types nothing into a shell
    shell = pb.tmux.new_window("work", "shell")
    pb.report(shell, state="done", app="claude-code", msg="Finished in a shell")
    done = pb.wait_state("done", shell)
    ctx, page, asked = _login(browser, pb, "vera", PHONE)  # a login without the operator role
    try:
        card = page.locator(f".card[data-id='{row['id']}']")
        card.locator(".card-send .card-why", has_text="needs the operator role").wait_for(timeout=30000)
        assert card.locator(".card-next-open").count() == 0
        assert asked == []
    finally:
        _leave(ctx)
    ctx, page, asked = _login(browser, pb, "olga", PHONE)
    try:  # no input prompt on that screen: the preview says so in place of the box
        card = _open_preview(page, done, "printf")
        why = card.locator(".card-next-panel .card-why", has_text="reads no input prompt on this screen")
        why.wait_for(timeout=30000)
        assert card.locator(".card-follow-up textarea").is_disabled()
        assert card.locator(".card-follow-up button[type=submit]").is_disabled()
    finally:
        _leave(ctx)


def test_taps_from_a_done_notification_to_a_sent_follow_up(
    browser: Any, stack: Paneboard, tmp_path: Path
) -> None:
    pb = stack
    # an operator of her own: the tabs the tests before closed with their browsers may
    # not have been heard going (a browser that quits can drop the tab's last word), and
    # the server counts them as watching for its watch TTL
    pb.cli("user", "add", "nina", "--operator", stdin=PASSWORD + "\n")
    ctx = browser.new_context(base_url=pb.url, **PHONE)
    ctx.grant_permissions(["notifications"], origin=pb.url)
    svc: PushService | None = None
    taps: list[str] = []
    try:
        # nina looked at the board on another tab and closed it: a closed tab holds back
        # no push (it said so as it went, not after the server's watch TTL)
        first = ctx.new_page()
        first.goto(pb.url + "/login")
        first.fill("#login-user", "nina")
        first.fill("#login-pass", PASSWORD)
        first.click("button[type=submit]")
        first.wait_for_selector("html[data-stream='live']")
        watching = '"watching":true'
        with first.expect_response(
            lambda r: r.url.endswith("/api/watch") and r.ok and watching in (r.request.post_data or ""),
            timeout=15000,
        ):
            first.reload()  # the board as a signed-in tab opens it: the server hears it watches
        with first.expect_event("close"):
            first.close(run_before_unload=True)
        page = ctx.new_page()
        page.goto(pb.url)
        page.wait_for_selector("html[data-stream='live']")
        page.evaluate("navigator.serviceWorker.ready.then(() => true)")
        key = page.evaluate("fetch('/api/push/vapid-public-key').then(r => r.json())")["key"]
        svc = PushService(expected_vapid_key=key).start()
        sub = svc.subscription()
        page.evaluate(SUBSCRIBE, sub)
        with page.expect_request(
            lambda r: r.url.endswith("/api/watch") and '"watching":false' in (r.post_data or ""),
            timeout=15000,
        ):
            unfocus(page)  # nina is not looking at the board: the push is for her phone
        record = tmp_path / "record.jsonl"
        _, row = _agent(pb, record, "done", "--done")
        push = next(p for p in svc.wait_for(1, timeout=40) if p.payload.get("state") == "done")
        assert push.payload["pane"] == str(row["id"])
        cdp, reg = _registration(page, pb.url)
        page.evaluate(CLOSE_ALL)
        cdp.send(
            "ServiceWorker.deliverPushMessage",
            {"origin": pb.url, "registrationId": str(reg), "data": json.dumps(push.payload)},
        )
        note = wait_for(lambda: next(iter(page.evaluate(NOTES)), None), what="the done notification")
        cdp.detach()
        # tap 1: the notification's body opens its address (the worker's `openPane`,
        # which only a real click may run: a window opened on it, as a phone does)
        assert [a["action"] for a in note["actions"]] == ["open"]  # a done pane: no answers
        assert note["data"]["url"] == f"/#/pane/{row['id']}/screen"
        page = ctx.new_page()
        page.goto(pb.url + note["data"]["url"])
        taps.append("open the notification")
        # the pane's page opens on the reply with the follow-up box focused: type at once
        page.wait_for_function("() => document.activeElement?.matches('.send-box .follow-up textarea')")
        page.keyboard.type("run the tests")
        # tap 2: Send
        page.locator(".send-box .follow-up button[type=submit]").tap()
        taps.append("Send")
        page.locator(".answer-outcome.ok", has_text="typed").wait_for(timeout=20000)
        wait_for(lambda: _records(record), timeout=20, what="the submission")
        assert _records(record) == [{"submitted": "run the tests"}]
        assert taps == TAPS_TO_FOLLOW_UP
    finally:
        _leave(ctx)
        if svc is not None:
            svc.stop()
