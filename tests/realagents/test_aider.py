"""The real Aider (0.86.2) against a loopback OpenAI chat-completions stand-in.

Aider uses no tools: the stand-in answers with a ```bash block, which Aider offers to
run with its yes/no question ("Run shell command? (Y)es/(N)o/(D)on't ask again
[Yes]:"), its approval prompt. Analytics, the update check and the model-price download
are switched off or pre-empted (a fresh price cache), so nothing tries the network.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from harness import PANEBOARD, Stage, wait_until
from install import AGENTS

pytestmark = [pytest.mark.realagent, pytest.mark.tmux, pytest.mark.timeout(150)]

MODEL = "openai/pb-model"
RECIPE = Path(__file__).resolve().parents[2] / "docs" / "recipes" / "aider.conf.yml"
FLAGS = (
    f"--model {MODEL} --edit-format diff --no-git --map-tokens 0 --no-show-model-warnings"
    " --no-show-release-notes --analytics-disable --no-check-update"
)
CONTRACT = b"SetUserVar=THINKTERM_AGENT="


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
    stage.open(f"{aider} {FLAGS}", env, work)

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
    # One Enter, waited for long: Aider reads keys typed ahead (the prompt shows them), and
    # it imports its model client on the first message, which on a loaded machine outlasts a
    # short wait, so a second Enter stayed in the terminal and later answered the
    # "Run shell command?" question with its default, Yes.
    stage.press_until(["Enter"], lambda: stage.api.held(1), "the prompt sent", tries=1, each=90)
    stage.wait_class({"agent": "aider", "state": "working", "kind": None, "source": "screen"}, 60, "working")
    stage.save("aider", "working")

    stage.api.release(1)
    stage.wait_class(
        {"agent": "aider", "state": "blocked", "kind": "question", "source": "screen"},
        60,
        "blocked on 'Run shell command?'",
    )
    screen = stage.wait_screen(lambda s: "Run shell command?" in s, 10, "the question")
    assert "output to the chat?" not in screen, "the question was answered before the test answered it"
    stage.save("aider", "blocked")
    assert not (work / "pb-ran").exists()

    # Once, for the same reason: a repeated "y Enter" would answer Aider's next question.
    stage.press_until(["y", "Enter"], lambda: (work / "pb-ran").exists(), "the approval", tries=1, each=60)
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


def test_aider_turn_with_the_notifications_recipe(stage: Stage, agent_cli, tmp_path: Path) -> None:
    """docs/recipes/aider.conf.yml, verbatim, as Aider's --config. The real Aider 0.86.2
    runs its notifications command once per model reply, at the first wait for the
    user: here its "Run shell command?" question (a recipe reporting `done` there made
    the pane `done` from the question to the end). With the recipe the walk is the
    screen's, blocked/question at the question, idle at the end, never `done`."""
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
        "PATH": f"{Path(PANEBOARD).parent}:{os.environ['PATH']}",  # `paneboard` as the recipe names it
    }
    stage.open(f"{aider} {FLAGS} --config {RECIPE}", env, work)
    stage.wait_screen(
        lambda s: f"Aider v{AGENTS['aider'].version}" in s and "diff>" in s, 90, "Aider's prompt"
    )
    stage.wait_class({"agent": "aider", "state": "idle", "kind": None}, 30, "idle at start")
    stage.press_until(
        ["Please do PBTASK now"],
        lambda: "PBTASK" in stage.screen(),
        "the prompt typed",
        tries=1,
        each=20,
        literal=True,
    )
    # One Enter, waited for long: Aider reads keys typed ahead (the prompt shows them), and
    # it imports its model client on the first message, which on a loaded machine outlasts a
    # short wait, so a second Enter stayed in the terminal and later answered the
    # "Run shell command?" question with its default, Yes.
    stage.press_until(["Enter"], lambda: stage.api.held(1), "the prompt sent", tries=1, each=90)
    stage.wait_class({"agent": "aider", "state": "working", "kind": None}, 60, "working")
    assert CONTRACT not in stage.raw.read_bytes(), "the notification ran before Aider waited for the user"

    stage.api.release(1)
    stage.wait_screen(lambda s: "Run shell command?" in s, 60, "the question")
    wait_until(lambda: CONTRACT in stage.raw.read_bytes(), 30, "the notification, run for the question")
    stage.wait_class(
        {"agent": "aider", "state": "blocked", "kind": "question", "source": "screen"},
        60,
        "blocked/question with the recipe's report in",
    )
    # Once, for the same reason: a repeated "y Enter" would answer Aider's next question.
    stage.press_until(["y", "Enter"], lambda: (work / "pb-ran").exists(), "the approval", tries=1, each=60)
    stage.wait_screen(lambda s: s.rstrip().endswith("diff>"), 60, "the prompt back")
    stage.wait_class({"agent": "aider", "state": "idle", "kind": None}, 60, "idle again")
    seen = stage.states()
    walk = stage.walk()
    assert "done" not in seen, walk
    it = iter(seen)
    assert all(step in it for step in ["idle", "working", "blocked", "idle"]), walk
    first = seen.index("blocked")
    assert "blocked" not in seen[first + 1 :], walk
