"""The real Claude Code started through a wrapper that stays in front of it (#13 item 3):
`bash -c 'claude …; exec bash'`, a real `npx` from a project that has it installed, a
real `uv run`, and a Python launcher (`python3 -c 'subprocess.call(...)'`, what a
`uv run`-installed entry point or a make recipe looks like to tmux). tmux names the
wrapper; the collector finds Claude in the pane's foreground process group and says
why (`--explain`)."""

from __future__ import annotations

import shlex
import shutil
import sys
from pathlib import Path

import pytest
from harness import Stage
from test_claude import claude_env, claude_home

pytestmark = [pytest.mark.realagent, pytest.mark.tmux, pytest.mark.timeout(150)]

LAUNCHER = "import subprocess, sys; sys.exit(subprocess.call(sys.argv[1:]))"


def _command(wrapper: str, claude: Path, work: Path) -> str:
    args = f"{shlex.quote(str(claude))} --permission-mode default"
    if wrapper == "bash-c":
        return f"bash -c {shlex.quote(args + '; exec bash --noprofile --norc')}"
    if wrapper == "npx":
        # a project with Claude Code among its packages: npx runs the local one, offline
        (work / "node_modules").symlink_to(claude.parents[1])
        return "npx --offline --no-install claude --permission-mode default"
    if wrapper == "uv-run":
        uv = shutil.which("uv")
        if uv is None:
            pytest.fail("uv is not installed (the project is run with it)", pytrace=False)
        return f"{shlex.quote(uv)} run --no-project --offline -- {args}"
    assert wrapper == "launcher"
    return f"{shlex.quote(sys.executable)} -c {shlex.quote(LAUNCHER)} {args}"


#: what `why` says: the wrapper seen as the group's leader (None: the leader names it itself)
WHY = {"bash-c": "`bash -c", "npx": "`npm", "uv-run": None, "launcher": "`python"}


@pytest.mark.parametrize("wrapper", list(WHY))
def test_claude_behind_a_wrapper_is_claude(stage: Stage, agent_cli, tmp_path: Path, wrapper: str) -> None:
    claude = agent_cli("claude")
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    claude_home(home, work)
    env = claude_env(home, stage.api.url) | {"npm_config_update_notifier": "false"}
    stage.open(_command(wrapper, claude, work), env, work)
    stage.wait_screen(lambda s: "? for shortcuts" in s, 90, "the prompt")
    got = stage.wait_class({"agent": "claude", "state": "idle", "source": "screen"}, 30, "claude, idle")
    want = WHY[wrapper]
    if want is None:
        assert got["why"] is None and got["process"].startswith(shutil.which("uv") or "uv"), got
    else:
        assert got["why"] and got["why"].startswith("claude: ") and want in got["why"], got
    if wrapper == "bash-c":
        # Claude exits, the wrapper stays (exec bash): a shell in front again, no agent
        gone = lambda: (stage.latest() or {}).get("agent") is None  # noqa: E731
        stage.press_until(["C-c", "C-c"], gone, "claude's exit")
        assert stage.latest()["state"] is None
