"""The real Claude Code (2.1.328), with and without `paneboard run`, against a loopback
Anthropic Messages stand-in: idle -> working -> blocked on its real permission prompt ->
answered -> working -> finished, checked at every step as the collector prints it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from harness import PANEBOARD, Stage
from install import AGENTS
from support.wait import wait_for

pytestmark = [pytest.mark.realagent, pytest.mark.tmux, pytest.mark.timeout(150)]

# The API-key dialog is skipped for a key whose last 20 characters are pre-approved.
KEY = "sk-ant-api03-" + "p" * 80 + "paneboardstandin0001"


def claude_home(home: Path, work: Path) -> None:
    """What a user who has been through onboarding and trusted the folder has."""
    home.mkdir()
    (home / ".claude.json").write_text(
        json.dumps(
            {
                "hasCompletedOnboarding": True,
                "numStartups": 5,
                "theme": "dark",
                "customApiKeyResponses": {"approved": [KEY[-20:]], "rejected": []},
                "projects": {
                    str(work): {
                        "hasTrustDialogAccepted": True,
                        "hasCompletedProjectOnboarding": True,
                        "allowedTools": [],
                    }
                },
            }
        )
    )


def claude_env(home: Path, url: str) -> dict[str, str]:
    return {
        "HOME": str(home),
        "TERM": "xterm-256color",
        "ANTHROPIC_BASE_URL": url,
        "ANTHROPIC_API_KEY": KEY,
        # No telemetry, no update check, no error reports, no feature-flag fetches.
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_ERROR_REPORTING": "1",
    }


@pytest.mark.parametrize("relay", [False, True], ids=["screen", "paneboard-run"])
def test_claude_code_turn(stage: Stage, agent_cli, tmp_path: Path, relay: bool) -> None:
    claude = agent_cli("claude")
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    claude_home(home, work)
    # `--permission-mode default`: 2.1.328 starts in "auto" mode, which would approve for us.
    cmd = f"{claude} --permission-mode default"
    if relay:
        cmd = f"{PANEBOARD} run -- {cmd}"
    stage.open(cmd, claude_env(home, stage.api.url), work)
    src = "protocol" if relay else "screen"
    name = "claude-run" if relay else "claude"

    start = {"agent": "claude", "state": "idle", "kind": None, "source": src}
    stage.wait_class(start, 90, "idle at start")
    stage.wait_screen(
        lambda s: "Claude Code v" + AGENTS["claude"].version in s and "? for shortcuts" in s, 30, "the prompt"
    )
    stage.save(name, "idle")

    stage.press_until(
        ["Please do PBTASK now"],
        lambda: "PBTASK" in stage.screen(),
        "the prompt typed",
        tries=1,
        each=20,
        literal=True,
    )
    stage.press_until(["Enter"], lambda: stage.api.held(1), "the prompt sent")
    stage.wait_class({"agent": "claude", "state": "working", "kind": None, "source": src}, 60, "working")
    stage.wait_screen(lambda s: "esc to interrupt" in s, 30, "the spinner line")
    stage.save(name, "working")

    stage.api.release(1)
    want = {"agent": "claude", "state": "blocked", "kind": "permission", "source": src}
    if relay:
        want["msg"] = "approve Bash: touch pb-ran"
    stage.wait_class(want, 60, "blocked on the permission prompt")
    stage.wait_screen(lambda s: "Do you want to proceed?" in s, 10, "the permission prompt")
    stage.save(name, "blocked")
    assert not (work / "pb-ran").exists()

    stage.press_until(["Enter"], lambda: stage.api.held(2), "the approval")  # "❯ 1. Yes" is selected
    assert (work / "pb-ran").exists(), "the approved command ran"
    stage.wait_class(
        {"agent": "claude", "state": "working", "kind": None, "source": src},
        60,
        "working again after the approval",
    )
    stage.wait_screen(lambda s: "esc to interrupt" in s and "Do you want" not in s, 30, "the spinner line")
    stage.save(name, "answered")

    stage.api.release(2)
    stage.wait_screen(lambda s: "All done: pb-ran exists." in s, 60, "the final answer")
    stage.wait_class(
        {"agent": "claude", "state": "done" if relay else "idle", "kind": None, "source": src},
        60,
        "the turn's end",
    )
    stage.save(name, "done")
    # Never anything but these, in this order (no stale "blocked" after the answer, no early "done").
    seen = stage.states()
    assert seen == ["idle", "working", "blocked", "working", "done" if relay else "idle"], seen


def test_claude_code_start_report_under_paneboard_run(stage: Stage, agent_cli, tmp_path: Path) -> None:
    """Claude Code's start-up report (right after the relay answers its probe) is what the
    pane shows, from the protocol. (It was lost one run in three: the stage started Claude
    before the collector had attached, so the report was never seen at all.)"""
    claude = agent_cli("claude")
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    claude_home(home, work)
    stage.open(
        f"{PANEBOARD} run -- {claude} --permission-mode default", claude_env(home, stage.api.url), work
    )
    stage.wait_screen(lambda s: "? for shortcuts" in s, 90, "the prompt")
    # The report follows the probe's reply, a moment after the prompt is drawn.
    wait_for(
        lambda: b"\x1b]7501;state=idle:app=claude-code" in stage.raw.read_bytes(),
        timeout=20,
        what="Claude Code's own report of idle at start",
    )
    stage.wait_class({"agent": "claude", "state": "idle", "source": "protocol"}, 20, "the reported idle")


RECIPE = Path(__file__).resolve().parents[2] / "docs" / "recipes" / "claude-settings.json"


def test_claude_code_turn_with_the_hooks_recipe(stage: Stage, agent_cli, tmp_path: Path) -> None:
    """docs/recipes/claude-settings.json, verbatim, as the real Claude Code's user settings
    (no `paneboard run`): the hooks' reports carry the turn, `protocol` from the prompt on."""
    claude = agent_cli("claude")
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    claude_home(home, work)
    (home / ".claude").mkdir()
    (home / ".claude" / "settings.json").write_text(RECIPE.read_text())
    env = claude_env(home, stage.api.url) | {"PATH": f"{Path(PANEBOARD).parent}:{os.environ['PATH']}"}
    stage.open(f"{claude} --permission-mode default", env, work)
    stage.wait_class({"agent": "claude", "state": "idle", "kind": None}, 90, "idle at start")
    stage.wait_screen(lambda s: "? for shortcuts" in s, 30, "the prompt")

    stage.press_until(
        ["Please do PBTASK now"],
        lambda: "PBTASK" in stage.screen(),
        "the prompt typed",
        tries=1,
        each=20,
        literal=True,
    )
    stage.press_until(["Enter"], lambda: stage.api.held(1), "the prompt sent")
    stage.check(
        {"agent": "claude", "state": "working", "source": "protocol"}, 30, "working (UserPromptSubmit)"
    )
    stage.api.release(1)
    stage.wait_screen(lambda s: "Do you want to proceed?" in s, 60, "the permission prompt")
    stage.check(
        {"agent": "claude", "state": "blocked", "kind": "permission", "source": "protocol"},
        30,
        "blocked/permission (Notification permission_prompt)",
    )
    stage.press_until(["Enter"], lambda: stage.api.held(2), "the approval")
    stage.check({"agent": "claude", "state": "working", "source": "protocol"}, 30, "working (PostToolUse)")
    stage.api.release(2)
    stage.wait_screen(lambda s: "All done: pb-ran exists." in s, 60, "the final answer")
    stage.check({"agent": "claude", "state": "done", "source": "protocol"}, 30, "done (Stop)")
    seen = stage.states()
    if seen != ["idle", "working", "blocked", "working", "done"]:
        stage.gaps.append(f"states seen: {stage.walk()}")
    assert not stage.gaps, "\n".join(stage.gaps)
