"""sshd killed mid-stream (SIGKILL of the listener and every connection it serves) and
restarted on the same port: the collector reconnects by itself, the panes come back
with their current state, and nothing is duplicated on the board or in the page."""

from __future__ import annotations

import pytest
from support.wait import wait_for

from .stack import HOST, Beating, open_board, wait_card

pytestmark = [pytest.mark.browser, pytest.mark.tmux, pytest.mark.sshd]


def test_sshd_killed_and_restarted_collector_reconnects_without_duplicates(stack_factory, browser) -> None:
    stack = stack_factory(grace=30)
    beats = [Beating(stack, f"b{i}", "working", f"step {i}") for i in range(3)]
    page = open_board(browser, stack)
    for b in beats:
        wait_card(page, b.id, "working")
    ids_before = {p["pane"]: p["id"] for p in stack.panes()}
    assert len(ids_before) == 4

    def host() -> dict:
        return next(h for h in stack.api("/api/hosts") if h["name"] == HOST)

    # the link's health as the collector measures it: a round trip, no reconnect yet
    first = wait_for(lambda: (h := host())["rtt"] is not None and h, what="a round trip in /api/hosts")
    assert first["reconnects"] == 0 and first["reachable"] and first["contact"] > 0

    stack.sshd.stop()  # mid-stream: the heartbeats keep writing reports
    # the collector notices the lost connection and says so; the board marks the host
    wait_for(
        lambda: all(not p["reachable"] for p in stack.panes() if p["host"] == HOST),
        timeout=60,
        what="the host reported unreachable by the collector",
    )
    lost = host()
    assert lost["unreachable_since"] and lost["rtt"] is None and lost["contact"] >= first["contact"]
    card = page.locator(f".card[data-id='{beats[2].id}']")
    wait_for(
        lambda: "host unreachable since" in card.inner_text(), what="'host unreachable since' on the card"
    )
    # meanwhile the panes move on; nobody sees it until the collector is back
    beats[0].set("blocked", "Allow command?")
    beats[1].set("done", "all tests pass")
    stack.sshd.start()

    def back() -> bool:
        rows = {p["pane"]: p for p in stack.panes()}
        return (
            all(p["reachable"] and not p["stale"] for p in rows.values())
            and rows[beats[0].pane]["state"] == "blocked"
            and rows[beats[1].pane]["state"] == "done"
            and rows[beats[2].pane]["state"] == "working"
        )

    wait_for(back, timeout=90, what=f"reconnect with current states\n{stack.log('collector1')}")
    wait_card(page, beats[0].id, "blocked")
    wait_card(page, beats[1].id, "done")
    back_again = wait_for(
        lambda: (h := host())["reconnects"] == 1 and h["rtt"] is not None and h, what="the reconnect counted"
    )
    assert back_again["unreachable_since"] is None
    wait_for(
        lambda: "1 reconnect" in page.locator(".group:not(.waiting) h2").first.inner_text(),
        what="the host's health in its group header",
    )

    rows = stack.panes()
    assert sorted(p["pane"] for p in rows) == sorted(ids_before), rows  # one entry per pane
    assert {p["pane"]: p["id"] for p in rows} == ids_before  # the same panes, not new copies
    cards = page.eval_on_selector_all(".card", "els => els.map(e => e.dataset.id)")
    assert sorted(cards) == sorted(str(i) for i in ids_before.values())
    assert stack.collector.poll() is None  # it reconnected, it did not die
    assert page.errors == []
    page.context.close()
