"""The real Pi coding agent (0.73.1) against a loopback OpenAI chat-completions stand-in:
a custom provider in Pi's own `models.json` (`api = "openai-completions"`, `baseUrl` the
stand-in) made the default in `settings.json`, both in a `PI_CODING_AGENT_DIR` of the
test's own. `PI_OFFLINE=1` switches off Pi's start-up network use (version and package
checks, install telemetry, the fd/ripgrep downloads). Pi has no permission prompts by
design: the stand-in's `touch pb-ran` tool call runs at once, so the walk is idle,
working (the task held at the stand-in), working (the answer after the tool result
held), idle; with docs/recipes/pi-paneboard.ts as an extension, the same turn is
reported by Pi itself and ends `done` with its answer, and Pi's `/quit` clears it.
Each walk runs with the collector local and over SSH (a real sshd on loopback)."""

from __future__ import annotations

import json
import os
import shlex
import shutil
from pathlib import Path

import pytest
from harness import PANEBOARD, Stage

pytestmark = [pytest.mark.realagent, pytest.mark.tmux, pytest.mark.timeout(180)]

VERSION = "0.73.1"
RECIPE = Path(__file__).resolve().parents[2] / "docs" / "recipes" / "pi-paneboard.ts"


def pi_env(tmp: Path, url: str) -> dict[str, str]:
    """Pi's configuration directory for the stand-in, and the environment naming it."""
    home, conf = tmp / "home", tmp / "pi-agent"
    home.mkdir()
    conf.mkdir()
    models = {
        "providers": {
            "pb": {
                "baseUrl": url + "/v1",
                "api": "openai-completions",
                "apiKey": "pb-dummy",
                # the stand-in speaks plain chat completions: a `system` message, no effort
                "compat": {"supportsDeveloperRole": False, "supportsReasoningEffort": False},
                "models": [{"id": "pb-model", "name": "pb-model", "reasoning": False}],
            }
        }
    }
    settings = {"defaultProvider": "pb", "defaultModel": "pb-model", "enableInstallTelemetry": False}
    (conf / "models.json").write_text(json.dumps(models))
    (conf / "settings.json").write_text(json.dumps(settings))
    return {
        "HOME": str(home),
        "TERM": "xterm-256color",
        "PI_CODING_AGENT_DIR": str(conf),
        "PI_OFFLINE": "1",
        "PI_SKIP_VERSION_CHECK": "1",
        "PI_TELEMETRY": "0",
    }


#: Each walk with the collector on this machine and through a loopback sshd (README's `--ssh`).
WHERE = pytest.mark.parametrize(
    "stage", ["local", pytest.param("ssh", marks=pytest.mark.sshd)], indirect=True
)


@WHERE
def test_pi_turn(stage: Stage, agent_cli, tmp_path: Path) -> None:
    pi = agent_cli("pi")
    work = tmp_path / "work"
    work.mkdir()
    stage.open(str(pi), pi_env(tmp_path, stage.api.url), work)

    stage.wait_screen(lambda s: f"pi v{VERSION}" in s and "pb-model" in s, 120, "Pi's editor")
    stage.wait_class({"agent": "pi", "state": "idle", "kind": None}, 30, "idle at start")
    stage.save("pi", "idle")

    stage.press_until(
        ["Please do PBTASK now"],
        lambda: "PBTASK" in stage.screen(),
        "the prompt typed",
        tries=3,
        each=5,
        literal=True,
    )
    stage.press_until(["Enter"], lambda: stage.api.held(1), "the prompt sent")
    stage.check({"agent": "pi", "state": "working", "kind": None}, 20, "working")
    stage.save("pi", "working")

    # A draft typed while Pi works grows the editor under the loader (a trailing
    # backslash makes Enter a new line); the loader still reads as working.
    for line in ("a draft typed while", "Pi works, on", "three lines"):
        stage.keys(line + "\\", literal=True)
        stage.keys("Enter")
    stage.keys("and a fourth", literal=True)
    stage.wait_screen(lambda s: "and a fourth" in s and "three lines" in s, 30, "the draft under the loader")
    stage.check({"agent": "pi", "state": "working", "kind": None}, 20, "working with a draft in the editor")
    stage.save("pi", "draft")  # the collector prints only changes: the capture's own test reads it

    # No prompt: the tool call runs as soon as it arrives, and Pi asks again at once.
    stage.api.release(1)
    stage.api.wait_held(2)
    assert (work / "pb-ran").exists(), "the tool call ran without asking"
    stage.check({"agent": "pi", "state": "working", "kind": None}, 20, "working after the tool call")
    stage.save("pi", "answered")

    stage.api.release(2)
    stage.wait_screen(lambda s: "All done: pb-ran exists." in s, 60, "the final answer")
    stage.check({"agent": "pi", "state": "idle", "kind": None}, 30, "idle at the turn's end")
    stage.save("pi", "done")
    seen = stage.states()
    if seen != ["idle", "working", "idle"]:
        stage.gaps.append(f"states seen: {seen}")
    assert not stage.gaps, "\n".join(stage.gaps)


@WHERE
def test_pi_turn_with_the_extension_recipe(stage: Stage, agent_cli, tmp_path: Path) -> None:
    """docs/recipes/pi-paneboard.ts, verbatim, as a global extension of the real Pi started
    from an interactive shell: its reports carry the pane from the start (`protocol`), the
    turn ends `done` with Pi's answer as the message, after `working` and never before the
    end; and at `/quit` its `clear` removes that answer (RI-5 would otherwise keep the
    `done` as an unseen result on the shell's pane)."""
    pi = agent_cli("pi")
    work = tmp_path / "work"
    work.mkdir()
    env = pi_env(tmp_path, stage.api.url)
    extensions = Path(env["PI_CODING_AGENT_DIR"]) / "extensions"
    extensions.mkdir()
    shutil.copy(RECIPE, extensions / "paneboard.ts")
    env["PATH"] = f"{Path(PANEBOARD).parent}:{os.environ['PATH']}"  # `paneboard` as the recipe names it
    stage.open("bash --noprofile --norc -i", env, work)
    stage.wait_screen(lambda s: s.rstrip().endswith(("$", "#")), 30, "the shell's prompt")
    stage.keys(shlex.quote(str(pi)), literal=True)
    stage.keys("Enter")

    stage.wait_screen(lambda s: f"pi v{VERSION}" in s and "pb-model" in s, 120, "Pi's editor")
    stage.check({"agent": "pi", "state": "idle", "source": "protocol"}, 30, "idle (session_start)")
    stage.press_until(
        ["Please do PBTASK now"],
        lambda: "PBTASK" in stage.screen(),
        "the prompt typed",
        tries=3,
        each=5,
        literal=True,
    )
    stage.press_until(["Enter"], lambda: stage.api.held(1), "the prompt sent")
    stage.check({"agent": "pi", "state": "working", "source": "protocol"}, 30, "working (agent_start)")
    stage.api.release(1)
    stage.api.wait_held(2)
    stage.check({"agent": "pi", "state": "working", "source": "protocol"}, 30, "working after the tool call")
    stage.api.release(2)
    stage.wait_screen(lambda s: "All done: pb-ran exists." in s, 60, "the final answer")
    stage.check(
        {"agent": "pi", "state": "done", "source": "protocol", "msg": "All done: pb-ran exists."},
        30,
        "done (agent_end) with the answer",
    )
    seen = stage.states()
    if seen != ["idle", "working", "done"]:
        stage.gaps.append(f"states seen: {stage.walk()}")

    stage.press_until(
        ["/quit"], lambda: "/quit" in stage.screen(), "/quit typed", tries=3, each=5, literal=True
    )
    back = lambda: stage.screen().rstrip().endswith(("$", "#"))  # noqa: E731
    stage.press_until(["Enter"], back, "Pi gone, the shell's prompt back")
    stage.check({"agent": None, "state": None, "msg": None}, 30, "nothing of Pi left (session_shutdown)")
    assert not stage.gaps, "\n".join(stage.gaps)


@WHERE
def test_pi_turn_with_an_extension_asking(stage: Stage, agent_cli, tmp_path: Path) -> None:
    """Pi's own example extension permission-gate.ts (shipped in the package) asks before
    `rm -rf`: its selector takes the editor's place under the still-running loader, and
    the pane reads blocked/question with the extension's question until it is answered."""
    pi = agent_cli("pi")
    work = tmp_path / "work"
    (work / "pb-dir").mkdir(parents=True)
    (stage.api.root / "commands.json").write_text(json.dumps(["rm -rf pb-dir"]))
    gate = pi.parent.parent / "@mariozechner" / "pi-coding-agent" / "examples" / "extensions"
    env = pi_env(tmp_path, stage.api.url)
    extensions = Path(env["PI_CODING_AGENT_DIR"]) / "extensions"
    extensions.mkdir()
    shutil.copy(gate / "permission-gate.ts", extensions / "permission-gate.ts")
    stage.open(str(pi), env, work)

    stage.wait_screen(lambda s: f"pi v{VERSION}" in s and "permission-gate" in s, 120, "Pi's editor")
    stage.wait_class({"agent": "pi", "state": "idle", "kind": None}, 30, "idle at start")
    stage.press_until(
        ["Please do PBTASK now"],
        lambda: "PBTASK" in stage.screen(),
        "the prompt typed",
        tries=3,
        each=5,
        literal=True,
    )
    stage.press_until(["Enter"], lambda: stage.api.held(1), "the prompt sent")
    stage.check({"agent": "pi", "state": "working", "kind": None}, 20, "working")
    stage.api.release(1)
    stage.wait_screen(lambda s: "Dangerous command" in s and "Allow?" in s, 60, "the extension's question")
    stage.check(
        {
            "agent": "pi",
            "state": "blocked",
            "kind": "question",
            "msg": "⚠️ Dangerous command: / rm -rf pb-dir / Allow?",
        },
        20,
        "blocked on the extension's question",
    )
    stage.save("pi-gate", "blocked")
    assert (work / "pb-dir").exists()
    stage.press_until(["Enter"], lambda: stage.api.held(2), "the answer (Yes is selected)")
    assert not (work / "pb-dir").exists(), "the allowed command ran"
    stage.check({"agent": "pi", "state": "working", "kind": None}, 20, "working again after the answer")
    stage.api.release(2)
    stage.wait_screen(lambda s: "All done: pb-ran exists." in s, 60, "the final answer")
    stage.check({"agent": "pi", "state": "idle", "kind": None}, 30, "idle at the turn's end")
    seen = stage.states()
    if seen != ["idle", "working", "blocked", "working", "idle"]:
        stage.gaps.append(f"states seen: {seen}")
    assert not stage.gaps, "\n".join(stage.gaps)
