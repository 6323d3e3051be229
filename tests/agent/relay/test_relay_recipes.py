"""The shell recipes of docs/recipes.md, sourced by a real bash / zsh in a tmux pane."""

from __future__ import annotations

from pathlib import Path

import pytest
from paneboard_protocol import Decoder, StatusReport
from relay_tmux import Pane, Tmux, q
from support.tools import require_tool
from support.wait import wait_for

pytestmark = pytest.mark.tmux
RECIPES = Path(__file__).resolve().parents[3] / "docs" / "recipes"

SHELLS = {
    "bash": ("PS1='$ ' exec bash --norc --noprofile -i", RECIPES / "paneboard.bash", "$"),
    "zsh": ("PS1='%% ' exec zsh -f -i", RECIPES / "paneboard.zsh", "%"),
}


def states(pane: Pane) -> list[tuple[str, str | None]]:
    return [
        (e.state, e.msg)
        for e in Decoder().feed(pane.output())
        if isinstance(e, StatusReport) and e.app == "shell"
    ]


@pytest.mark.parametrize("shell", sorted(SHELLS))
def test_shell_recipe_reports_working_then_result(tmux: Tmux, shell: str) -> None:
    command, snippet, prompt = SHELLS[shell]
    require_tool(shell)
    pane = tmux.pane(command, gate=False)
    wait_for(lambda: prompt in pane.screen(), what=f"the {shell} prompt")
    pane.keys(f"source {q(str(snippet))}; PANEBOARD_LONG=1", "Enter")
    wait_for(lambda: states(pane) == [("idle", None)], what="idle after sourcing")

    pane.keys("sleep 1.5; false", "Enter")
    wait_for(lambda: len(states(pane)) >= 3, what="working, then the result")
    got = states(pane)
    assert got[1] == ("working", None)
    state, msg = got[2]
    assert state == "error"
    assert msg is not None and msg.startswith("sleep 1.5; false: exit 1 after ")

    pane.keys("true", "Enter")
    wait_for(lambda: len(states(pane)) >= 5, what="a quick command")
    assert states(pane)[3:5] == [("working", None), ("idle", None)]

    pane.keys("sleep 1.2", "Enter")
    wait_for(lambda: len(states(pane)) >= 7, what="a long successful command")
    assert states(pane)[5][0] == "working"
    assert states(pane)[6][0] == "done"
    assert states(pane)[6][1].startswith("sleep 1.2: exit 0 after ")
