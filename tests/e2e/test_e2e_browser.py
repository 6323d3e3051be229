"""The whole path, for real: a report written in a tmux pane travels through sshd,
the collector, the server and its live stream, and changes the card in Chromium."""

from __future__ import annotations

import pytest

from .stack import HOST, card_word, open_board, wait_card

pytestmark = [pytest.mark.browser, pytest.mark.tmux, pytest.mark.sshd]


def test_a_report_in_a_pane_appears_on_the_page(stack, browser) -> None:
    page = open_board(browser, stack)
    pane, pid = stack.new_pane("agent")
    row = stack.pane_row(pane)
    assert row is not None and row["host"] == HOST  # it came over SSH, not local tmux
    page.locator(f".card[data-id='{pid}']").wait_for()
    assert card_word(page, pid) != "blocked"

    stack.report(pane, state="working", app="claude")
    wait_card(page, pid, "working")
    stack.report(pane, state="blocked", kind="permission", msg="Apply 3 to add?")
    wait_card(page, pid, "blocked")
    text = page.locator(f".card[data-id='{pid}']").inner_text()
    assert "Apply 3 to add?" in text and "(permission)" in text
    stack.report(pane, state="done", msg="All green")
    wait_card(page, pid, "done")

    # hostile text from a pane reaches the page as text, never as markup
    evil = '<img src=x onerror="window.__pwned=1"><b>bold</b>'
    stack.report(pane, state="blocked", kind="question", msg=evil)
    wait_card(page, pid, "blocked")
    card = page.locator(f".card[data-id='{pid}']")
    assert evil in card.inner_text()
    assert card.locator("img, b").count() == 0
    assert page.evaluate("window.__pwned") is None
    stack.report(pane, state="done", msg="All green again")
    wait_card(page, pid, "done")

    # the page shows what the server stored: same state, no reload, no script errors
    assert stack.pane_row(pane)["state"] == "done"
    assert page.errors == []
    page.context.close()
