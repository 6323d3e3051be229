"""The real OpenCode (1.18.33) answered the way the board answers it.

Its permission dialog shows which choice is selected only by colour, and Enter takes
the selected one. The collector reads the selection from the capture's colours
(`paneboard_protocol.highlight`): "Allow once" is offered only while it is selected.
Moved at the terminal to "Allow always", the page's earlier fingerprint types nothing
(`changed`) and "Allow once" is no longer offered; moved back, the operator's tap on
the screen the page then holds is typed, and the command runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from harness import Page, Stage, wait_until
from test_opencode import opencode_env

pytestmark = [pytest.mark.realagent, pytest.mark.tmux, pytest.mark.timeout(240)]


def test_real_opencode_permission_answered_only_on_the_selection_it_shows(
    stage: Stage, agent_cli, tmp_path: Path
) -> None:
    opencode = agent_cli("opencode")
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    stage.open(str(opencode), opencode_env(home, stage.api.url), work)
    stage.wait_screen(lambda s: "Ask anything" in s, 120, "OpenCode's prompt")
    stage.wait_class({"agent": "opencode", "state": "idle"}, 30, "idle at start")

    page = Page(stage)
    side = page.side

    def offered(since: int, ids: list[str]) -> Any:
        """The first screen after message `since` offering exactly these answers."""
        return wait_until(
            lambda: next(
                (m for m in side[since:] if m["type"] == "screen" and [a["id"] for a in m["answers"]] == ids),
                None,
            ),
            30,
            f"a screen offering {ids}",
        )

    try:
        stage.press_until(
            ["Please do PBTASK now"],
            lambda: "PBTASK" in stage.screen(),
            "the task typed",
            tries=3,
            each=5,
            literal=True,
        )
        stage.press_until(["Enter"], lambda: stage.api.held(1), "the task sent")
        page.watch()
        stage.api.release(1)
        stage.wait_screen(lambda s: "touch pb-ran" in s and "Allow once" in s, 60, "the permission prompt")
        first = offered(0, ["once", "reject"])
        assert [a["label"] for a in first["answers"]] == ["Allow once", "Reject"]

        mark = len(side)
        stage.tmux.cmd("send-keys", "-t", stage.pane, "Right")  # the person at the terminal moves it
        moved = offered(mark, ["reject"])
        assert moved["fingerprint"] != first["fingerprint"]
        assert page.answer("stale", first["fingerprint"], "once") == "changed"
        assert page.answer("gone", moved["fingerprint"], "once") == "refused"  # not offered there
        assert not (work / "pb-ran").exists(), "nothing was typed"

        mark = len(side)
        stage.tmux.cmd("send-keys", "-t", stage.pane, "Left")
        back = offered(mark, ["once", "reject"])
        assert page.answer("once", back["fingerprint"], "once") == "typed"
        wait_until(lambda: stage.api.held(2), 30, "the approved command's result sent to the model")
        assert (work / "pb-ran").exists(), "the approved command ran"
        stage.api.release(2)
        stage.wait_screen(lambda s: "All done: pb-ran exists." in s, 60, "the final answer")
    finally:
        page.close()
