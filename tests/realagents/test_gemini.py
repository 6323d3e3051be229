"""The real Gemini CLI (0.61.0) against a loopback Gemini API stand-in
(`GOOGLE_GEMINI_BASE_URL`, `streamGenerateContent?alt=sse`): its `run_shell_command`
tool asks for approval in default approval mode. Usage statistics, telemetry, auto
update and its nag are off in settings.json; the folder is trusted by environment."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from harness import PANEBOARD, Stage

pytestmark = [pytest.mark.realagent, pytest.mark.tmux, pytest.mark.timeout(150)]


def gemini_home(home: Path) -> None:
    (home / ".gemini").mkdir(parents=True)
    settings = {
        "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}},
        "general": {
            "enableAutoUpdate": False,
            "enableAutoUpdateNotification": False,
            "disableAutoUpdate": True,
            "disableUpdateNag": True,
        },
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
        "ui": {"hideTips": True, "hideBanner": True},
        "model": {"name": "gemini-2.5-flash"},
    }
    (home / ".gemini" / "settings.json").write_text(json.dumps(settings))


def test_gemini_turn(stage: Stage, agent_cli, tmp_path: Path) -> None:
    gemini = agent_cli("gemini")
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    gemini_home(home)
    env = {
        "HOME": str(home),
        "TERM": "xterm-256color",
        "GEMINI_API_KEY": "pb-dummy",
        "GOOGLE_GEMINI_BASE_URL": stage.api.url,
        "GEMINI_CLI_TRUST_WORKSPACE": "true",
        "NO_UPDATE_NOTIFIER": "1",
    }
    stage.open(str(gemini), env, work)

    stage.wait_screen(lambda s: "Type your message" in s, 90, "Gemini's prompt")
    stage.wait_class({"agent": "gemini", "state": "idle", "kind": None}, 30, "idle at start")
    stage.save("gemini", "idle")

    stage.press_until(
        ["Please do PBTASK now"],
        lambda: "PBTASK" in stage.screen(),
        "the prompt typed",
        tries=3,
        each=5,
        literal=True,
    )
    stage.press_until(["Enter"], lambda: stage.api.held(1), "the prompt sent")
    stage.check({"agent": "gemini", "state": "working", "kind": None}, 30, "working")
    stage.save("gemini", "working")

    stage.api.release(1)
    stage.wait_screen(lambda s: "touch pb-ran" in s and "Allow" in s, 60, "the approval prompt")
    stage.check(
        {"agent": "gemini", "state": "blocked", "kind": "permission"}, 20, "blocked on the approval prompt"
    )
    stage.save("gemini", "blocked")
    assert not (work / "pb-ran").exists()

    stage.press_until(["Enter"], lambda: stage.api.held(2), "the approval")
    assert (work / "pb-ran").exists(), "the approved command ran"
    stage.check({"agent": "gemini", "state": "working", "kind": None}, 20, "working again after the approval")
    stage.save("gemini", "answered")

    stage.api.release(2)
    stage.wait_screen(lambda s: "All done: pb-ran exists." in s, 60, "the final answer")
    stage.check({"agent": "gemini", "state": "idle", "kind": None}, 30, "idle at the turn's end")
    stage.save("gemini", "done")
    seen = stage.states()
    if seen != ["idle", "working", "blocked", "working", "idle"]:
        stage.gaps.append(f"states seen: {seen}")
    assert not stage.gaps, "\n".join(stage.gaps)


RECIPE = Path(__file__).resolve().parents[2] / "docs" / "recipes" / "gemini-settings.json"


def test_gemini_turn_with_the_hooks_recipe(stage: Stage, agent_cli, tmp_path: Path) -> None:
    """docs/recipes/gemini-settings.json's hooks, verbatim, merged into the real Gemini
    CLI's settings: its own reports (OSC 7501 and THINKTERM) carry the turn, so every
    state after the start is `protocol`, the approval is blocked/permission with
    Gemini's message, the answer moves it on, and the turn ends `done`."""
    gemini = agent_cli("gemini")
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    gemini_home(home)
    settings_file = home / ".gemini" / "settings.json"
    settings = json.loads(settings_file.read_text())
    settings["hooks"] = json.loads(RECIPE.read_text())["hooks"]
    settings_file.write_text(json.dumps(settings))
    env = {
        "HOME": str(home),
        "TERM": "xterm-256color",
        "GEMINI_API_KEY": "pb-dummy",
        "GOOGLE_GEMINI_BASE_URL": stage.api.url,
        "GEMINI_CLI_TRUST_WORKSPACE": "true",
        "NO_UPDATE_NOTIFIER": "1",
        "PATH": f"{Path(PANEBOARD).parent}:{os.environ['PATH']}",  # `paneboard` as the recipe names it
    }
    stage.open(str(gemini), env, work)
    stage.wait_screen(lambda s: "Type your message" in s, 90, "Gemini's prompt")
    stage.wait_class({"agent": "gemini", "state": "idle", "kind": None}, 30, "idle at start")

    stage.press_until(
        ["Please do PBTASK now"],
        lambda: "PBTASK" in stage.screen(),
        "the prompt typed",
        tries=3,
        each=5,
        literal=True,
    )
    stage.press_until(["Enter"], lambda: stage.api.held(1), "the prompt sent")
    stage.check({"agent": "gemini", "state": "working", "source": "protocol"}, 30, "working (BeforeAgent)")
    stage.api.release(1)
    stage.wait_screen(lambda s: "touch pb-ran" in s and "Allow" in s, 60, "the approval prompt")
    stage.check(
        {"agent": "gemini", "state": "blocked", "kind": "permission", "source": "protocol"},
        30,
        "blocked/permission (Notification ToolPermission)",
    )
    stage.press_until(["Enter"], lambda: stage.api.held(2), "the approval")
    stage.check({"agent": "gemini", "state": "working", "source": "protocol"}, 30, "working (AfterTool)")
    stage.api.release(2)
    stage.wait_screen(lambda s: "All done: pb-ran exists." in s, 60, "the final answer")
    stage.check({"agent": "gemini", "state": "done", "source": "protocol"}, 30, "done (AfterAgent)")
    seen = stage.states()
    if seen != ["idle", "working", "blocked", "working", "done"]:
        stage.gaps.append(f"states seen: {stage.walk()}")
    assert not stage.gaps, "\n".join(stage.gaps)
