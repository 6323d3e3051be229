"""The answer under the thumb, and reading what the agent said (issue #44), in Chromium
at 390×844 (a phone) and 1440×900, against real tmux panes and a real collector.

- A blocked pane's page, opened from its card or at the address a notification opens,
  has its prompt and every answer button in the first screen, its screen's trailing
  blank rows trimmed, its lines wrapped at ≥ 14 px (nothing scrolls sideways), and the
  attach command and mutes below the answers.
- A blocked card offers the push's answers ("1. Yes", "No"; never "don't ask again")
  and types one on the second tap, through the same request and fingerprint check as
  the page: a double-tap confirms nothing. "⌨ takes answers" shows only where this
  prompt offers answers or text; otherwise the card says why in a sentence.
- A done pane's page opens at the end of the agent's last reply, scroll-back included.

The pictures in docs/answers.md are taken here (docs/img/thumb-*.png)."""

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

IMG = Path(__file__).resolve().parents[2] / "docs" / "img"
PHONE = {
    "viewport": {"width": 390, "height": 844},
    "is_mobile": True,
    "has_touch": True,
    "device_scale_factor": 2,
}
DESKTOP = {"viewport": {"width": 1440, "height": 900}}
ASK = ("-m", "paneboard.demo_ask")
IDLE = Path(__file__).resolve().parents[1] / "support" / "idle_prompt.py"  # drawn as Claude Code idles

# A program named like Claude Code that draws and reports what the test needs.
PRELUDE = """
import sys, time
from paneboard.demo_agents import _out, _set_process_name
from paneboard_protocol.encode import encode_report
_set_process_name("claude")
time.sleep(1.5)  # the collector names the pane's program before it reads the screen
"""
# Blocked by its own report, on a screen no rule of the manifest reads: no answer.
UNRECOGNISED = (
    PRELUDE
    + """
_out("\\x1b[2J\\x1b[HDeploy build 812 to production?\\r\\nType the change ticket to go on: ")
_out(encode_report("blocked", app="claude-code", kind="permission", msg="Deploy build 812 to production?"))
while True:
    time.sleep(3600)
"""
)
LONG = "src/" + "very_long_module_name/" * 3 + "parser.py"  # wider than a phone, narrower than the pane
# Done: a reply longer than the window (its start in the scroll-back), then the input box.
REPLY = (
    PRELUDE
    + f"""
rule = "\\u2500" * 118
out = ["\\x1b[2J\\x1b[H> Explain the change", "\\u25cf Here is what changed, file by file:"]
out += [f"  reply line {{i}}: the parser now reads item {{i}}" for i in range(1, 61)]
out += ["  {LONG} was split in two.", "  Last line of the reply.", ""]
out += [rule, "\\u276f ", rule, "  ? for shortcuts"]
_out("\\r\\n".join(out))
_out(encode_report("done", app="claude-code", msg="Explained the change"))
while True:
    time.sleep(3600)
"""
)


def _run(argv0: str, *args: str) -> str:
    """A pane's command: this Python with `args`, named `argv0` (tmux's pane command)."""
    path = shlex.quote(os.pathsep.join(p for p in sys.path if p))
    name = f"-a {argv0} " if argv0 else ""
    inner = f"PYTHONPATH={path} exec {name}{shlex.quote(sys.executable)} {' '.join(map(shlex.quote, args))}"
    return f"bash -c {shlex.quote(inner)}"


@pytest.fixture(scope="module")
def stack(tmp_path_factory: Any) -> Any:
    _need_browser()
    tmp = tmp_path_factory.mktemp("pb-thumb")
    pb = Paneboard(tmp)
    pb.start(collector=False)
    pb.tmux = TmuxServer().start("work")
    pb.pane = pb.tmux.panes()[0]
    pb.start_collector("--allow-input")
    pb.cli("user", "add", "olga", "--operator", stdin=PASSWORD + "\n")
    pb.cli("user", "add", "vera", stdin=PASSWORD + "\n")
    scripts = {}
    for name, text in (("unrecognised", UNRECOGNISED), ("reply", REPLY)):
        scripts[name] = tmp / f"{name}.py"
        scripts[name].write_text(text)
    panes = {
        "approve": pb.tmux.new_window("work", "approve", _run("claude", *ASK, "permission", "--once")),
        "unrecognised": pb.tmux.new_window("work", "deploy", _run("claude", str(scripts["unrecognised"]))),
        "question": pb.tmux.new_window("work", "ask", _run("", *ASK, "question", "--once")),
        "reply": pb.tmux.new_window("work", "explain", _run("claude", str(scripts["reply"]))),
    }
    want = {
        "approve": "blocked",
        "unrecognised": "blocked",
        "question": "blocked",
        "reply": "done",
    }
    pb.rows = {}
    for name, pane in panes.items():
        pb.rows[name] = wait_for(
            lambda pane=pane, name=name: next(
                (p for p in pb.panes() if (p["pane"], p["state"]) == (pane, want[name])), None
            ),
            timeout=60,
            what=f"the {name} pane {want[name]}",
        )
    pb.panes_of = panes
    try:
        yield pb
    finally:
        pb.close()


def _login(browser: Any, pb: Paneboard, who: str, device: dict[str, Any]) -> Any:
    ctx = browser.new_context(base_url=pb.url, **device)
    page = ctx.new_page()
    page.goto(pb.url + "/login")
    page.fill("#login-user", who)
    page.fill("#login-pass", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_selector("html[data-stream='live']")
    return ctx, page


def _no_sideways_scroll(page: Any) -> None:
    assert page.evaluate("document.documentElement.scrollWidth <= document.documentElement.clientWidth")
    assert page.evaluate(
        "[...document.querySelectorAll('pre.screen')].every(e => e.scrollWidth <= e.clientWidth)"
    )
    size = page.locator("pre.screen").evaluate("e => parseFloat(getComputedStyle(e).fontSize)")
    assert size >= 14, size


def _box(page: Any, selector: str) -> dict[str, float]:
    got = page.locator(selector).first.evaluate(
        "e => { const r = e.getBoundingClientRect(); return {top: r.top, bottom: r.bottom}; }"
    )
    return dict(got)


def _prompt_in_the_first_screen(page: Any, height: int) -> None:
    """Every answer button and the prompt's last lines in the viewport; nothing
    trailing; attach and mutes below the answers."""
    page.locator(".answers button.answer", has_text="Yes").first.wait_for(timeout=30000)
    page.wait_for_function(
        "() => document.querySelector('.answers').getBoundingClientRect().bottom <= innerHeight"
    )
    buttons = page.locator(".answers button.answer")
    assert buttons.count() == 3
    for i in range(3):
        b = buttons.nth(i).evaluate("e => { const r = e.getBoundingClientRect(); return [r.top, r.bottom]; }")
        assert b[0] >= 0 and b[1] <= height, (i, b)
    question = page.locator(".screen-row", has_text="Do you want to proceed?")
    q = question.evaluate("e => { const r = e.getBoundingClientRect(); return [r.top, r.bottom]; }")
    pre = _box(page, "pre.screen")
    assert q[0] >= 0 and q[1] <= height and pre["top"] <= q[0] and q[1] <= pre["bottom"] + 1, (q, pre)
    last = page.locator("pre.screen .screen-row").last.inner_text()
    assert last.strip(), "a trailing blank row was drawn"
    answers = _box(page, ".answers")
    assert _box(page, "#pane-view .attach")["top"] >= answers["bottom"]
    assert _box(page, "#pane-view select.snooze")["top"] >= answers["bottom"]
    _no_sideways_scroll(page)


def test_a_blocked_pane_opens_on_its_prompt_and_buttons(browser: Any, stack: Paneboard) -> None:
    pb = stack
    row = pb.rows["approve"]
    ctx, page = _login(browser, pb, "olga", PHONE)
    try:
        # from the board: a tap on the card's body opens the pane's page
        page.locator(f".card[data-id='{row['id']}'] .where").tap()
        page.wait_for_url(f"**/#/pane/{row['id']}")
        _prompt_in_the_first_screen(page, 844)
        IMG.mkdir(exist_ok=True)
        page.screenshot(path=str(IMG / "thumb-prompt-phone.png"))
        # from a notification (the address web/sw.js opens), on a fresh page
        page.goto(pb.url + "/")
        page.wait_for_selector("html[data-stream='live']")
        page.goto(pb.url + f"/#/pane/{row['id']}/screen")
        page.reload()
        page.wait_for_selector("html[data-stream='live']")
        _prompt_in_the_first_screen(page, 844)
    finally:
        ctx.close()
    ctx, page = _login(browser, pb, "olga", DESKTOP)
    try:
        page.goto(pb.url + f"/#/pane/{row['id']}/screen")
        page.reload()
        page.wait_for_selector("html[data-stream='live']")
        _prompt_in_the_first_screen(page, 900)
        page.screenshot(path=str(IMG / "thumb-prompt-desktop.png"))
    finally:
        ctx.close()


def test_a_blocked_card_answers_in_two_taps_and_a_double_tap_confirms_nothing(
    browser: Any, stack: Paneboard
) -> None:
    pb = stack
    row = pb.rows["approve"]
    pane = pb.panes_of["approve"]
    ctx, page = _login(browser, pb, "olga", DESKTOP)
    try:  # the desktop's picture: the card's answers, by the push's rule
        card = page.locator(f".card[data-id='{row['id']}']")
        card.locator(".card-answer", has_text="1. Yes").wait_for(timeout=30000)
        page.screenshot(path=str(IMG / "thumb-card-desktop.png"))
    finally:
        ctx.close()
    ctx, page = _login(browser, pb, "olga", PHONE)
    try:
        card = page.locator(f".card[data-id='{row['id']}']")
        yes = card.locator(".card-answer", has_text="1. Yes")
        yes.wait_for(timeout=30000)
        assert card.locator(".card-answer").all_inner_texts() == ["1. Yes", "No"]  # never "don't ask again"
        assert "takes answers" in card.locator(".markers").inner_text()
        # read in one step: a redraw of the board takes the card out and puts it back
        was = page.evaluate(
            """sel => { const e = document.querySelector(sel); if (!e) return null;
                const r = e.getBoundingClientRect();
                return {x: r.x, y: r.y, width: r.width, height: r.height}; }""",
            f".card[data-id='{row['id']}'] .card-answer",
        )
        assert was and was["y"] + was["height"] <= 844, was
        # a double-tap arms the confirmation and no more: its second tap lands on the question
        yes.dblclick()
        confirm = card.locator(".card-confirm")
        confirm.wait_for()
        under = page.evaluate(
            "([x, y]) => document.elementFromPoint(x, y).closest('.card-confirm') === null",
            [was["x"] + was["width"] / 2, was["y"] + was["height"] / 2],
        )
        assert under, "the confirmation sits under the first tap"
        assert "1. Yes" in card.locator(".card-confirm-q").inner_text()
        page.screenshot(path=str(IMG / "thumb-card-phone.png"))
        assert "ANSWERED" not in pb.tmux.cmd("capture-pane", "-p", "-t", pane)
        # the second tap types it, through the page's request and fingerprint check
        confirm.tap()
        wait_for(lambda: "ANSWERED yes" in pb.tmux.cmd("capture-pane", "-p", "-t", pane), timeout=30)
        audit = wait_for(lambda: pb.api(f"/api/panes/{row['id']}/answers")["answers"] or None, timeout=10)
        # one attempt in all: neither double-click sent anything
        assert [(a["who"], a["answer"], a["outcome"]) for a in audit] == [("olga", "yes", "typed")], audit
    finally:
        ctx.close()


def test_a_card_says_why_it_offers_no_answer(browser: Any, stack: Paneboard, tmp_path: Path) -> None:
    pb = stack
    ids = {name: pb.rows[name]["id"] for name in ("unrecognised", "question")}
    ctx, page = _login(browser, pb, "olga", PHONE)
    try:

        def card(name: str) -> Any:
            return page.locator(f".card[data-id='{ids[name]}']")

        unknown = card("unrecognised").locator(".card-why", has_text="does not recognise this prompt")
        unknown.wait_for(timeout=30000)
        assert "takes answers" not in card("unrecognised").locator(".markers").inner_text()
        assert card("unrecognised").locator(".card-answer").count() == 0
        # free text only: it takes answers, typed on its page
        card("question").locator(".card-why", has_text="takes a typed answer").wait_for(timeout=30000)
        assert "takes answers" in card("question").locator(".markers").inner_text()
    finally:
        ctx.close()
    ctx, page = _login(browser, pb, "vera", PHONE)  # a login without the operator role
    try:
        c = page.locator(f".card[data-id='{ids['unrecognised']}']")
        c.locator(".card-why", has_text="needs the operator role").wait_for(timeout=30000)
        assert "takes answers" not in c.locator(".markers").inner_text()
        assert page.locator(".card-answer").count() == 0
    finally:
        ctx.close()
    # a host whose collector runs without --allow-input: the same prompt, no answers; an
    # idle agent there takes no follow-up, and its card says so in place of the box
    plain = Paneboard(tmp_path / "plain")
    try:
        plain.start()
        plain.cli("user", "add", "olga", "--operator", stdin=PASSWORD + "\n")
        assert plain.tmux is not None
        pane = plain.tmux.new_window("work", "approve", _run("claude", *ASK, "permission", "--once"))
        idle = plain.tmux.new_window("work", "idle", _run("claude", str(IDLE), str(tmp_path / "typed.jsonl")))

        def row_of(pane: str, state: str) -> dict[str, Any] | None:
            return next((p for p in plain.panes() if (p["pane"], p["state"]) == (pane, state)), None)

        row = wait_for(
            lambda: row_of(pane, "blocked"), timeout=60, what="the asker blocked on a host that types nothing"
        )
        idle_row = wait_for(
            lambda: row_of(idle, "idle"), timeout=60, what="an agent idle on a host that types nothing"
        )
        ctx, page = _login(browser, plain, "olga", PHONE)
        try:
            c = page.locator(f".card[data-id='{row['id']}']")
            c.locator(".card-why", has_text="without --allow-input").wait_for(timeout=30000)
            assert "takes answers" not in c.locator(".markers").inner_text()
            assert c.locator(".card-answer").count() == 0
            n = page.locator(f".card[data-id='{idle_row['id']}']")
            n.locator(".card-send .card-why", has_text="runs without --allow-input").wait_for(timeout=30000)
            assert n.locator(".card-next-open").count() == 0
        finally:
            ctx.close()
    finally:
        plain.close()


def _reply_in_view(page: Any, height: int) -> None:
    end = page.locator(".screen-row", has_text="Last line of the reply.")
    end.wait_for(timeout=30000)
    page.locator(".screen-row", has_text="reply line 1:").wait_for()  # its start, from the scroll-back
    page.wait_for_function(
        """() => { const pre = document.querySelector('pre.screen');
                   return pre && pre.scrollTop > 0; }"""
    )
    pre = _box(page, "pre.screen")
    e = end.evaluate("e => { const r = e.getBoundingClientRect(); return [r.top, r.bottom]; }")
    assert pre["top"] <= e[0] and e[1] <= pre["bottom"] and e[0] >= 0 and e[1] <= height, (e, pre)
    # the input box below the reply is out of the screen's view: the page opens at the reply
    prompt = page.locator(".screen-row", has_text="\u276f").last
    p = prompt.evaluate("e => e.getBoundingClientRect().top")
    assert p >= pre["bottom"] - 1, (p, pre)
    if height == 844:  # the line wider than a phone wraps instead of scrolling sideways
        long_row = page.locator(".screen-row", has_text="was split in two")
        assert long_row.evaluate("e => e.offsetHeight > 1.5 * parseFloat(getComputedStyle(e).lineHeight)")
    _no_sideways_scroll(page)


def test_a_done_pane_opens_at_the_end_of_its_reply(browser: Any, stack: Paneboard) -> None:
    pb = stack
    row = pb.rows["reply"]
    for device, height, name in ((PHONE, 844, "phone"), (DESKTOP, 900, "desktop")):
        ctx, page = _login(browser, pb, "olga", device)
        try:
            page.locator(f".card[data-id='{row['id']}'] .where").click()
            page.wait_for_url(f"**/#/pane/{row['id']}")
            _reply_in_view(page, height)
            page.screenshot(path=str(IMG / f"thumb-reply-{name}.png"))
            # where it opens is the screen API's `reply_end`: above the input box the
            # manifest places, not the screen's last row
            shot = page.evaluate(
                "id => fetch(`/api/panes/${id}/screen?scrollback=200`).then(r => r.json())", row["id"]
            )
            lines, end = shot["lines"], shot["reply_end"]
            assert "Last line of the reply." in lines[end], lines[end - 2 : end + 3]
            assert any("for shortcuts" in ln for ln in lines[end + 1 :])
        finally:
            ctx.close()
