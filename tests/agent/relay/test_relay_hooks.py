"""The agent hook recipes in docs/recipes/, run the way the agents run them, in a tmux pane.

Each hook command is taken from the recipe file itself and run by `sh -c` with the
agent's JSON event on stdin (Claude Code, Gemini CLI) or as the last argument (Codex),
inside a real pane; the pane's output is decoded with the real Decoder.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from paneboard_protocol import AgentReport, ClearReport, Decoder, StatusReport
from relay_tmux import Tmux, q

pytestmark = pytest.mark.tmux
RECIPES = Path(__file__).resolve().parents[3] / "docs" / "recipes"
BIN = str(Path(sys.executable).parent)


def hook_command(settings: dict, event: str, matcher: str | None = None) -> str:
    for group in settings["hooks"][event]:
        if matcher is None or group.get("matcher") == matcher:
            return group["hooks"][0]["command"]
    raise AssertionError(f"no {event} hook for {matcher!r}")


def run_script(tmux: Tmux, tmp_path: Path, steps: list[tuple[str, dict | None]]) -> tuple[list, list[str]]:
    """Run each (command, stdin event) in one pane; return decoded events and each step's stdout."""
    lines = [f'export PATH={q(BIN)}:"$PATH"']
    for i, (command, event) in enumerate(steps):
        stdin = tmp_path / f"in{i}.json"
        stdin.write_text(json.dumps(event) if event is not None else "")
        lines.append(f"( {command} ) < {q(str(stdin))} > {q(str(tmp_path / f'out{i}'))}")
    script = tmp_path / "hooks.sh"
    script.write_text("\n".join(lines) + "\n")
    pane = tmux.pane(f"sh {q(str(script))}")
    assert pane.dead_status() == 0
    events = [
        e for e in Decoder().feed(pane.output()) if isinstance(e, StatusReport | AgentReport | ClearReport)
    ]
    outs = [(tmp_path / f"out{i}").read_text() for i in range(len(steps))]
    return events, outs


def summary(events: list) -> list[tuple]:
    out = []
    for e in events:
        if isinstance(e, StatusReport):
            out.append(("status", e.state, e.kind, e.app, e.msg))
        elif isinstance(e, AgentReport):
            out.append(("agent", e.agent, e.state, e.session) + (("ended",) if e.ended else ()))
        else:
            out.append(("clear", e.id))
    return out


def test_claude_code_hooks(tmux: Tmux, tmp_path: Path) -> None:
    settings = json.loads((RECIPES / "claude-settings.json").read_text())
    sid = "0f6c1d2e-3b4a-4c5d-8e9f-0a1b2c3d4e5f"
    base = {"session_id": sid, "transcript_path": "/tmp/t.jsonl", "cwd": "/src"}
    steps = [
        (
            hook_command(settings, "UserPromptSubmit"),
            base | {"hook_event_name": "UserPromptSubmit", "prompt": "hi"},
        ),
        (
            hook_command(settings, "Notification", "permission_prompt"),
            base | {"hook_event_name": "Notification", "message": "Claude needs your permission to use Bash"},
        ),
        (
            hook_command(settings, "PostToolUse"),
            base | {"hook_event_name": "PostToolUse", "tool_name": "Bash"},
        ),
        (
            hook_command(settings, "Notification", "elicitation_dialog"),
            base | {"hook_event_name": "Notification", "message": "Which database?\nPick one."},
        ),
        (hook_command(settings, "Stop"), base | {"hook_event_name": "Stop", "stop_hook_active": False}),
        (hook_command(settings, "SessionEnd"), base | {"hook_event_name": "SessionEnd", "reason": "exit"}),
    ]
    events, outs = run_script(tmux, tmp_path, steps)
    assert outs == [""] * len(steps)  # nothing on the hook's stdout, which Claude Code reads
    assert summary(events) == [
        ("status", "working", None, "claude-code", None),
        ("agent", "claude", "working", sid),
        ("status", "blocked", "permission", "claude-code", "Claude needs your permission to use Bash"),
        ("agent", "claude", "blocked", sid),
        ("status", "working", None, "claude-code", None),
        ("agent", "claude", "working", sid),
        ("status", "blocked", "question", "claude-code", "Which database? Pick one."),
        ("agent", "claude", "blocked", sid),
        ("status", "done", None, "claude-code", None),
        ("agent", "claude", "idle", sid),
        ("clear", None),
        ("agent", "claude", "idle", sid, "ended"),  # the session is over (TA-15, RI-6)
    ]


def test_gemini_cli_hooks(tmux: Tmux, tmp_path: Path) -> None:
    settings = json.loads((RECIPES / "gemini-settings.json").read_text())
    base = {"session_id": "g-1", "cwd": "/src", "timestamp": "2026-12-02T10:00:00Z"}
    steps = [
        (hook_command(settings, "BeforeAgent"), base | {"hook_event_name": "BeforeAgent", "prompt": "go"}),
        (
            hook_command(settings, "Notification", "ToolPermission"),
            base
            | {"hook_event_name": "Notification", "notification_type": "ToolPermission", "message": "Allow?"},
        ),
        (
            hook_command(settings, "AfterAgent"),
            base | {"hook_event_name": "AfterAgent", "prompt_response": "ok"},
        ),
        (hook_command(settings, "SessionEnd"), base | {"hook_event_name": "SessionEnd", "reason": "exit"}),
    ]
    events, outs = run_script(tmux, tmp_path, steps)
    assert outs == ["{}\n"] * len(steps)  # Gemini CLI parses a hook's stdout as JSON
    assert summary(events) == [
        ("status", "working", None, "gemini-cli", None),
        ("agent", "gemini", "working", "g-1"),
        ("status", "blocked", "permission", "gemini-cli", "Allow?"),
        ("agent", "gemini", "blocked", "g-1"),
        ("status", "done", None, "gemini-cli", None),
        ("agent", "gemini", "idle", "g-1"),
        ("clear", None),
        ("agent", "gemini", "idle", "g-1", "ended"),
    ]


def test_qwen_code_hooks(tmux: Tmux, tmp_path: Path) -> None:
    """Qwen Code's events as 0.24.4 sends them (Claude Code's shape: `message` on
    Notification, `last_assistant_message` on Stop)."""
    settings = json.loads((RECIPES / "qwen-settings.json").read_text())
    base = {"session_id": "q-1", "cwd": "/src", "timestamp": "2026-12-07T03:00:00Z"}
    notice = {
        "hook_event_name": "Notification",
        "notification_type": "permission_prompt",
        "title": "Permission needed",
        "message": "Qwen Code needs your permission to use run_shell_command",
    }
    steps = [
        (
            hook_command(settings, "UserPromptSubmit"),
            base | {"hook_event_name": "UserPromptSubmit", "prompt": "go"},
        ),
        (hook_command(settings, "Notification", "permission_prompt"), base | notice),
        (
            hook_command(settings, "PostToolUse"),
            base | {"hook_event_name": "PostToolUse", "tool_name": "run_shell_command"},
        ),
        (
            hook_command(settings, "Stop"),
            base
            | {"hook_event_name": "Stop", "stop_hook_active": False, "last_assistant_message": "Done:\nall"},
        ),
        (hook_command(settings, "SessionEnd"), base | {"hook_event_name": "SessionEnd", "reason": "other"}),
    ]
    events, outs = run_script(tmux, tmp_path, steps)
    assert outs == [""] * len(steps)  # nothing on stdout, which Qwen Code parses when there is any
    assert summary(events) == [
        ("status", "working", None, "qwen-code", None),
        ("agent", "qwen", "working", "q-1"),
        (
            "status",
            "blocked",
            "permission",
            "qwen-code",
            "Qwen Code needs your permission to use run_shell_command",
        ),
        ("agent", "qwen", "blocked", "q-1"),
        ("status", "working", None, "qwen-code", None),
        ("agent", "qwen", "working", "q-1"),
        ("status", "done", None, "qwen-code", "Done: all"),
        ("agent", "qwen", "idle", "q-1"),
        ("clear", None),
        ("agent", "qwen", "idle", "q-1", "ended"),
    ]


SID = "d2080304-9ab9-4aaf-a4f3-b69ddbfa1ada"  # a session id GitHub Copilot CLI 1.0.102 sent


def test_copilot_cli_hooks(tmux: Tmux, tmp_path: Path) -> None:
    """recipes/copilot-hooks.json with the events GitHub Copilot CLI 1.0.102 sent its hooks
    (camelCase names, as the real program gave them on stdin): its `sessionId` is each
    THINKTERM_AGENT report's session."""
    hooks = json.loads((RECIPES / "copilot-hooks.json").read_text())["hooks"]

    def command(event: str, matcher: str | None = None) -> str:
        entry = next(h for h in hooks[event] if h.get("matcher") == matcher)
        return str(entry["bash"])

    base = {"sessionId": SID, "timestamp": 1796612953409, "cwd": "/src"}
    notification = base | {"hook_event_name": "Notification", "title": "Permission needed"}
    steps = [
        (command("userPromptSubmitted"), base | {"prompt": "Please do PBTASK now"}),
        (
            command("notification", "permission_prompt"),
            notification | {"message": "Run command: touch pb-ran", "notification_type": "permission_prompt"},
        ),
        (command("postToolUse"), base | {"toolName": "bash", "toolArgs": {"command": "touch pb-ran"}}),
        (
            command("notification", "elicitation_dialog"),
            notification | {"message": "Information requested", "notification_type": "elicitation_dialog"},
        ),
        (command("agentStop"), base | {"stopReason": "end_turn", "stop_hook_active": False}),
        (command("sessionEnd"), base | {"reason": "user_exit"}),
    ]
    events, outs = run_script(tmux, tmp_path, steps)
    assert outs == [""] * len(steps)  # nothing on stdout, which Copilot reads for decisions
    assert summary(events) == [
        ("status", "working", None, "copilot-cli", None),
        ("agent", "copilot", "working", SID),
        ("status", "blocked", "permission", "copilot-cli", "Run command: touch pb-ran"),
        ("agent", "copilot", "blocked", SID),
        ("status", "working", None, "copilot-cli", None),
        ("agent", "copilot", "working", SID),
        ("status", "blocked", "question", "copilot-cli", "Information requested"),
        ("agent", "copilot", "blocked", SID),
        ("status", "done", None, "copilot-cli", None),
        ("agent", "copilot", "idle", SID),
        ("clear", None),
        ("agent", "copilot", "idle", SID, "ended"),
    ]


def test_codex_notify(tmux: Tmux, tmp_path: Path) -> None:
    config = tomllib.loads((RECIPES / "codex-config.toml").read_text())
    event = {
        "type": "agent-turn-complete",
        "thread-id": "th_42",
        "turn-id": "1",
        "cwd": "/src",
        "input-messages": ["fix the tests"],
        "last-assistant-message": "All 12 tests pass now.",
    }
    command = shlex.join([*config["notify"], json.dumps(event)])
    events, outs = run_script(tmux, tmp_path, [(command, None)])
    assert outs == [""]
    assert summary(events) == [
        ("status", "done", None, "codex", "All 12 tests pass now."),
        ("agent", "codex", "idle", "th_42"),
    ]
    # its own record: Codex's own `done` (on the root record, no text) never replaces it
    assert events[0].id == "codex-notify"


#: What the real Codex CLI 0.171.0 passed its notify program right after a prompt was
#: sent, while the turn was still running: the thread-naming side request (the prompt
#: is cut short here; the ids and the answer are the stand-in model's).
CODEX_TITLE_EVENT = {
    "type": "agent-turn-complete",
    "thread-id": "01a23aa6-2f52-79d1-bbf3-6978dfefca7f",
    "turn-id": "01a23aa6-2f74-7cb0-9ab8-100450ad9c0d",
    "cwd": "/src",
    "client": "codex-tui",
    "input-messages": [
        "Generate a concise, single-line task title of at most 36 characters and under five words "
        "where possible. Start with an imperative verb."
    ],
    "last-assistant-message": '{"title": "Fix the tests"}',
}


@pytest.mark.parametrize(
    "event",
    [
        CODEX_TITLE_EVENT,
        CODEX_TITLE_EVENT | {"input-messages": ["Write a brief catch-up for a user returning to this task."]},
        CODEX_TITLE_EVENT | {"type": "approval-requested", "input-messages": ["fix the tests"]},
    ],
    ids=["title side request", "catch-up side request", "not a turn's end"],
)
def test_codex_notify_of_a_side_request_reports_nothing(tmux: Tmux, tmp_path: Path, event: dict) -> None:
    """The recipe, run for Codex's own side request, writes nothing and succeeds; the
    user's turn ending after it still reports done."""
    config = tomllib.loads((RECIPES / "codex-config.toml").read_text())
    turn = CODEX_TITLE_EVENT | {
        "thread-id": "th_42",
        "input-messages": ["fix the tests"],
        "last-assistant-message": "All 12 tests pass now.",
    }
    steps = [(shlex.join([*config["notify"], json.dumps(e)]), None) for e in (event, turn)]
    events, outs = run_script(tmux, tmp_path, steps)
    assert outs == ["", ""]
    assert summary(events) == [
        ("status", "done", None, "codex", "All 12 tests pass now."),
        ("agent", "codex", "idle", "th_42"),
    ]


def aider_notifications_command() -> str:
    """The `notifications-command:` of recipes/aider.conf.yml (a double-quoted YAML scalar
    without escapes, which reads the same as a JSON string)."""
    for line in (RECIPES / "aider.conf.yml").read_text().splitlines():
        if line.startswith("notifications-command:"):
            return json.loads(line.split(":", 1)[1].strip())
    raise AssertionError("no notifications-command in aider.conf.yml")


def test_aider_notifications_command(tmux: Tmux, tmp_path: Path) -> None:
    """Aider runs it by `sh -c` (subprocess, shell=True) at its question or its prompt,
    it cannot tell which: it only names the agent, ready for input; no OSC 7501 record,
    which would stand over the screen (RI-2) until Aider exits."""
    events, outs = run_script(tmux, tmp_path, [(aider_notifications_command(), None)])
    assert outs == [""]
    assert summary(events) == [("agent", "aider", "idle", None)]


def test_hook_json_errors_are_one_line(tmp_path: Path) -> None:

    paneboard = os.path.join(BIN, "paneboard")
    env = {**os.environ, "PANEBOARD_TTY": str(tmp_path / "tty")}
    for raw, needle in [("{", "not valid JSON"), ("[1]", "not a JSON object")]:
        proc = subprocess.run(
            [paneboard, "emit", "done", "--hook-json", raw],
            capture_output=True,
            text=True,
            env=env,
            timeout=20,
        )
        assert proc.returncode == 2 and needle in proc.stderr and len(proc.stderr.splitlines()) == 1
    long_msg = {"message": "é" * 5000, "session_id": "bad session id"}
    proc = subprocess.run(
        [paneboard, "emit", "done", "--protocol", "both", "--agent", "a", "--hook-json", "-"],
        input=json.dumps(long_msg),
        capture_output=True,
        text=True,
        env=env,
        timeout=20,
    )
    assert proc.returncode == 0, proc.stderr
    status, agent = Decoder().feed((tmp_path / "tty").read_bytes())
    assert status.msg.endswith("…") and len(status.msg.encode()) <= 2048
    assert agent.session is None  # an id outside the grammar is left out, not fatal


def test_hook_json_text_is_made_reportable(tmp_path: Path) -> None:
    sink = tmp_path / "tty"
    event = json.dumps({"message": "tab\there\u2028line \ud800 bell\u0007 end"})
    env = {**os.environ, "PANEBOARD_TTY": str(sink)}
    proc = subprocess.run(
        [os.path.join(BIN, "paneboard"), "emit", "blocked", "--hook-json", event],
        capture_output=True,
        text=True,
        env=env,
        timeout=20,
    )
    assert proc.returncode == 0, proc.stderr
    [status] = Decoder().feed(sink.read_bytes())
    assert status.msg == "tab here line bell end"


@pytest.mark.parametrize("sid", ["x" * 129, "a\x1b]0;b", "two words", 42, ""])
def test_copilot_session_id_outside_the_grammar_is_left_out(tmp_path: Path, sid: object) -> None:
    """Copilot's `sessionId` is checked like `session_id`: an id too long, with control
    characters or spaces, not a string, or empty is dropped; the report is still written."""
    sink = tmp_path / "tty"
    event = json.dumps({"sessionId": sid, "timestamp": 1796612953409})
    argv = ["emit", "working", "--protocol", "both", "--agent", "copilot", "--hook-json", event]
    proc = subprocess.run(
        [os.path.join(BIN, "paneboard"), *argv],
        capture_output=True,
        text=True,
        env={**os.environ, "PANEBOARD_TTY": str(sink)},
        timeout=20,
    )
    assert proc.returncode == 0, proc.stderr
    status, agent = Decoder().feed(sink.read_bytes())
    assert (status.state, agent.state, agent.session) == ("working", "working", None)
