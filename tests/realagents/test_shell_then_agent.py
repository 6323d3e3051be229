"""A manifest agent started from a shell that reported `working` is classified on its
own evidence (RI-2: an ancestor's record never applies to a process a manifest
identifies), and the shell's `working` does not come back when the agent exits."""

from __future__ import annotations

from pathlib import Path

import pytest
from harness import Stage
from test_claude import claude_env, claude_home

pytestmark = [pytest.mark.realagent, pytest.mark.tmux, pytest.mark.timeout(240)]

STATUS = (  # the protocol author's function, verbatim
    r"""status() { printf '\e]7501;state=%s:msg=%s\e\\' "$1" "$(printf '%s' "$2" | base64 | tr -d '\n')"; }"""
)


def test_claude_from_a_shell_that_reported_working(stage: Stage, agent_cli, tmp_path: Path) -> None:
    claude = agent_cli("claude")
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    claude_home(home, work)
    stage.open("bash --noprofile --norc -i", claude_env(home, stage.api.url), work)
    stage.keys(STATUS, literal=True)
    stage.keys("Enter")
    stage.keys('status working "Syncing photos"', literal=True)
    stage.keys("Enter")
    stage.wait_class({"agent": None, "state": "working", "msg": "Syncing photos"}, 30, "the shell's working")

    stage.keys(f"{claude} --permission-mode default", literal=True)
    stage.keys("Enter")
    stage.wait_class(
        {"agent": "claude", "state": "idle", "source": "screen"}, 90, "claude, on its own evidence"
    )
    seen = [o for o in stage.collector.snapshot() if o["pane"] == stage.pane and o.get("agent") == "claude"]
    assert all(o["msg"] != "Syncing photos" and o["source"] != "protocol" for o in seen), stage.walk()

    # Claude exits (`/exit`): back at the shell's prompt, nothing of it is live
    stage.press_until(
        ["/exit"], lambda: "/exit" in stage.screen(), "/exit typed", tries=3, each=10, literal=True
    )
    gone = lambda: (stage.latest() or {}).get("agent") is None  # noqa: E731
    stage.press_until(["Enter"], gone, "claude gone", tries=4, each=10)
    stage.wait_class({"agent": None, "state": None}, 30, "nothing live at the shell")
