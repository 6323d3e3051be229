"""A wait whose report goes stale stays a wait (issue 24 item 2), in a real Chromium
against a real server fed by a real collector.

The demo's `remote` agent: behind a process named `ssh` (unobservable), its THINKTERM
contract says `blocked` with a `ts` a few seconds from going stale, and its question is
on its screen. Once the report is stale the pane has no state, but nothing says it
stopped waiting: the board keeps it in "Waiting on you" as "possibly still waiting —
last seen …", counted apart, until the pane says something newer; and the ledger's
row of that wait keeps the question the card showed.
"""

from __future__ import annotations

import os
import re
import shlex
import sys

import pytest
from support.wait import wait_for

from .conftest import login
from .test_board_browser import card, new_pane, wait_card_state

pytestmark = [pytest.mark.browser, pytest.mark.tmux]

QUESTION = "Approve the deploy to staging?"
#: seconds from the contract's start to its staleness: long enough for the collector to
#: see it fresh (a contract stale on arrival identifies nothing, RI-1)
STALE_AFTER = 12


def remote_agent() -> str:
    path = shlex.quote(os.pathsep.join(p for p in sys.path if p))
    py = shlex.quote(sys.executable)
    inner = (
        f"PANEBOARD_DEMO_STALE_AFTER={STALE_AFTER} PYTHONPATH={path} "
        f"exec -a ssh {py} -m paneboard.demo_agents remote"
    )
    return f"bash -c {shlex.quote(inner)}"


def test_a_stale_blocked_report_stays_among_the_waits_as_possibly_waiting(page, board):
    login(page, board)
    pane, pid = new_pane(board)
    board.tmux.send(pane, remote_agent())
    wait_card_state(page, pid, "blocked", timeout=20_000)
    c = card(page, pid)
    wait_for(lambda: QUESTION in c.locator(".msg").inner_text(), what="the question off the screen")
    shown = c.locator(".msg").inner_text()

    # The report goes stale: no state any more, but the pane stays among the waits.
    wait_card_state(page, pid, "possibly waiting", timeout=(STALE_AFTER + 20) * 1000)
    row = next(p for p in board.panes() if str(p["id"]) == pid)
    assert row["state"] is None and row["last_known"]["reason"] == "stale", row
    assert page.locator(f".group.waiting .card[data-id='{pid}']").count() == 1
    assert "maybe-waiting" in (c.get_attribute("class") or "")
    # no answer from the board, and the card says why in a sentence
    assert "hides the agent from its collector" in c.locator(".card-why").inner_text()
    assert c.locator(".card-answer").count() == 0
    wait = c.locator(".wait")
    assert wait.is_visible()
    said = wait.inner_text()
    assert re.fullmatch(r"possibly still waiting — last seen .+, \d+ s ago", said), said
    assert c.locator(".agent").inner_text() == "remote-agent"
    assert c.locator(".msg").inner_text() == shown
    assert not c.locator(".last-known").is_visible()
    # Counted apart: in the section's header and the page's, never as blocked.
    header = page.locator(".group.waiting .group-name").inner_text()
    assert header == "Waiting on you · 1 possibly", header
    counts = page.locator("#counts").inner_text()
    assert "1 possibly waiting" in counts and "blocked" not in counts, counts
    assert "waiting" not in page.title()

    # The ledger's row of this wait keeps the question the card showed.
    blocks = [b for b in board.api("/api/blocks")["blocks"] if str(b["pane_id"]) == pid]
    assert [(b["msg"], b["ended"]) for b in blocks] == [(shown, "stale")], blocks

    # Something newer is known (the program ended, the shell is in front): no longer a wait.
    board.tmux.cmd("send-keys", "-t", pane, "C-c")
    page.wait_for_function(
        "(id) => !document.querySelector(`.group.waiting .card[data-id='${id}']`)", arg=pid, timeout=20_000
    )
    assert "possibly" not in page.locator("#counts").inner_text()
    assert page.errors == []
