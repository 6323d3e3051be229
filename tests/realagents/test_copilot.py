"""The real GitHub Copilot CLI (1.0.102) against a loopback OpenAI chat-completions
stand-in, with no GitHub sign-in: its own BYOK settings (`COPILOT_PROVIDER_BASE_URL`,
`COPILOT_PROVIDER_API_KEY`, `COPILOT_MODEL`) name the stand-in, and `COPILOT_OFFLINE=true`
switches off every other network use (GitHub authentication, telemetry, web tools, the
GitHub MCP server, auto-update). Copilot asks before each shell command and each file
write, asks to trust a folder on its first start there, and its ask_user tool shows a
form: the walks go through each, answered at the terminal as a user would, and the
pane must read right at every step — and, with docs/recipes/copilot-hooks.json as its
user hooks, by Copilot's own reports."""

from __future__ import annotations

import json
import os
import shlex
import shutil
from pathlib import Path

import pytest
from harness import PANEBOARD, Stage
from install import AGENTS
from paneboard_protocol import AgentReport, Decoder

pytestmark = [pytest.mark.realagent, pytest.mark.tmux, pytest.mark.timeout(240)]

VERSION = "1.0.102"
RECIPE = Path(__file__).resolve().parents[2] / "docs" / "recipes" / "copilot-hooks.json"
TASK = "Please do PBTASK now"
#: The ask_user tool's call: one question, two suggested answers.
ASK = {
    "tool": "ask_user",
    "args": {
        "message": "Which colour should the note be?",
        "requestedSchema": {
            "properties": {"colour": {"type": "string", "title": "Colour", "enum": ["red", "blue"]}},
            "required": ["colour"],
        },
    },
}


def copilot_env(tmp: Path, url: str, trusted: Path | None = None) -> dict[str, str]:
    """A HOME of the test's own for Copilot (its settings in ~/.copilot), and the
    environment pointing it at the stand-in; `trusted`: a folder it trusts already."""
    home = tmp / "home"
    conf = home / ".copilot"
    conf.mkdir(parents=True)
    (conf / "settings.json").write_text(json.dumps({"banner": "never"}))
    if trusted is not None:  # where "Yes, and remember this folder" keeps it
        (conf / "config.json").write_text(json.dumps({"trustedFolders": [str(trusted)]}))
    return {
        "HOME": str(home),
        "TERM": "xterm-256color",
        "COPILOT_OFFLINE": "true",
        "COPILOT_AUTO_UPDATE": "false",
        "COPILOT_PROVIDER_BASE_URL": url + "/v1",
        "COPILOT_PROVIDER_API_KEY": "pb-dummy",
        "COPILOT_MODEL": "pb-model",
        **AGENTS["copilot"].env(),
    }


def ready(screen: str) -> bool:
    """Copilot's input box with its idle footer (its first start also shows a version)."""
    return "/ commands" in screen and "pb-model" in screen


def at_prompt(screen: str) -> bool:
    """bash's own prompt on the last line drawn (`$`, or `#` as root)."""
    return screen.rstrip().endswith(("$", "#"))


def send_task(stage: Stage) -> None:
    stage.press_until(
        [TASK], lambda: "PBTASK" in stage.screen(), "the prompt typed", tries=3, each=5, literal=True
    )
    stage.press_until(["Enter"], lambda: stage.api.held(1), "the prompt sent")


def test_copilot_turn(stage: Stage, agent_cli, tmp_path: Path) -> None:
    copilot = agent_cli("copilot")
    work = tmp_path / "work"
    work.mkdir()
    stage.open(str(copilot), copilot_env(tmp_path, stage.api.url), work)

    stage.wait_screen(lambda s: "Do you trust the files in this folder?" in s, 120, "the trust dialog")
    stage.check(
        {
            "agent": "copilot",
            "state": "blocked",
            "kind": "question",
            "msg": f"Do you trust the files in this folder? / {work}",
        },
        30,
        "blocked on the folder's trust",
    )
    stage.save("copilot", "trust")
    stage.press_until(["1"], lambda: ready(stage.screen()), "the folder trusted")
    stage.check({"agent": "copilot", "state": "idle", "kind": None}, 30, "idle, trusted")
    stage.save("copilot", "idle")

    send_task(stage)
    stage.check({"agent": "copilot", "state": "working", "kind": None}, 20, "working")
    stage.save("copilot", "working")

    # A draft typed while Copilot works sits in the input box above the footer.
    stage.keys("a draft typed while Copilot works", literal=True)
    stage.wait_screen(lambda s: "a draft typed while" in s, 30, "the draft in the input box")
    stage.check({"agent": "copilot", "state": "working", "kind": None}, 20, "working with a draft")
    stage.save("copilot", "draft")
    stage.press_until(["C-u"], lambda: "a draft typed" not in stage.screen(), "the draft cleared")

    stage.api.release(1)
    stage.wait_screen(lambda s: "Do you want to run this command?" in s, 60, "the permission dialog")
    stage.check(
        {
            "agent": "copilot",
            "state": "blocked",
            "kind": "permission",
            "msg": "Do you want to run this command? / touch pb-ran",
        },
        20,
        "blocked on the shell command",
    )
    stage.save("copilot", "blocked")
    assert not (work / "pb-ran").exists()
    stage.press_until(["1"], lambda: stage.api.held(2), "the command approved")
    assert (work / "pb-ran").exists(), "the approved command ran"
    stage.check({"agent": "copilot", "state": "working", "kind": None}, 20, "working after the approval")
    stage.save("copilot", "answered")

    stage.api.release(2)
    stage.wait_screen(lambda s: "All done: pb-ran exists." in s and ready(s), 60, "the final answer")
    stage.check({"agent": "copilot", "state": "idle", "kind": None}, 30, "idle at the turn's end")
    stage.save("copilot", "done")
    # Its bundled package was unpacked once, beside the install, not into this HOME.
    assert (AGENTS["copilot"].dir / "pkg-cache" / "pkg").is_dir()
    assert not (tmp_path / "home" / ".cache" / "copilot").exists()
    seen = stage.states()
    want = ["blocked", "idle", "working", "blocked", "working", "idle"]
    # Before its dialog draws, Copilot's blank screen reads as the known agent's idle.
    if seen not in (want, ["idle", *want]):
        stage.gaps.append(f"states seen: {stage.walk()}")
    assert not stage.gaps, "\n".join(stage.gaps)


def test_copilot_file_write_question_and_refusal(stage: Stage, agent_cli, tmp_path: Path) -> None:
    """Copilot's other prompts in one turn, in a folder it trusts already (no dialog):
    the file write's permission (approved), the ask_user form (its first suggestion
    taken), then a shell command refused with Esc, which ends the turn."""
    copilot = agent_cli("copilot")
    work = tmp_path / "work"
    work.mkdir()
    note = work / "pb-note.txt"
    create = {"tool": "create", "args": {"path": str(note), "file_text": "hello\n"}}
    (stage.api.root / "commands.json").write_text(json.dumps([create, ASK, "touch pb-ran"]))
    stage.open(str(copilot), copilot_env(tmp_path, stage.api.url, trusted=work), work)

    stage.wait_screen(ready, 120, "Copilot's input box")
    stage.check({"agent": "copilot", "state": "idle", "kind": None}, 30, "idle at start")
    send_task(stage)
    stage.check({"agent": "copilot", "state": "working", "kind": None}, 20, "working")

    stage.api.release(1)
    stage.wait_screen(lambda s: f"Do you want to create {note}?" in s, 60, "the file write's dialog")
    stage.check(
        {
            "agent": "copilot",
            "state": "blocked",
            "kind": "permission",
            "msg": f"Do you want to create {note}?",
        },
        20,
        "blocked on the file write",
    )
    stage.save("copilot-prompts", "blocked")
    stage.press_until(["1"], lambda: stage.api.held(2), "the write approved")
    assert note.read_text() == "hello\n"
    stage.check({"agent": "copilot", "state": "working", "kind": None}, 20, "working after the write")
    stage.save("copilot-prompts", "answered")

    stage.api.release(2)
    stage.wait_screen(lambda s: "Copilot needs information." in s, 60, "the ask_user form")
    stage.check(
        {
            "agent": "copilot",
            "state": "blocked",
            "kind": "question",
            "msg": "Which colour should the note be?",
        },
        20,
        "blocked on the model's question",
    )
    stage.save("copilot-prompts", "ask")
    stage.press_until(["Enter"], lambda: stage.api.held(3), "the first suggestion taken")
    assert "User responded: red" in json.dumps(stage.api.requests()[-1]["body"]["messages"][-1])
    stage.check({"agent": "copilot", "state": "working", "kind": None}, 20, "working after the answer")

    stage.api.release(3)
    stage.wait_screen(lambda s: "Do you want to run this command?" in s, 60, "the shell command's dialog")
    stage.check({"agent": "copilot", "state": "blocked", "kind": "permission"}, 20, "blocked on the command")
    stage.press_until(["Escape"], lambda: ready(stage.screen()), "the command refused")
    stage.wait_screen(lambda s: "Operation cancelled by user" in s, 30, "the turn stopped")
    assert not (work / "pb-ran").exists(), "the refused command did not run"
    stage.check({"agent": "copilot", "state": "idle", "kind": None}, 30, "idle after the refusal")
    stage.save("copilot-prompts", "done")
    seen = stage.states()
    want = ["idle", "working", "blocked", "working", "blocked", "working", "blocked", "idle"]
    # Esc shows "Cancelling", then the turn's footer, in the footer until the turn has stopped.
    if seen not in (want, [*want[:-1], "working", "idle"]):
        stage.gaps.append(f"states seen: {stage.walk()}")
    assert not stage.gaps, "\n".join(stage.gaps)


def test_copilot_turn_with_the_hooks_recipe(stage: Stage, agent_cli, tmp_path: Path) -> None:
    """docs/recipes/copilot-hooks.json, verbatim, as a user hooks file of the real Copilot
    (~/.copilot/hooks/), Copilot started from an interactive shell: each step is
    Copilot's own report (`protocol`) — the ask_user form blocked/question and the
    permission blocked/permission, each with its notification's message — the turn ends
    `done`, and at `/exit` sessionEnd's `clear` leaves nothing of Copilot (RI-5 would
    otherwise keep the `done` as an unseen result on the shell's pane)."""
    copilot = agent_cli("copilot")
    work = tmp_path / "work"
    work.mkdir()
    (stage.api.root / "commands.json").write_text(json.dumps([ASK, "touch pb-ran"]))
    env = copilot_env(tmp_path, stage.api.url, trusted=work)
    hooks = Path(env["HOME"]) / ".copilot" / "hooks"
    hooks.mkdir()
    shutil.copy(RECIPE, hooks / "paneboard.json")
    env["PATH"] = f"{Path(PANEBOARD).parent}:{os.environ['PATH']}"  # `paneboard` as the recipe names it
    stage.open("bash --noprofile --norc -i", env, work)
    stage.wait_screen(at_prompt, 30, "the shell's prompt")
    stage.keys(shlex.quote(str(copilot)), literal=True)
    stage.keys("Enter")

    stage.wait_screen(ready, 120, "Copilot's input box")
    stage.wait_class({"agent": "copilot", "state": "idle"}, 30, "idle at start")
    send_task(stage)
    stage.check(
        {"agent": "copilot", "state": "working", "source": "protocol"}, 30, "working (userPromptSubmitted)"
    )
    stage.api.release(1)
    stage.wait_screen(lambda s: "Copilot needs information." in s, 60, "the ask_user form")
    stage.check(
        {
            "agent": "copilot",
            "state": "blocked",
            "kind": "question",
            "source": "protocol",
            "msg": "Information requested",  # the notification's own text, not the question
        },
        30,
        "blocked/question (notification elicitation_dialog)",
    )
    stage.press_until(["Enter"], lambda: stage.api.held(2), "the first suggestion taken")
    stage.check({"agent": "copilot", "state": "working", "source": "protocol"}, 30, "working (postToolUse)")
    stage.api.release(2)
    stage.wait_screen(lambda s: "Do you want to run this command?" in s, 60, "the permission dialog")
    stage.check(
        {
            "agent": "copilot",
            "state": "blocked",
            "kind": "permission",
            "source": "protocol",
            "msg": "Run command: touch pb-ran",
        },
        30,
        "blocked (notification permission_prompt)",
    )
    stage.press_until(["1"], lambda: stage.api.held(3), "the command approved")
    stage.check({"agent": "copilot", "state": "working", "source": "protocol"}, 30, "working (postToolUse)")
    stage.api.release(3)
    stage.wait_screen(lambda s: "All done: pb-ran exists." in s, 60, "the final answer")
    stage.check({"agent": "copilot", "state": "done", "source": "protocol"}, 30, "done (agentStop)")
    seen = stage.states()
    if seen[-6:] != ["working", "blocked", "working", "blocked", "working", "done"]:
        stage.gaps.append(f"states seen: {stage.walk()}")

    stage.press_until(
        ["/exit"], lambda: "/exit" in stage.screen(), "/exit typed", tries=3, each=5, literal=True
    )
    stage.press_until(["Enter"], lambda: at_prompt(stage.screen()), "Copilot gone, the shell's prompt back")
    stage.check({"agent": None, "state": None, "msg": None}, 30, "nothing of Copilot left (sessionEnd)")
    # every THINKTERM_AGENT report carries the session Copilot's hook events named (`sessionId`)
    reports = [e for e in Decoder().feed(stage.raw.read_bytes()) if isinstance(e, AgentReport)]
    sessions = {r.session for r in reports}
    assert reports and len(sessions) == 1 and None not in sessions, reports
    assert not stage.gaps, "\n".join(stage.gaps)
