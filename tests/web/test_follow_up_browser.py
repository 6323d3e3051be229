"""A follow-up from the pane's page in Chromium, on a phone: a program at an idle input
prompt drawn as Claude Code draws it (tests/support/idle_prompt.py, started as `claude`,
in real tmux) gets the operator's text as one submission, several lines included; Esc
asks for a confirmation first. Screenshot for docs/answers.md."""

from __future__ import annotations

import json
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
PROGRAM = Path(__file__).resolve().parents[1] / "support" / "idle_prompt.py"
PHONE = {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True}
DESKTOP = {"viewport": {"width": 1440, "height": 900}}


@pytest.fixture(scope="module")
def stack(tmp_path_factory: Any) -> Any:
    _need_browser()
    pb = Paneboard(tmp_path_factory.mktemp("pb-follow"))
    pb.start(collector=False)
    pb.tmux = TmuxServer().start("work")
    pb.start_collector("--allow-input")
    pb.cli("user", "add", "olga", "--operator", stdin=PASSWORD + "\n")
    try:
        yield pb
    finally:
        pb.close()


def _records(path: Path) -> list[dict[str, str]]:
    return [json.loads(ln) for ln in path.read_text(encoding="utf-8").splitlines()] if path.exists() else []


def test_follow_up_from_a_phone(browser: Any, stack: Paneboard, tmp_path: Path) -> None:
    pb = stack
    assert pb.tmux is not None
    record = tmp_path / "record.jsonl"
    inner = f"exec -a claude {shlex.quote(sys.executable)} {shlex.quote(str(PROGRAM))} {record}"
    pane = pb.tmux.new_window("work", "agent", f"bash -c {shlex.quote(inner)}")
    row = wait_for(
        lambda: next((p for p in pb.panes() if p["pane"] == pane and p["state"] == "idle"), None),
        timeout=30,
        what="the agent idle",
    )
    ctx = browser.new_context(base_url=pb.url, **PHONE)
    try:
        page = ctx.new_page()
        page.goto(pb.url + "/")
        page.fill("#login-user", "olga")
        page.fill("#login-pass", PASSWORD)
        page.click("button[type=submit]")
        page.wait_for_selector("html[data-stream='live']")
        page.goto(pb.url + f"/#/pane/{row['id']}/screen")
        box = page.locator(".send-box .follow-up textarea")
        box.wait_for(timeout=20000)
        box.fill("run the tests\nthen commit")
        IMG.mkdir(exist_ok=True)
        page.screenshot(path=str(IMG / "follow-up-phone.png"))
        page.locator(".send-box .follow-up button[type=submit]").tap()
        page.locator(".answer-outcome.ok", has_text="typed").wait_for(timeout=20000)
        wait_for(lambda: _records(record), timeout=20, what="the submission")
        assert _records(record) == [{"submitted": "run the tests\nthen commit"}]
        page.locator("pre.screen", has_text="You said: run the tests / then commit").wait_for(timeout=20000)
        # Esc: confirmed first; dismissed, nothing is sent
        asked: list[str] = []
        page.once("dialog", lambda d: (asked.append(d.message), d.dismiss()))
        page.locator(".quick-keys button[data-press='Escape']").tap()
        wait_for(lambda: asked, timeout=10, what="the confirmation")
        assert "Esc" in asked[0]
        page.once("dialog", lambda d: d.accept())
        page.locator(".quick-keys button[data-press='Escape']").tap()
        wait_for(lambda: len(_records(record)) == 2, timeout=20, what="the Escape")
        assert _records(record)[1] == {"key": "Escape"}
        page.locator("table.audit td", has_text="key Escape").wait_for(timeout=20000)
    finally:
        ctx.close()
    # the same page on a desktop, for docs/answers.md
    ctx = browser.new_context(base_url=pb.url, **DESKTOP)
    try:
        page = ctx.new_page()
        page.goto(pb.url + "/")
        page.fill("#login-user", "olga")
        page.fill("#login-pass", PASSWORD)
        page.click("button[type=submit]")
        page.wait_for_selector("html[data-stream='live']")
        page.goto(pb.url + f"/#/pane/{row['id']}/screen")
        page.locator(".send-box .follow-up textarea").wait_for(timeout=20000)
        page.locator(".quick-keys").wait_for()
        page.screenshot(path=str(IMG / "follow-up-desktop.png"))
    finally:
        ctx.close()
