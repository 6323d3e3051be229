"""The model-API stand-in's conversation, without a real CLI: which command each turn asks."""

from __future__ import annotations

import json
from pathlib import Path

from model_api import COMMAND, State, classify


def test_without_commands_every_task_asks_the_one_command_and_a_result_ends_the_turn(tmp_path: Path) -> None:
    state = State(tmp_path)
    assert state.ask("task") == COMMAND
    assert state.ask("result") is None
    assert state.ask("task") == COMMAND


def test_commands_are_asked_in_turn_by_tool_results(tmp_path: Path) -> None:
    (tmp_path / "commands.json").write_text(json.dumps(["touch pb-1", "touch pb-2", "touch pb-3"]))
    state = State(tmp_path)
    assert [state.ask("task"), state.ask("result"), state.ask("result")] == [
        "touch pb-1",
        "touch pb-2",
        "touch pb-3",
    ]
    assert state.ask("result") is None  # the last command's result ends the turn


def test_commands_are_asked_in_turn_by_new_tasks(tmp_path: Path) -> None:
    """Aider sends no tool result back: each new task message asks the next command."""
    (tmp_path / "commands.json").write_text(json.dumps(["touch pb-1", "touch pb-2"]))
    state = State(tmp_path)
    assert [state.ask("task"), state.ask("task"), state.ask("task")] == [
        "touch pb-1",
        "touch pb-2",
        "touch pb-2",
    ]


def test_a_named_tool_call_is_asked_as_listed(tmp_path: Path) -> None:
    """An object in commands.json is a call of that tool (Copilot's file write, its question)."""
    create = {"tool": "create", "args": {"path": "/w/pb-note.txt", "file_text": "hello\n"}}
    (tmp_path / "commands.json").write_text(json.dumps([create, "touch pb-ran"]))
    state = State(tmp_path)
    assert [state.ask("task"), state.ask("result"), state.ask("result")] == [create, "touch pb-ran", None]


def test_qwen_codes_auto_mode_judge_is_a_side_request() -> None:
    """The judge's request carries the whole transcript, task word included, but offers
    only its structured-output tool: it is answered at once, never held as a turn."""
    judge = {"role": "user", "content": "transcript: Please do PBTASK now; pending: touch pb-ran"}
    schema = {"type": "function", "function": {"name": "respond_in_schema", "parameters": {}}}
    shell = {"type": "function", "function": {"name": "run_shell_command", "parameters": {}}}
    assert classify({"messages": [judge], "tools": [schema]}) == "side"
    assert classify({"messages": [judge], "tools": [shell]}) == "task"
