"""The board in a real Chromium against a real server fed by a real collector."""

from __future__ import annotations

import pytest

from support.tmux import wait_for

pytestmark = [pytest.mark.browser, pytest.mark.tmux]


def card(page, board, pane=None):
    p = next(p for p in board.panes() if p["pane"] == (pane or board.pane))
    return page.locator(f".card[data-id='{p['id']}']")


def test_a_report_in_tmux_changes_the_card_without_reload(page, board):
    page.evaluate("window.__sameDocument = true")
    c = card(page, board)
    c.wait_for()
    board.report(state="working", app="pytest")
    board.wait_state("working")
    page.wait_for_function(
        "id => document.querySelector(`.card[data-id='${id}'] .word`).textContent === 'working'",
        arg=c.get_attribute("data-id"),
    )
    board.report(state="blocked", kind="question", msg="Which branch should I use?")
    wait_for(lambda: "blocked" in c.inner_text(), what="card shows blocked")
    text = c.inner_text()
    assert "question" in text and "Which branch should I use?" in text
    assert page.evaluate("window.__sameDocument") is True  # no reload happened
    assert "1 blocked" in page.title()
    assert page.evaluate("document.getElementById('favicon').href").startswith("data:image/png")
    assert page.errors == []
