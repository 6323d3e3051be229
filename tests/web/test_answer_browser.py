"""The phone flow in Chromium: a blocked Claude-like pane (a real program that asks and
waits, in real tmux) is answered from a phone-sized page in two taps, and continues;
its screen is shown as text with its colours, never as markup."""

from __future__ import annotations

import os
import shlex
import sys
from typing import Any

import pytest
from support.stack import PASSWORD, Paneboard
from support.tmux import TmuxServer
from support.wait import wait_for

from .conftest import _need_browser

EVIL = "<img src=x onerror=window.__pwned=1><b>bold?</b>"


def asker() -> str:
    path = shlex.quote(os.pathsep.join(p for p in sys.path if p))
    py = shlex.quote(sys.executable)
    inner = f"PYTHONPATH={path} exec -a claude {py} -m paneboard.demo_ask permission --once"
    return f"bash -c {shlex.quote(inner)}"


@pytest.fixture(scope="module")
def stack(tmp_path_factory: Any) -> Any:
    _need_browser()
    pb = Paneboard(tmp_path_factory.mktemp("pb-answer"))
    pb.start(collector=False)
    pb.tmux = TmuxServer().start("work")
    pb.pane = pb.tmux.panes()[0]
    pb.start_collector("--allow-input")
    pb.cli("user", "add", "olga", "--operator", stdin=PASSWORD + "\n")
    try:
        yield pb
    finally:
        pb.close()


def test_answer_from_a_phone_in_two_taps(browser: Any, stack: Paneboard) -> None:
    pb = stack
    assert pb.tmux is not None
    pb.tmux.send(pb.pane, f"printf '%s\\n' '{EVIL}'")  # markup on a screen stays text
    pane = pb.tmux.new_window("work", "ask", asker())
    row = wait_for(
        lambda: next((p for p in pb.panes() if p["pane"] == pane and p["state"] == "blocked"), None),
        timeout=30,
        what="the asker blocked",
    )
    ctx = browser.new_context(
        base_url=pb.url, viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True
    )
    try:
        page = ctx.new_page()
        page.goto(pb.url + "/")
        page.fill("#login-user", "olga")
        page.fill("#login-pass", PASSWORD)
        page.click("button[type=submit]")
        page.wait_for_selector("html[data-stream='live']")
        card = page.locator(f".card[data-id='{row['id']}']")
        card.locator(".markers").filter(has_text="takes answers").wait_for()
        # tap 1: "show screen" on the blocked card
        card.locator(".show-screen").tap()
        page.wait_for_url(f"**/#/pane/{row['id']}/screen")
        page.locator("pre.screen").filter(has_text="Do you want to proceed?").wait_for(timeout=20000)
        coloured = page.locator("pre.screen span").filter(has_text="Do you want to proceed?").first
        assert coloured.evaluate("e => getComputedStyle(e).fontWeight") in ("700", "bold")
        yes = page.locator(".answers button.answer", has_text="Yes").first
        yes.wait_for()
        assert page.locator(".answers button.answer").all_inner_texts()[:3] == [
            "Yes",
            "Yes, and don't ask again for rm commands in /srv/project",
            "No",
        ]
        # tap 2: the answer
        yes.tap()
        page.locator(".answer-outcome", has_text="typed").wait_for(timeout=20000)
        wait_for(lambda: "ANSWERED yes" in pb.tmux.cmd("capture-pane", "-p", "-t", pane), timeout=20)
        # the page follows the screen live
        page.locator("pre.screen", has_text="ANSWERED yes").wait_for(timeout=20000)
        page.locator("table.audit td", has_text="typed").wait_for()
        # the shell pane's screen shows the markup as text
        page.goto(pb.url + f"/#/pane/{next(p['id'] for p in pb.panes() if p['pane'] == pb.pane)}/screen")
        page.locator("pre.screen", has_text="onerror").wait_for(timeout=20000)
        assert page.locator("pre.screen img").count() == 0 and page.locator("pre.screen b").count() == 0
        assert page.evaluate("window.__pwned") is None
    finally:
        ctx.close()
