"""The phone flow in Chromium: a blocked Claude-like pane (a real program that asks and
waits, in real tmux) is answered from a phone-sized page in two taps, and continues;
its screen is shown as text with its colours, never as markup. The page offers only
what works (a viewer link without screens gets neither "show screen" nor answers, and a
sentence instead of an HTTP status), shows the prompt's context above the buttons, and
confirms an answer that changes a policy before sending it."""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest
from support.stack import PASSWORD, Paneboard
from support.tmux import TmuxServer
from support.wait import wait_for

from .conftest import _need_browser

EVIL = "<img src=x onerror=window.__pwned=1><b>bold?</b>"
IMG = Path(__file__).resolve().parents[2] / "docs" / "img"
# Draws a character, and a private-use one no font has, in the element's font; true when
# the two differ, i.e. the character is not the missing-glyph box.
GLYPH_DRAWN = """(e, ch) => {
  const ink = (c) => {
    const cv = document.createElement("canvas");
    cv.width = cv.height = 40;
    const g = cv.getContext("2d");
    const cs = getComputedStyle(e);
    g.font = `${cs.fontSize} ${cs.fontFamily}`;
    g.fillText(c, 5, 30);
    return g.getImageData(0, 0, 40, 40).data.join(",");
  };
  return ink(ch) !== ink("\\u{10FFFD}");
}"""
PHONE = {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True}


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


@pytest.fixture(scope="module")
def blocked(stack: Paneboard) -> dict[str, Any]:
    """The asker, blocked on its permission question (answered by the last test)."""
    pb = stack
    assert pb.tmux is not None
    pb.tmux.send(pb.pane, f"printf '%s\\n' '{EVIL}'")  # markup on a screen stays text
    pane = pb.tmux.new_window("work", "ask", asker())
    row: dict[str, Any] = wait_for(
        lambda: next((p for p in pb.panes() if p["pane"] == pane and p["state"] == "blocked"), None),
        timeout=30,
        what="the asker blocked",
    )
    return row


def test_a_viewer_without_screens_is_offered_neither_screen_nor_answers(
    browser: Any, stack: Paneboard, blocked: dict[str, Any]
) -> None:
    pb = stack
    ctx = browser.new_context(base_url=pb.url, **PHONE)
    try:
        page = ctx.new_page()
        page.goto(pb.url + f"/?token={pb.viewer_token}")
        page.wait_for_selector("html[data-stream='live']")
        card = page.locator(f".card[data-id='{blocked['id']}']")
        card.locator(".wait").wait_for()
        assert card.locator(".show-screen").is_hidden()
        assert card.locator(".markers").inner_text().find("takes answers") == -1
        # the screen's address typed by hand: a sentence that says what to do, no status
        page.goto(pb.url + f"/#/pane/{blocked['id']}/screen")
        said = page.locator(".screen-panel p.muted", has_text="Screens are not shown")
        said.wait_for(timeout=20000)
        text = said.inner_text()
        assert "403" not in text and "/api/" not in text and "ask the board's owner" in text.lower()
        assert page.locator(".answers button").count() == 0
        # any other failed request is a sentence too, never "METHOD URL: STATUS"
        msg = page.evaluate(
            "import('/js/api.js').then(m => m.get('/api/panes/nope/events').then(() => '', e => e.message))"
        )
        assert msg and not msg.startswith("GET") and "/api/" not in msg and msg.endswith(".")
    finally:
        ctx.close()


def test_answer_from_a_phone_in_two_taps(browser: Any, stack: Paneboard, blocked: dict[str, Any]) -> None:
    pb = stack
    assert pb.tmux is not None
    row = blocked
    pane = row["pane"]
    ctx = browser.new_context(base_url=pb.url, **PHONE)
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
        # the context comes first: the screen's prompt is above every button (both read
        # in one step: a redraw takes the panel out of the page and back between two)
        tops = page.evaluate(
            """() => [document.querySelector("pre.screen"), document.querySelector(".answers button.answer")]
                .map(e => e && e.getBoundingClientRect().top)"""
        )
        assert None not in tops and tops[0] < tops[1], tops
        IMG.mkdir(exist_ok=True)
        page.locator("pre.screen").evaluate("e => e.scrollIntoView({block: 'start'})")
        page.screenshot(path=str(IMG / "answer-phone.png"))
        # the default answer is the primary one; the policy-changing one asks first
        assert "primary" in (yes.get_attribute("class") or "")
        policy = page.locator(".answers button.answer", has_text="don't ask again")
        assert "primary" not in (policy.get_attribute("class") or "")
        asked: list[str] = []
        page.once("dialog", lambda d: (asked.append(d.message), d.dismiss()))
        policy.tap()
        wait_for(lambda: asked, timeout=10, what="the confirmation")
        assert "don't ask again" in asked[0]
        assert page.locator(".answer-outcome").count() == 0  # dismissed: nothing sent
        # a glyph the agents draw has a font: drawn in the screen's font it differs from a
        # code point no font has (the missing-glyph box)
        assert page.locator("pre.screen").evaluate(GLYPH_DRAWN, "⎿")
        # tap 2: the answer
        yes.tap()
        page.locator(".answer-outcome.ok", has_text="typed").wait_for(timeout=20000)
        assert page.locator("#banner").get_attribute("data-kind") == "ok"
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
