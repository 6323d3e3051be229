"""The umbrella command: dispatch, help and the one-line error contract."""

from __future__ import annotations

import subprocess
import sys

from paneboard.cli import COMMANDS, main


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "paneboard.cli", *args], capture_output=True, text=True, timeout=60
    )


def test_help_lists_every_command() -> None:
    result = run_cli("--help")
    assert result.returncode == 0
    for name in COMMANDS:
        assert f"  {name} " in result.stdout


def test_unknown_command_is_one_line_and_exit_2() -> None:
    result = run_cli("frobnicate")
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0
    assert "unknown command 'frobnicate'" in result.stderr


def test_no_arguments_prints_usage_and_fails(capsys) -> None:
    assert main([]) == 2
    assert "usage: paneboard" in capsys.readouterr().out


def test_every_command_module_is_importable() -> None:
    """Each table entry must point at a real function, so no command is a dead end."""
    import importlib

    for name, (module, func, _) in COMMANDS.items():
        try:
            mod = importlib.import_module(module)
        except ImportError as exc:  # pragma: no cover - reported with the command's name
            raise AssertionError(f"{name}: {module} does not import: {exc}") from exc
        assert callable(getattr(mod, func)), f"{name}: {module}.{func} is not callable"
