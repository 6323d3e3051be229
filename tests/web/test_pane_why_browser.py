"""The pane's page says why the pane shows its state (issue #42), in a real Chromium
against a real server fed by a real collector watching real tmux: a shell's report held
while its command runs names the shell and its pid; a screen rule names itself and the
rows it matched, which the page highlights on the screen it shows a signed-in person."""

from __future__ import annotations

import os
import re
import shlex
import sys

import pytest
from support.wait import wait_for

from .test_board_browser import new_pane

pytestmark = [pytest.mark.browser, pytest.mark.tmux]

WHY = "#pane-view p.why"
GONE = "(s) => { const e = document.querySelector(s); return e?.textContent.includes('nothing reports'); }"


def _row(board, pane: str) -> dict:
    return next((p for p in board.panes() if p["pane"] == pane), {})


def _asker() -> str:
    """A real program that names itself `claude` and draws Claude Code's permission prompt."""
    path = shlex.quote(os.pathsep.join(p for p in sys.path if p))
    py = shlex.quote(sys.executable)
    inner = f"PYTHONPATH={path} exec -a claude {py} -m paneboard.demo_ask permission --once"
    return f"bash -c {shlex.quote(inner)}"


def test_a_shells_report_says_which_shell_wrote_it(page, board) -> None:
    pane, pid = new_pane(board)
    board.report(pane, state="working", msg="Syncing photos")
    board.wait_state("working", pane)
    board.tmux.send(pane, "sleep 600")  # the shell's command: the report is the shell's still
    wait_for(lambda: _row(board, pane).get("process") == "sleep", timeout=20, what="sleep in front")
    page.goto(board.url + f"/#/pane/{pid}")
    why = page.locator(WHY)
    why.wait_for(timeout=20000)
    text = why.inner_text()
    m = re.fullmatch(r"Why: reported by `bash` \(pid (\d+)\), the parent of `sleep`, at (.+)", text)
    assert m is not None, text
    with open(f"/proc/{m.group(1)}/comm") as f:  # the collector watches this machine
        assert f.read().strip() == "bash"
    assert re.search(r"\d:\d\d:\d\d", m.group(2)), text  # the report's time, to the second
    board.tmux.cmd("send-keys", "-t", pane, "C-c")
    # The shell's prompt again: its `working` ended, and the page says so as it changes.
    page.wait_for_function(
        GONE,
        arg=WHY,
        timeout=20000,
    )
    assert page.errors == []


def test_a_screen_rule_names_itself_and_its_rows_are_highlighted(page, board) -> None:
    pane, pid = new_pane(board, "ask")
    board.tmux.send(pane, _asker())
    wait_for(lambda: _row(board, pane).get("state") == "blocked", timeout=30, what="the asker blocked")
    page.goto(board.url + f"/#/pane/{pid}")
    why = page.locator(WHY)
    why.wait_for(timeout=20000)
    m = re.fullmatch(
        r"Why: screen rule `claude-code\.permission_prompt` matched lines (\d+)–(\d+)", why.inner_text()
    )
    assert m is not None, why.inner_text()
    first, last = int(m.group(1)), int(m.group(2))
    rows = page.locator("#pane-view .screen-row.matched")
    rows.first.wait_for(timeout=20000)
    assert rows.count() == last - first + 1
    # the rows marked are the screen's own rows first..last, counted from its top as tmux shows it
    screen = board.tmux.cmd("capture-pane", "-p", "-t", pane).split("\n")
    marked = [r.strip() for r in rows.all_inner_texts()]
    assert marked == [ln.strip() for ln in screen[first - 1 : last]], (marked, screen)
    assert any("Do you want to proceed?" in r for r in marked), marked
    board.tmux.cmd("send-keys", "-t", pane, "C-c")
    assert page.errors == []
