"""The real Qwen Code (0.24.4) against a loopback OpenAI chat-completions stand-in: an
`openai` model provider in its own `~/.qwen/settings.json` (`modelProviders.openai`,
`baseUrl` the stand-in, the key from `OPENAI_API_KEY`) selected by
`security.auth.selectedType = "openai"`, so it never offers Qwen OAuth or opens a
browser. Usage statistics, telemetry and auto-update are off there; folder trust is
off by default. Its default approval mode is `auto` (a model call judges each tool
call); the walks set the mode they need, and one runs the default.

Every prompt Qwen Code draws that the stand-in can make it draw is walked: a shell
command, a file write, an MCP server's tool, the ask_user_question dialog, the plan
approval, and the
shell command again under the default `auto` mode, whose judge (the stand-in, which
answers it with plain text) is unavailable, so it asks."""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path

import pytest
from harness import PANEBOARD, Stage

pytestmark = [pytest.mark.realagent, pytest.mark.tmux, pytest.mark.timeout(240)]

VERSION = "0.24.4"
RECIPE = Path(__file__).resolve().parents[2] / "docs" / "recipes" / "qwen-settings.json"


def qwen_env(
    tmp: Path, url: str, approval: str | None = "default", hooks: dict | None = None
) -> dict[str, str]:
    """Qwen Code's user settings for the stand-in, and the environment naming them.
    `approval` None leaves Qwen Code's own default mode (auto)."""
    home = tmp / "home"
    (home / ".qwen").mkdir(parents=True)
    settings: dict[str, object] = {
        "modelProviders": {
            "openai": [
                {"id": "pb-model", "name": "pb-model", "baseUrl": url + "/v1", "envKey": "OPENAI_API_KEY"}
            ]
        },
        "security": {"auth": {"selectedType": "openai"}, "folderTrust": {"enabled": False}},
        "model": {"name": "pb-model"},
        "general": {"enableAutoUpdate": False},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
        # the npm package ships its ripgrep without the execute bit: a warning box otherwise
        "tools": {"useRipgrep": False, **({"approvalMode": approval} if approval else {})},
    }
    if hooks is not None:
        settings["hooks"] = hooks
    (home / ".qwen" / "settings.json").write_text(json.dumps(settings))
    return {
        "HOME": str(home),
        "TERM": "xterm-256color",
        "OPENAI_API_KEY": "pb-dummy",
        "NO_UPDATE_NOTIFIER": "1",
    }


def start(stage: Stage, qwen: Path, env: dict[str, str], work: Path, shell: bool = False) -> None:
    """Qwen Code in the pane, up to its input; `shell`: typed into an interactive bash
    there, so the pane goes on after it exits."""
    if shell:
        stage.open("bash --noprofile --norc -i", env, work)
        stage.wait_screen(at_prompt, 30, "the shell's prompt")
        stage.keys(shlex.quote(str(qwen)), literal=True)
        stage.keys("Enter")
    else:
        stage.open(str(qwen), env, work)
    stage.wait_screen(
        lambda s: f"Qwen Code (v{VERSION})" in s and "Type your message" in s, 120, "Qwen's input"
    )


def at_prompt(screen: str) -> bool:
    """bash's own prompt on the last line drawn (`$`, or `#` as root)."""
    return screen.rstrip().endswith(("$", "#"))


def send_task(stage: Stage, text: str = "Please do PBTASK now") -> None:
    """Type the task and send it. Qwen Code reads its context files before the first
    request, so the request is waited for; Enter is pressed again only while the task
    still sits in the input (a second Enter during a turn would steer it)."""
    stage.press_until(
        [text], lambda: "PBTASK" in stage.screen(), "the prompt typed", tries=3, each=5, literal=True
    )
    stage.press_until(
        ["Enter"], lambda: "esc to cancel" in stage.screen() or stage.api.held(1), "the prompt sent", each=5
    )


def test_qwen_turn(stage: Stage, agent_cli, tmp_path: Path) -> None:
    qwen = agent_cli("qwen")
    work = tmp_path / "work"
    work.mkdir()
    start(stage, qwen, qwen_env(tmp_path, stage.api.url), work)
    stage.wait_class({"agent": "qwen", "state": "idle", "kind": None}, 30, "idle at start")
    stage.save("qwen", "idle")

    send_task(stage)
    stage.api.wait_held(1)
    stage.check({"agent": "qwen", "state": "working", "kind": None}, 30, "working")
    stage.save("qwen", "working")

    stage.api.release(1)
    stage.wait_screen(lambda s: "Allow execution of: 'touch'?" in s, 60, "the approval prompt")
    stage.check(
        {
            "agent": "qwen",
            "state": "blocked",
            "kind": "permission",
            "msg": "Allow execution of: 'touch'? / Shell touch pb-ran (Create pb-ran) ←",
        },
        20,
        "blocked on the approval prompt",
    )
    stage.save("qwen", "blocked")
    assert not (work / "pb-ran").exists()

    stage.press_until(["1"], lambda: stage.api.held(2), "the approval (1. Yes, allow once)")
    assert (work / "pb-ran").exists(), "the approved command ran"
    stage.check({"agent": "qwen", "state": "working", "kind": None}, 20, "working again after the approval")
    stage.save("qwen", "answered")

    stage.api.release(2)
    stage.wait_screen(lambda s: "All done: pb-ran exists." in s, 60, "the final answer")
    stage.check({"agent": "qwen", "state": "idle", "kind": None}, 30, "idle at the turn's end")
    stage.save("qwen", "done")
    seen = stage.states()
    if seen != ["idle", "working", "blocked", "working", "idle"]:
        stage.gaps.append(f"states seen: {seen}")
    assert not stage.gaps, "\n".join(stage.gaps)


def test_qwen_turn_through_a_file_write_and_a_question(stage: Stage, agent_cli, tmp_path: Path) -> None:
    """Qwen Code's two other prompts in one turn: write_file asks "Apply this change?"
    (blocked/permission), then ask_user_question shows its dialog (blocked/question, the
    question as msg); each answer moves it on to working."""
    qwen = agent_cli("qwen")
    work = tmp_path / "work"
    work.mkdir()
    write = {"file_path": str(work / "pb-note.txt"), "content": "written by the stand-in\n"}
    question = {
        "question": "Which colour should the button be?",
        "header": "Colour",
        "options": [
            {"label": "Blue", "description": "the house colour"},
            {"label": "Green", "description": "the old one"},
        ],
        "multiSelect": False,
    }
    (stage.api.root / "commands.json").write_text(
        json.dumps(
            [
                {"tool": "write_file", "args": write},
                {"tool": "ask_user_question", "args": {"questions": [question]}},
            ]
        )
    )
    start(stage, qwen, qwen_env(tmp_path, stage.api.url), work)
    stage.wait_class({"agent": "qwen", "state": "idle", "kind": None}, 30, "idle at start")
    send_task(stage)
    stage.api.wait_held(1)
    stage.check({"agent": "qwen", "state": "working", "kind": None}, 30, "working")

    stage.api.release(1)
    stage.wait_screen(lambda s: "Apply this change?" in s, 60, "the file write's prompt")
    stage.check(
        {
            "agent": "qwen",
            "state": "blocked",
            "kind": "permission",
            "msg": "Apply this change? / WriteFile Writing to pb-note.txt ←",
        },
        20,
        "blocked on the file write",
    )
    stage.save("qwen-edit", "blocked")
    assert not (work / "pb-note.txt").exists()
    stage.press_until(["1"], lambda: stage.api.held(2), "the write allowed (1. Yes, allow once)")
    assert (work / "pb-note.txt").read_text() == write["content"]
    stage.check({"agent": "qwen", "state": "working", "kind": None}, 20, "working after the write")

    stage.api.release(2)
    stage.wait_screen(
        lambda s: "Which colour should the button be?" in s and "Esc: Cancel" in s, 60, "the question"
    )
    stage.check(
        {
            "agent": "qwen",
            "state": "blocked",
            "kind": "question",
            "msg": "Which colour should the button be?",
        },
        20,
        "blocked on the question",
    )
    stage.save("qwen-question", "blocked")
    stage.press_until(["2"], lambda: stage.api.held(3), "the answer (2. Green)")
    answer = stage.api.requests()[-1]["body"]["messages"][-1]
    assert "**Colour**: Green" in json.dumps(answer), answer
    stage.check({"agent": "qwen", "state": "working", "kind": None}, 20, "working after the answer")

    stage.api.release(3)
    stage.wait_screen(lambda s: "All done: pb-ran exists." in s, 60, "the final answer")
    stage.check({"agent": "qwen", "state": "idle", "kind": None}, 30, "idle at the turn's end")
    seen = stage.states()
    if seen != ["idle", "working", "blocked", "working", "blocked", "working", "idle"]:
        stage.gaps.append(f"states seen: {stage.walk()}")
    assert not stage.gaps, "\n".join(stage.gaps)


def test_qwen_plan_approval(stage: Stage, agent_cli, tmp_path: Path) -> None:
    """In plan mode the model's exit_plan_mode shows the plan and "Would you like to
    proceed?": blocked/question; "1" approves and the turn goes on."""
    qwen = agent_cli("qwen")
    work = tmp_path / "work"
    work.mkdir()
    plan = {"tool": "exit_plan_mode", "args": {"plan": "1. Create pb-plan.txt\n2. Say so"}}
    (stage.api.root / "commands.json").write_text(json.dumps([plan]))
    start(stage, qwen, qwen_env(tmp_path, stage.api.url, approval="plan"), work)
    stage.wait_screen(lambda s: "plan mode" in s, 30, "plan mode in the footer")
    stage.wait_class({"agent": "qwen", "state": "idle", "kind": None}, 30, "idle at start")
    send_task(stage)
    stage.api.wait_held(1)
    stage.check({"agent": "qwen", "state": "working", "kind": None}, 30, "working")
    stage.api.release(1)
    stage.wait_screen(lambda s: "Would you like to proceed?" in s, 60, "the plan approval")
    stage.check(
        {
            "agent": "qwen",
            "state": "blocked",
            "kind": "question",
            "msg": "Would you like to proceed? / ExitPlanMode Plan: ←",
        },
        20,
        "blocked on the plan",
    )
    stage.save("qwen-plan", "blocked")
    stage.press_until(["1"], lambda: stage.api.held(2), "the plan approved (1. Yes, restore previous mode)")
    stage.check({"agent": "qwen", "state": "working", "kind": None}, 20, "working after the approval")
    stage.api.release(2)
    stage.wait_screen(lambda s: "All done: pb-ran exists." in s, 60, "the final answer")
    stage.check({"agent": "qwen", "state": "idle", "kind": None}, 30, "idle at the turn's end")
    seen = stage.states()
    if seen != ["idle", "working", "blocked", "working", "idle"]:
        stage.gaps.append(f"states seen: {stage.walk()}")
    assert not stage.gaps, "\n".join(stage.gaps)


def test_qwen_turn_with_the_hooks_recipe(stage: Stage, agent_cli, tmp_path: Path) -> None:
    """docs/recipes/qwen-settings.json's hooks, verbatim, in the real Qwen Code's user
    settings, Qwen Code started from an interactive shell: its reports carry the turn
    (`protocol`), the approval is blocked/permission with Qwen Code's message, the
    approval moves it on, and the turn ends `done` with the answer; at `/quit` SessionEnd's
    `clear` leaves nothing of it (RI-5 would otherwise keep the `done` as an unseen
    result on the shell's pane)."""
    qwen = agent_cli("qwen")
    work = tmp_path / "work"
    work.mkdir()
    env = qwen_env(tmp_path, stage.api.url, hooks=json.loads(RECIPE.read_text())["hooks"])
    env["PATH"] = f"{Path(PANEBOARD).parent}:{os.environ['PATH']}"  # `paneboard` as the recipe names it
    start(stage, qwen, env, work, shell=True)
    stage.wait_class({"agent": "qwen", "state": "idle", "kind": None}, 30, "idle at start")
    send_task(stage)
    stage.api.wait_held(1)
    stage.check({"agent": "qwen", "state": "working", "source": "protocol"}, 30, "working (UserPromptSubmit)")
    stage.api.release(1)
    stage.wait_screen(lambda s: "Allow execution of: 'touch'?" in s, 60, "the approval prompt")
    stage.check(
        {
            "agent": "qwen",
            "state": "blocked",
            "kind": "permission",
            "source": "protocol",
            "msg": "Qwen Code needs your permission to use run_shell_command",
        },
        30,
        "blocked/permission (Notification permission_prompt)",
    )
    stage.press_until(["1"], lambda: stage.api.held(2), "the approval")
    stage.check({"agent": "qwen", "state": "working", "source": "protocol"}, 30, "working (PostToolUse)")
    stage.api.release(2)
    stage.wait_screen(lambda s: "All done: pb-ran exists." in s, 60, "the final answer")
    stage.check(
        {"agent": "qwen", "state": "done", "source": "protocol", "msg": "All done: pb-ran exists."},
        30,
        "done (Stop) with the answer",
    )
    seen = stage.states()
    if seen != ["idle", "working", "blocked", "working", "done"]:
        stage.gaps.append(f"states seen: {stage.walk()}")

    stage.press_until(
        ["/quit"], lambda: "/quit" in stage.screen(), "/quit typed", tries=3, each=5, literal=True
    )
    stage.press_until(["Enter"], lambda: at_prompt(stage.screen()), "Qwen Code gone, the shell's prompt back")
    stage.check({"agent": None, "state": None, "msg": None}, 30, "nothing of Qwen Code left (SessionEnd)")
    assert not stage.gaps, "\n".join(stage.gaps)


def test_qwen_turn_in_its_default_auto_mode(stage: Stage, agent_cli, tmp_path: Path) -> None:
    """Qwen Code's own default approval mode, `auto`: a model call judges the tool call
    first. The stand-in answers the judge with plain text, so the judge is unavailable
    and Qwen Code asks, with a warning and "2. Switch to Default Mode and allow once"
    among the choices: blocked/permission, and only "allow once" and "no" are offered
    (choice 2 is no "always")."""
    qwen = agent_cli("qwen")
    work = tmp_path / "work"
    work.mkdir()
    start(stage, qwen, qwen_env(tmp_path, stage.api.url, approval=None), work)
    stage.wait_screen(lambda s: "Auto mode (shift + tab to cycle)" in s, 30, "auto mode in the footer")
    stage.wait_class({"agent": "qwen", "state": "idle", "kind": None}, 30, "idle at start")
    send_task(stage)
    stage.api.wait_held(1)
    stage.check({"agent": "qwen", "state": "working", "kind": None}, 30, "working")
    stage.api.release(1)
    stage.wait_screen(
        lambda s: "Switch to Default Mode and allow once" in s, 60, "the prompt after the judge"
    )
    stage.check(
        {"agent": "qwen", "state": "blocked", "kind": "permission"},
        20,
        "blocked once the judge is unavailable",
    )
    stage.save("qwen-auto", "blocked")
    assert not (work / "pb-ran").exists()
    stage.press_until(["1"], lambda: stage.api.held(2), "the approval (1. Yes, allow once)")
    assert (work / "pb-ran").exists(), "the approved command ran"
    stage.check({"agent": "qwen", "state": "working", "kind": None}, 20, "working after the approval")
    stage.api.release(2)
    stage.wait_screen(lambda s: "All done: pb-ran exists." in s, 60, "the final answer")
    stage.check({"agent": "qwen", "state": "idle", "kind": None}, 30, "idle at the turn's end")
    seen = stage.states()
    if seen != ["idle", "working", "blocked", "working", "idle"]:
        stage.gaps.append(f"states seen: {stage.walk()}")
    assert not stage.gaps, "\n".join(stage.gaps)


def test_qwen_turn_with_its_ui_in_german(stage: Stage, agent_cli, tmp_path: Path) -> None:
    """Qwen Code translates its prompts (general.language; "auto" follows the system's).
    The screen rules read the English ones; its title's glyphs are the same in every
    language, so a translated prompt still reads blocked/permission, from the title, with
    its question read off the screen, and no answer offered (none is declared for a
    prompt the rules cannot read)."""
    qwen = agent_cli("qwen")
    work = tmp_path / "work"
    work.mkdir()
    env = qwen_env(tmp_path, stage.api.url)
    settings_file = Path(env["HOME"]) / ".qwen" / "settings.json"
    settings = json.loads(settings_file.read_text())
    settings["general"]["language"] = "de"
    settings_file.write_text(json.dumps(settings))
    stage.open(str(qwen), env, work)
    stage.wait_screen(lambda s: "Nachricht eingeben" in s, 120, "Qwen's input, in German")
    stage.wait_class({"agent": "qwen", "state": "idle", "kind": None}, 30, "idle at start")
    stage.press_until(
        ["Please do PBTASK now"],
        lambda: "PBTASK" in stage.screen(),
        "the prompt typed",
        tries=3,
        literal=True,
    )
    stage.press_until(
        ["Enter"], lambda: "esc to cancel" in stage.screen() or stage.api.held(1), "the prompt sent", each=5
    )
    stage.api.wait_held(1)
    stage.check({"agent": "qwen", "state": "working", "kind": None}, 30, "working")
    stage.api.release(1)
    stage.wait_screen(
        lambda s: "Ausführung erlauben von: 'touch'?" in s, 60, "the approval prompt, in German"
    )
    stage.check(
        {
            "agent": "qwen",
            "state": "blocked",
            "kind": "permission",
            "source": "native",
            "msg": "Ausführung erlauben von: 'touch'? / Shell touch pb-ran (Create pb-ran) ←",
        },
        20,
        "blocked, from the title",
    )
    stage.save("qwen-de", "blocked")
    stage.press_until(["1"], lambda: stage.api.held(2), "the approval (1. Ja, einmal erlauben)")
    assert (work / "pb-ran").exists(), "the approved command ran"
    stage.check({"agent": "qwen", "state": "working", "kind": None}, 20, "working after the approval")
    stage.api.release(2)
    stage.wait_screen(lambda s: "All done: pb-ran exists." in s, 60, "the final answer")
    stage.check({"agent": "qwen", "state": "idle", "kind": None}, 30, "idle at the turn's end")
    seen = stage.states()
    if seen != ["idle", "working", "blocked", "working", "idle"]:
        stage.gaps.append(f"states seen: {stage.walk()}")
    assert not stage.gaps, "\n".join(stage.gaps)


#: A real MCP server (stdio, newline-delimited JSON-RPC) with one tool, `touch`, that
#: creates a file in its working directory: Qwen Code asks before it calls an MCP tool.
MCP_SERVER = r"""
import json, sys
from pathlib import Path
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    method, params = msg.get("method"), msg.get("params") or {}
    if method == "initialize":
        result = {"protocolVersion": params.get("protocolVersion", "2025-06-18"),
                  "capabilities": {"tools": {}}, "serverInfo": {"name": "pb", "version": "1"}}
    elif method == "tools/list":
        schema = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
        result = {"tools": [{"name": "touch", "description": "Create an empty file", "inputSchema": schema}]}
    elif method == "tools/call":
        Path(Path(params["arguments"]["name"]).name).touch()  # in its own directory only
        result = {"content": [{"type": "text", "text": "created"}]}
    else:
        result = {}
    print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}), flush=True)
"""


def test_qwen_turn_through_an_mcp_tool(stage: Stage, agent_cli, tmp_path: Path) -> None:
    """An MCP server's tool: "Allow execution of MCP tool "touch" from server "pb"?",
    blocked/permission with its choices, "1" allows it and the server's tool runs."""
    qwen = agent_cli("qwen")
    work = tmp_path / "work"
    work.mkdir()
    server = tmp_path / "pb_mcp.py"
    server.write_text(MCP_SERVER)
    call = {"tool": "mcp__pb__touch", "args": {"name": "pb-mcp"}}
    (stage.api.root / "commands.json").write_text(json.dumps([call]))
    env = qwen_env(tmp_path, stage.api.url)
    settings_file = Path(env["HOME"]) / ".qwen" / "settings.json"
    settings = json.loads(settings_file.read_text())
    settings["mcpServers"] = {"pb": {"command": "python3", "args": [str(server)], "cwd": str(work)}}
    # MCP tools are deferred behind tool_search by default; the stand-in calls what is offered
    settings["tools"]["visible"] = ["mcp__pb__touch"]
    settings_file.write_text(json.dumps(settings))
    start(stage, qwen, env, work)
    stage.wait_class({"agent": "qwen", "state": "idle", "kind": None}, 30, "idle at start")
    send_task(stage)
    stage.api.wait_held(1)
    offered = [t["function"]["name"] for t in stage.api.requests()[-1]["body"].get("tools", [])]
    assert "mcp__pb__touch" in offered, offered
    stage.check({"agent": "qwen", "state": "working", "kind": None}, 30, "working")
    stage.api.release(1)
    stage.wait_screen(lambda s: "Allow execution of MCP tool" in s, 60, "the MCP tool's prompt")
    stage.check({"agent": "qwen", "state": "blocked", "kind": "permission"}, 20, "blocked on the MCP tool")
    stage.save("qwen-mcp", "blocked")
    assert not (work / "pb-mcp").exists()
    stage.press_until(["1"], lambda: stage.api.held(2), "the call allowed (1. Yes, allow once)")
    assert (work / "pb-mcp").exists(), "the MCP tool ran"
    stage.check({"agent": "qwen", "state": "working", "kind": None}, 20, "working after the approval")
    stage.api.release(2)
    stage.wait_screen(lambda s: "All done: pb-ran exists." in s, 60, "the final answer")
    stage.check({"agent": "qwen", "state": "idle", "kind": None}, 30, "idle at the turn's end")
    seen = stage.states()
    if seen != ["idle", "working", "blocked", "working", "idle"]:
        stage.gaps.append(f"states seen: {stage.walk()}")
    assert not stage.gaps, "\n".join(stage.gaps)
