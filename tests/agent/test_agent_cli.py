"""`paneboard agent` argument handling: one clear line on stderr, non-zero exit."""

from __future__ import annotations

import os

import pytest
from support.clirun import CliResult, run_cli_text


def _agent(*args: str, env: dict[str, str] | None = None) -> CliResult[str]:
    environ = {k: v for k, v in os.environ.items() if k != "PANEBOARD_TOKEN"} | (env or {})
    return run_cli_text("agent", *args, env=environ)


def test_token_from_environment_satisfies_server() -> None:
    """$PANEBOARD_TOKEN stands in for --token (keeps it out of `ps`): the next check runs."""
    res = _agent("--server", "http://x", "--config", "/nonexistent.toml", env={"PANEBOARD_TOKEN": "t"})
    assert res.returncode == 2
    assert res.stderr.startswith("paneboard agent: /nonexistent.toml: cannot read"), res.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "paneboard agent: give exactly one of --stdout or --server URL"),
        (
            ("--stdout", "--server", "http://x", "--token", "t"),
            "give exactly one of --stdout or --server URL",
        ),
        (("--server", "http://x"), "paneboard agent: --server needs --token (or $PANEBOARD_TOKEN)"),
        (("--stdout", "--ssh", "h:notaport"), "paneboard agent: --ssh 'h:notaport': bad port 'notaport'"),
        (
            ("--stdout", "--tmux-socket", "/tmp/x"),
            "paneboard agent: --tmux-socket: a socket name (tmux -L), not a path",
        ),
        (("--stdout", "--bogus"), "paneboard agent: unrecognized arguments: --bogus"),
        (("--stdout", "--config", "/nonexistent.toml"), "paneboard agent: /nonexistent.toml: cannot read"),
    ],
)
def test_bad_arguments_give_one_line(args: tuple[str, ...], message: str) -> None:
    res = _agent(*args)
    assert res.returncode == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], res.stderr
    assert res.stdout == ""
