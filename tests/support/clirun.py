"""`paneboard ...` called in this process, with its output and exit code captured.

Starting `python -m paneboard.cli` costs a fresh interpreter and its imports per call; a
test that checks only what the command prints, exits with or writes does not need that.
This calls `paneboard.cli.main(argv)` (the entry point `python -m paneboard.cli` and the
`paneboard` script run), with stdin, stdout and stderr as byte streams and, if given,
the environment and working directory swapped for the call, like
`subprocess.run(capture_output=True)`. Keep a subprocess where the process itself is the
subject: signals, exit on SIGTERM, a closed or broken pipe, a tty, `python -m`, file
descriptors, privileges.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, TypeVar
from unittest import mock

T = TypeVar("T", bytes, str)


@dataclass(frozen=True)
class CliResult(Generic[T]):
    """The fields of `subprocess.CompletedProcess` the tests read."""

    args: list[str]
    returncode: int
    stdout: T
    stderr: T


def _exit_code(exc: SystemExit, err: io.TextIOBase) -> int:
    # What the interpreter does with SystemExit at the top: None is 0, an int is itself,
    # anything else is printed to stderr and is 1 (argparse's errors exit with 2).
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code
    print(exc.code, file=err)
    return 1


@contextlib.contextmanager
def _environment(env: Mapping[str, str] | None, cwd: str | Path | None) -> Iterator[None]:
    with contextlib.ExitStack() as stack:
        if env is not None:
            stack.enter_context(mock.patch.dict(os.environ, dict(env), clear=True))
        # A pipe has no terminal size, so argparse wraps its help at 80 columns there; here
        # pytest's own stdout may be a terminal of any width.
        stack.enter_context(mock.patch.dict(os.environ, {"COLUMNS": os.environ.get("COLUMNS", "80")}))
        if cwd is not None:
            stack.enter_context(contextlib.chdir(cwd))
        yield


def _call(
    argv: list[str], stdin: bytes, env: Mapping[str, str] | None, cwd: str | Path | None
) -> tuple[int, bytes, bytes]:
    from paneboard.cli import main

    out, err = io.BytesIO(), io.BytesIO()
    # Text streams over bytes, so commands that write to sys.stdout.buffer work as on a pipe.
    t_in = io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8", errors="surrogateescape")
    t_out = io.TextIOWrapper(out, encoding="utf-8", errors="surrogateescape", write_through=True)
    t_err = io.TextIOWrapper(err, encoding="utf-8", errors="backslashreplace", write_through=True)
    with (
        _environment(env, cwd),
        mock.patch.object(sys, "stdin", t_in),
        contextlib.redirect_stdout(t_out),
        contextlib.redirect_stderr(t_err),
    ):
        try:
            code = int(main(argv) or 0)
        except SystemExit as exc:
            code = _exit_code(exc, t_err)
        t_out.flush()
        t_err.flush()
    return code, out.getvalue(), err.getvalue()


def run_cli(
    *argv: str, stdin: bytes = b"", env: Mapping[str, str] | None = None, cwd: str | Path | None = None
) -> CliResult[bytes]:
    """`paneboard *argv` in-process; `env` replaces the whole environment for the call."""
    code, out, err = _call(list(argv), stdin, env, cwd)
    return CliResult(["paneboard", *argv], code, out, err)


def run_cli_text(
    *argv: str, stdin: str = "", env: Mapping[str, str] | None = None, cwd: str | Path | None = None
) -> CliResult[str]:
    """As `run_cli`, decoded as UTF-8 (like `subprocess.run(text=True)`)."""
    code, out, err = _call(list(argv), stdin.encode(), env, cwd)
    return CliResult(["paneboard", *argv], code, out.decode(errors="replace"), err.decode(errors="replace"))
