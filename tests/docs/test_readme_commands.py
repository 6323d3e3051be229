"""Every command the README shows exists, with the actions and options it shows.

The synopsis under "## Commands" is read line by line: each `paneboard CMD` is a real
subcommand, each action it lists (`token create | list | revoke`) answers `--help`,
and each `--option` is in that command's (or action's) own `--help`. Elsewhere,
`paneboard CMD --option` in code (spans and blocks) is held to the same help text,
and each `./scripts/NAME` is an executable file of the checkout.
"""

from __future__ import annotations

import functools
import os
import re
from pathlib import Path

from support.clirun import run_cli_text

from paneboard.cli import COMMANDS

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
OPTION = re.compile(r"(?<![\w-])--[a-z][a-z-]*")
# `paneboard CMD`, then its options with at most one value each
IN_TEXT = re.compile(r"(?<![\w/.-])paneboard ([a-z][a-z-]*)((?: --?[a-z][a-z-]*(?: [^\s|`-][^\s|`]*)?)*)")


@functools.cache
def help_text(*words: str) -> str | None:
    """`paneboard WORDS... --help`, or None when it is not a command."""
    res = run_cli_text(*words, "--help", cwd=ROOT)
    if res.returncode != 0 or not res.stdout.startswith("usage: paneboard " + " ".join(words)):
        return None
    return res.stdout


def synopsis() -> list[str]:
    """The lines of the first code block under "## Commands"."""
    section = README.split("\n## Commands\n", 1)[1]
    block = re.search(r"^```\w*\n(.*?)^```", section, re.S | re.M)
    assert block is not None, "README.md: no code block under ## Commands"
    return block[1].splitlines()


def code() -> str:
    """Everything in README.md's code spans and code blocks."""
    blocks = re.findall(r"^```\w*\n(.*?)^```", README, re.S | re.M)
    blocks = [re.sub(r"\s#\s.*$", "", b, flags=re.M) for b in blocks]  # not the comments
    spans = re.findall(r"`([^`\n]+)`", re.sub(r"^```.*?^```", "", README, flags=re.S | re.M))
    return "\n".join(blocks + spans)


def test_the_synopsis_lists_every_command() -> None:
    shown = [line.split()[1] for line in synopsis() if line.startswith("paneboard ")]
    assert len(shown) > 5
    assert sorted(shown) == sorted(COMMANDS)


def test_each_synopsis_line_is_what_the_command_accepts() -> None:
    missing = []
    lines = synopsis()
    for i, line in enumerate(lines):
        if not line.startswith("paneboard "):
            continue
        cmd, rest = line.split(None, 2)[1], line.split(None, 2)[2] if len(line.split()) > 2 else ""
        for cont in lines[i + 1 :]:  # an indented line continues the one above
            if cont.startswith("paneboard "):
                break
            rest += " " + cont
        top = help_text(cmd)
        if top is None:
            missing.append(f"paneboard {cmd}")
            continue
        for alt in rest.split(" | "):
            words = alt.split()
            action = words[0] if words and re.fullmatch(r"[a-z]+", words[0]) else None
            text = help_text(cmd, action) if action else top
            if text is None and re.search(rf"\{{[\w,]*\b{action}\b[\w,]*\}}", top):
                text = top  # a choice of the command itself (`db {upgrade,current}`)
            if text is None:
                missing.append(f"paneboard {cmd} {action}")
                continue
            for opt in OPTION.findall(alt):
                if not re.search(rf"(?<![\w-]){re.escape(opt)}(?![\w-])", text):
                    missing.append(f"paneboard {cmd}{' ' + action if action else ''} {opt}")
    assert missing == [], "README.md shows what the commands do not accept"


def test_commands_in_the_text_exist_with_their_options() -> None:
    missing = []
    found = 0
    for m in IN_TEXT.finditer(code()):
        cmd, tail = m[1], m[2]
        found += 1
        text = help_text(cmd) if cmd in COMMANDS else None
        if text is None:
            missing.append(f"paneboard {cmd}")
            continue
        for opt in OPTION.findall(tail):
            if not re.search(rf"(?<![\w-]){re.escape(opt)}(?![\w-])", text):
                missing.append(f"paneboard {cmd} {opt}")
    assert found > 5
    assert missing == []


def test_scripts_it_names_are_there() -> None:
    names = set(re.findall(r"\./scripts/([\w-]+)", README))
    assert {"demo", "test"} <= names
    for name in names:
        path = ROOT / "scripts" / name
        assert path.is_file() and os.access(path, os.X_OK), f"./scripts/{name}"
