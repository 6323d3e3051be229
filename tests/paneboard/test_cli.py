"""The umbrella command: dispatch, help and the one-line error contract."""

from __future__ import annotations

from support.clirun import run_cli_text as run_cli

from paneboard.cli import COMMANDS, main


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


def test_a_mistyped_command_or_option_gets_a_suggestion() -> None:
    """Issue 24 item 9: argparse in Python 3.11 has no suggest_on_error; each mistyped
    --option (of the command or of a subcommand's parser) names the close one, on the
    same one line, and nothing is suggested when nothing is close."""
    result = run_cli("sevre")
    assert result.returncode == 2 and result.stderr.count("\n") == 1
    assert "did you mean `paneboard serve`?" in result.stderr
    cases = [
        (("agent", "--sever", "http://x", "--tokn", "t"),
         ["--sever: did you mean --server?", "--tokn: did you mean --token?"]),
        (("serve", "--prot", "9"), ["--prot: did you mean --port?"]),
        (("token", "create", "wall", "--veiwer"), ["--veiwer: did you mean --viewer?"]),
        (("emit", "--knd", "question", "blocked"), ["--knd: did you mean --kind?"]),
    ]  # fmt: skip
    for args, hints in cases:
        result = run_cli(*args)
        assert result.returncode == 2, (args, result.stderr)
        assert result.stderr.count("\n") == 1, result.stderr
        for hint in hints:
            assert hint in result.stderr, (args, result.stderr)
    for far in (("serve", "--xyzzy"), ("emit", "--stat", "blocked")):  # --stat is not --tty
        result = run_cli(*far)
        assert result.returncode == 2 and "did you mean" not in result.stderr, result.stderr
    # An abbreviation argparse accepts is not "mistyped".
    result = run_cli("serve", "--mig", "--prot", "1")
    assert "--mig:" not in result.stderr and "--prot: did you mean --port?" in result.stderr
