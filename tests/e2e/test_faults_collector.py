"""Faults on the collector's side: the collector process killed, the tmux server killed.

Whole stack, for real (tmux behind sshd, collector, server, Chromium). The server runs
with a short grace period so "unreachable after the grace period" is seconds, not 30 s.
"""

from __future__ import annotations

import signal
import time

import pytest
from support.tmux import TmuxServer
from support.wait import wait_for

from .stack import HOST, Beating, open_board, wait_card

pytestmark = [pytest.mark.browser, pytest.mark.tmux, pytest.mark.sshd]

GRACE = 3.0


ANY_UNREACHABLE = (
    "() => [...document.querySelectorAll('.group .host-status')]"
    ".some(e => e.textContent.includes('unreachable'))"
)


def one_each(stack, panes: list[str]) -> None:
    """Exactly one board entry per tmux pane: nothing duplicated."""
    rows = [p for p in stack.panes() if p["host"] == HOST]
    assert sorted(p["pane"] for p in rows) == sorted(panes), rows


def test_collector_killed_hosts_turn_unreachable_after_grace_and_recover(stack_factory, browser) -> None:
    stack = stack_factory(grace=GRACE)
    a = Beating(stack, "a", "working", "compiling")
    b = Beating(stack, "b", "blocked", "Allow?")
    page = open_board(browser, stack)
    wait_card(page, a.id, "working")
    wait_card(page, b.id, "blocked")
    assert all(p["reachable"] for p in stack.panes())

    stack.kill_collector(signal.SIGKILL)
    killed = time.time()
    # within the grace period the board keeps trusting the host
    time.sleep(GRACE / 3)
    rows = stack.panes()
    if time.time() < killed + GRACE - 0.5:  # a stalled machine could have slept past it
        assert all(p["reachable"] and not p["stale"] for p in rows), rows
    gone = wait_for(
        lambda: all(not p["reachable"] and p["stale"] for p in stack.panes()) and time.time(),
        timeout=GRACE + 20,
        what="hosts unreachable after the grace period",
    )
    assert gone >= killed + GRACE - 0.1
    # they keep their last state, marked stale, and the page says the host is away
    by_pane = {p["pane"]: p for p in stack.panes()}
    assert by_pane[a.pane]["state"] == "working" and by_pane[b.pane]["state"] == "blocked"
    page.wait_for_function(ANY_UNREACHABLE)

    # the collector returns: reachable again, current state, still one card per pane
    b.set("done", "merged")
    stack.start_collector()
    wait_for(
        lambda: all(p["reachable"] and not p["stale"] for p in stack.panes()),
        timeout=30,
        what="hosts reachable again",
    )
    wait_card(page, b.id, "done")
    wait_card(page, a.id, "working")
    one_each(stack, [stack.pane, a.pane, b.pane])
    page.wait_for_function(f"() => !({ANY_UNREACHABLE})()")
    ids = page.eval_on_selector_all(".card", "els => els.map(e => e.dataset.id)")
    assert sorted(ids) == sorted(str(p["id"]) for p in stack.panes())
    assert page.errors == []
    page.context.close()


def test_tmux_server_killed_its_panes_leave_the_board(stack_factory, browser) -> None:
    stack = stack_factory(grace=GRACE)
    a = Beating(stack, "a", "blocked", "Which branch?")
    page = open_board(browser, stack)
    wait_card(page, a.id, "blocked")
    old_ids = {str(p["id"]) for p in stack.panes()}
    assert len(old_ids) == 2

    name = stack.tmux.name
    stack.tmux.kill()
    wait_for(lambda: not [p for p in stack.panes() if p["host"] == HOST], timeout=30, what="panes gone")
    page.wait_for_function("() => document.querySelectorAll('.card').length === 0", timeout=20_000)
    # the history says why they left
    for pid in old_ids:
        with pytest.raises(Exception, match="404"):
            stack.api(f"/api/panes/{pid}")

    # a new tmux server under the same name reuses pane ids (%0): the board shows a new,
    # unclassified pane, not the old one's state
    stack.tmux = TmuxServer(name).start("work")
    new = wait_for(lambda: stack.panes(), timeout=60, what="the new tmux server's pane")
    assert len(new) == 1 and new[0]["pane"] == "%0" and new[0]["state"] is None, new
    page.wait_for_function("() => document.querySelectorAll('.card').length === 1", timeout=20_000)
    assert page.errors == []
    page.context.close()
