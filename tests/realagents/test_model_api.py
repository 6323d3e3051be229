"""The model-API stand-in's conversation, without a real CLI: which command each turn asks."""

from __future__ import annotations

import json
from pathlib import Path

from model_api import COMMAND, State


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
