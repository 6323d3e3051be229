"""`paneboard run`'s arguments: options stop at CMD or at `--`; the rest is CMD's own."""

from __future__ import annotations

import pytest
from paneboard_agent.tools.relay import parse_args


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["claude"], (False, ["claude"])),
        (["--wrap", "claude"], (True, ["claude"])),
        (["claude", "--wrap"], (False, ["claude", "--wrap"])),  # CMD's own option
        (["claude", "--help"], (False, ["claude", "--help"])),
        (["--", "claude", "-x"], (False, ["claude", "-x"])),
        (["--wrap", "--", "claude"], (True, ["claude"])),
        (["--", "--wrap"], (False, ["--wrap"])),  # a program named --wrap
        (["sh", "-c", "echo", "--", "x"], (False, ["sh", "-c", "echo", "--", "x"])),
    ],
)
def test_options_stop_at_the_command(argv: list[str], expected: tuple[bool, list[str]]) -> None:
    assert parse_args(argv) == expected


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([], "no command given"),
        (["--wrap"], "no command given"),
        (["--"], "no command given"),
        (["-x", "claude"], "unknown option '-x' (put the command after --)"),
        (["--wr", "claude"], "unknown option '--wr' (put the command after --)"),  # no abbreviations
    ],
)
def test_usage_errors_are_one_line(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        parse_args(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err == f"paneboard run: {message}\n"
