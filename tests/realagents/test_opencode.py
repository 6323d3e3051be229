"""The real OpenCode (1.18.33) against a loopback OpenAI chat-completions stand-in: a
custom `@ai-sdk/openai-compatible` provider in OPENCODE_CONFIG_CONTENT, `bash` set to
"ask" so its tool call stops on OpenCode's permission prompt. Auto-update, the models.dev
fetch, sharing, LSP downloads and default plugins are switched off by environment."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from harness import Stage

pytestmark = [pytest.mark.realagent, pytest.mark.tmux, pytest.mark.timeout(180)]


def opencode_env(home: Path, url: str) -> dict[str, str]:
    cfg = {
        "autoupdate": False,
        "share": "disabled",
        "model": "pb/pb-model",
        "small_model": "pb/pb-model",
        "provider": {
            "pb": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "pb",
                "options": {"baseURL": url + "/v1", "apiKey": "pb-dummy"},
                "models": {"pb-model": {"name": "pb-model", "tool_call": True}},
            }
        },
        "permission": {"bash": "ask", "edit": "ask"},
    }
    return {
        "HOME": str(home),
        "TERM": "xterm-256color",
        "OPENCODE_CONFIG_CONTENT": json.dumps(cfg),
        "OPENCODE_DISABLE_AUTOUPDATE": "1",
        "OPENCODE_DISABLE_MODELS_FETCH": "1",
        "OPENCODE_DISABLE_SHARE": "1",
        "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
        "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
        "OPENCODE_DISABLE_CLAUDE_CODE": "1",
    }


def test_opencode_turn(stage: Stage, agent_cli, tmp_path: Path) -> None:
    opencode = agent_cli("opencode")
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    stage.open(str(opencode), opencode_env(home, stage.api.url), work)

    stage.wait_screen(lambda s: "Ask anything" in s and "1.18.33" in s, 120, "OpenCode's prompt")
    stage.wait_class({"agent": "opencode", "state": "idle", "kind": None}, 30, "idle at start")
    stage.save("opencode", "idle")

    stage.press_until(
        ["Please do PBTASK now"],
        lambda: "PBTASK" in stage.screen(),
        "the prompt typed",
        tries=3,
        each=5,
        literal=True,
    )
    stage.press_until(["Enter"], lambda: stage.api.held(1), "the prompt sent")
    stage.check({"agent": "opencode", "state": "working", "kind": None}, 20, "working")
    stage.save("opencode", "working")

    stage.api.release(1)
    stage.wait_screen(
        lambda s: "touch pb-ran" in s and ("Allow" in s or "allow" in s), 60, "the permission prompt"
    )
    stage.check(
        {"agent": "opencode", "state": "blocked", "kind": "permission"},
        20,
        "blocked on the permission prompt",
    )
    stage.save("opencode", "blocked")
    assert not (work / "pb-ran").exists()

    stage.press_until(["Enter"], lambda: stage.api.held(2), "the approval")
    assert (work / "pb-ran").exists(), "the approved command ran"
    stage.check(
        {"agent": "opencode", "state": "working", "kind": None}, 20, "working again after the approval"
    )
    stage.save("opencode", "answered")

    stage.api.release(2)
    stage.wait_screen(lambda s: "All done: pb-ran exists." in s, 60, "the final answer")
    stage.check({"agent": "opencode", "state": "idle", "kind": None}, 30, "idle at the turn's end")
    stage.save("opencode", "done")
    seen = stage.states()
    if seen != ["idle", "working", "blocked", "working", "idle"]:
        stage.gaps.append(f"states seen: {seen}")
    assert not stage.gaps, "\n".join(stage.gaps)
