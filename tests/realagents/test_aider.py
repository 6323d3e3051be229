"""The real Aider (0.86.2) against a loopback OpenAI chat-completions stand-in.

Aider uses no tools: the stand-in answers with a ```bash block, which Aider offers to
run with its yes/no question ("Run shell command? (Y)es/(N)o/(D)on't ask again
[Yes]:"), its approval prompt. Analytics, the update check and the model-price download
are switched off or pre-empted (a fresh price cache), so nothing tries the network.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from harness import Stage
from install import AGENTS

pytestmark = [pytest.mark.realagent, pytest.mark.tmux, pytest.mark.timeout(150)]

MODEL = "openai/pb-model"


def aider_home(home: Path) -> None:
    caches = home / ".aider" / "caches"
    caches.mkdir(parents=True)
    # A fresh (< 24 h), non-empty cache: Aider then does not fetch litellm's price list.
    info = {
        "max_input_tokens": 100000,
        "max_output_tokens": 4096,
        "litellm_provider": "openai",
        "mode": "chat",
    }
    (caches / "model_prices_and_context_window.json").write_text(json.dumps({"pb-model": info, MODEL: info}))


def test_aider_turn(stage: Stage, agent_cli, tmp_path: Path) -> None:
    aider = agent_cli("aider")
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    aider_home(home)
    env = {
        "HOME": str(home),
        "TERM": "xterm-256color",
        "OPENAI_API_KEY": "pb-dummy",
        "OPENAI_API_BASE": stage.api.url + "/text-tools/v1",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }
    flags = (
        f"--model {MODEL} --edit-format diff --no-git --map-tokens 0 --no-show-model-warnings"
        " --no-show-release-notes --analytics-disable --no-check-update"
    )
    stage.open(f"{aider} {flags}", env, work)

    stage.wait_screen(
        lambda s: f"Aider v{AGENTS['aider'].version}" in s and "diff>" in s, 90, "Aider's prompt"
    )
    stage.wait_class({"agent": "aider", "state": "idle", "kind": None}, 30, "idle at start")
    stage.save("aider", "idle")

    stage.press_until(
        ["Please do PBTASK now"],
        lambda: "PBTASK" in stage.screen(),
        "the prompt typed",
        tries=1,
        each=20,
        literal=True,
    )
    stage.press_until(["Enter"], lambda: stage.api.held(1), "the prompt sent")
    stage.wait_class({"agent": "aider", "state": "working", "kind": None, "source": "screen"}, 60, "working")
    stage.save("aider", "working")

    stage.api.release(1)
    stage.wait_class(
        {"agent": "aider", "state": "blocked", "kind": "question", "source": "screen"},
        60,
        "blocked on 'Run shell command?'",
    )
    stage.wait_screen(lambda s: "Run shell command?" in s, 10, "the question")
    stage.save("aider", "blocked")
    assert not (work / "pb-ran").exists()

    stage.press_until(["y", "Enter"], lambda: (work / "pb-ran").exists(), "the approval", tries=3)
    stage.wait_screen(lambda s: s.rstrip().endswith("diff>"), 60, "the prompt back")
    stage.wait_class({"agent": "aider", "state": "idle", "kind": None, "source": "screen"}, 60, "idle again")
    stage.save("aider", "done")
    # Gap: on a loaded machine the pane at times reads a short `idle` between the spinner and
    # the question (the answer's text is on screen, no rule matches, the fallback idle is
    # released after its 450 ms debounce): checked as a subsequence, no `blocked` once answered.
    seen = stage.states()
    walk = stage.walk()
    it = iter(seen)
    assert all(step in it for step in ["idle", "working", "blocked", "idle"]), walk
    first = seen.index("blocked")
    assert "blocked" not in seen[first + 1 :], walk
