"""The command-line reference in the docs, generated from the commands' own `--help`.

The README's synopsis and `docs/cli.md` are written by `cog` (cogapp) from what each
parser prints, so an option added, renamed or removed in code shows up in the docs on
the next `cog -r`, and `tests/docs/test_cli_reference.py` (`cog --check`) fails while
they differ. The text is read through each subcommand's public `main(argv)` contract
(`paneboard.cli.COMMANDS`), the way a user sees it, not from argparse's internals.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import os
import re
from collections.abc import Iterator

from paneboard.cli import COMMANDS

# Fixed so the generated text does not depend on the terminal that runs `cog`.
HELP_COLUMNS = 88
SYNOPSIS_WIDTH = 100
# `ACTION ...` (subparsers with a metavar) lists its actions indented under it.
_ACTION_LINE = re.compile(r"^    ([a-z][a-z-]*)(?:\s{2,}|$)", re.M)
_CHOICES = re.compile(r"\{([a-z][a-z,-]*)\} \.\.\.")


@contextlib.contextmanager
def _columns(width: int) -> Iterator[None]:
    """argparse wraps to `$COLUMNS`; pin it while a help text is made."""
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(width)
    try:
        yield
    finally:
        if old is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = old


def help_text(command: str, *action: str) -> str:
    """What `paneboard COMMAND [ACTION] --help` prints, run in this process."""
    module_name, func_name, _ = COMMANDS[command]
    main = getattr(importlib.import_module(module_name), func_name)
    out = io.StringIO()
    # argparse exits after printing help
    with _columns(HELP_COLUMNS), contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
        main([*action, "--help"])
    text = out.getvalue()
    expected = "usage: " + " ".join(["paneboard", command, *action])
    if not text.startswith(expected):
        raise ValueError(f"`{expected[7:]} --help` printed no usage line: {text[:80]!r}")
    return text.rstrip() + "\n"


def actions(command: str) -> list[str]:
    """The sub-actions a command's help lists (`token create|list|revoke`), else []."""
    text = help_text(command)
    usage = _usage(text)
    if (m := _CHOICES.search(usage)) is not None:
        return m[1].split(",")
    if usage.endswith(" ACTION ..."):
        section = text.split("\npositional arguments:\n", 1)[1].split("\n\n", 1)[0]
        return _ACTION_LINE.findall(section)
    return []


def _usage(text: str) -> str:
    """The usage paragraph on one line, `usage: ` dropped."""
    paragraph = text.split("\n\n", 1)[0]
    return " ".join(paragraph.split())[len("usage: ") :]


def _words(usage: str) -> list[str]:
    """Split a usage line on spaces outside brackets, dropping `[-h]`.

    A mutually exclusive group's ` | ` is closed up (`[--viewer|--collector]`) so that
    ` | ` in the synopsis only ever separates a command's actions.
    """
    usage = re.sub(r"\s+\|\s+", "|", usage)
    words: list[str] = []
    depth, start = 0, 0
    for i, ch in enumerate(usage + " "):
        if ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
        elif ch == " " and depth == 0:
            if usage[start:i] and usage[start:i] != "[-h]":
                words.append(usage[start:i])
            start = i + 1
    return words


def _wrap(head: str, words: list[str], indent: int) -> list[str]:
    lines, line = [], head
    for word in words:
        if len(line) + 1 + len(word) > SYNOPSIS_WIDTH and line.strip():
            lines.append(line)
            line = " " * indent + word
        else:
            line = f"{line} {word}" if line.strip() else line + word
    return [*lines, line]


def synopsis() -> str:
    """One entry per command, its actions separated by ` | `, for the README."""
    width = max(len(name) for name in COMMANDS)
    indent = len("paneboard ") + width + 1
    lines: list[str] = []
    for command in COMMANDS:
        head = f"paneboard {command:<{width}}"
        subs = actions(command)
        if not subs:
            words = _words(_usage(help_text(command)))[2:]  # without `paneboard CMD`
            lines += _wrap(head, words, indent)
            continue
        for n, sub in enumerate(subs):
            words = _words(_usage(help_text(command, sub)))[2:]  # `CMD ACTION ...`
            if n:
                words[0] = "| " + words[0]
            lines += _wrap(head if n == 0 else " " * indent, words, indent + 2)
    return "\n".join(line.rstrip() for line in lines) + "\n"


def readme_block() -> str:
    """The synopsis as the README's fenced block."""
    return "```\n" + synopsis() + "```\n"


def help_block(command: str, *action: str) -> str:
    """One command's `--help` as a fenced block, for the page that documents it."""
    return "```\n" + help_text(command, *action) + "```\n"


def reference() -> str:
    """Every command's and action's full `--help`, for `docs/cli.md`."""
    parts: list[str] = []
    for command in COMMANDS:
        for words in [(command,), *((command, sub) for sub in actions(command))]:
            parts.append(f"## `paneboard {' '.join(words)}`\n\n{help_block(*words)}")
    return "\n".join(parts)
