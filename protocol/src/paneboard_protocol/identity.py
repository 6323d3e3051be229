"""Which process of a pane's foreground group is the program (RI-1), and why.

RI-1 names the program from the foreground process-group leader. A wrapper that stays
in front hides it: `bash -c 'claude; exec bash'`, `npx claude`, `uv run aider`, a make
target; each leads the group while the agent runs as its descendant *in the same
group* (none of them does job control). So when the leader names no agent, every
member of the group is looked at, and the agent nearest the leader in the parent chain
is the pane's program (an agent that runs another as a tool stays the program); the
oldest (lowest pid) breaks a tie. Processes in other groups are never looked at: an
interactive shell's background and stopped jobs are exactly those.

Pure: the collector (agent `panes.observe`) and `paneboard replay` share it, and both
say in words why the process was chosen.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

INTERPRETERS = frozenset({"node", "nodejs", "bun", "deno", "python", "python3", "npx", "uv", "uvx"})
"""RI-1: an interpreter is unwrapped to the script it runs (`node /x/bin/claude` -> claude)."""

_SCRIPT_SUFFIXES = (".js", ".mjs", ".cjs", ".ts", ".py")


def process_identity(name: str | None) -> str | None:
    """The name manifests match: basename, interpreters unwrapped to their script (RI-1).

    `paneboard run [--wrap] [--] CMD ...` is unwrapped to CMD too: the relay holds the
    pane's terminal while the agent runs behind it, and a wrapper never identifies.
    """
    if not name:
        return None
    words = name.split()
    if not words:
        return None
    base = os.path.basename(words[0])
    rest = words[1:]
    if base in INTERPRETERS or base.startswith("python3."):
        for index, arg in enumerate(words[1:], start=1):
            if arg.startswith("-") or arg in ("run", "exec"):
                continue
            if words[index - 1] == "-m":  # `python -m pkg.module`: the package names it
                base, rest = arg.split(".")[0], words[index + 1 :]
                break
            script = os.path.basename(arg)
            for suffix in _SCRIPT_SUFFIXES:
                if script.endswith(suffix):
                    script = script[: -len(suffix)]
            if script in ("index", "cli", "main"):
                parent = os.path.basename(os.path.dirname(arg))
                script = parent if parent not in ("", "bin", "dist", "lib") else script
            base, rest = script or base, words[index + 1 :]
            break
    if base == "paneboard" and rest[:1] == ["run"]:
        command = list(rest[1:])
        while command and command[0].startswith("-"):
            if command.pop(0) == "--":
                break
        return process_identity(" ".join(command)) if command else base
    return base


#: a program's own name is read from at most this many characters of its arguments
MAX_ARGS = 512
#: group members looked at per pane (a `make -j` of thousands costs this at most)
MAX_MEMBERS = 256


def is_interpreter(base: str) -> bool:
    """Does this program name stand for the script it runs (RI-1)?"""
    return base in INTERPRETERS or base.startswith("python3.")


def process_name(args: str) -> str:
    """What the classifier is told for a process with these arguments: its basename,
    or for an interpreter the (cut) command line, so the script is what names it."""
    words = args.split(maxsplit=1)
    if not words:
        return ""
    base = os.path.basename(words[0]).lstrip("-")
    return args[:MAX_ARGS] if is_interpreter(base) else base


@dataclass(frozen=True, slots=True)
class Member:
    """One process of the foreground group, as `ps` shows it."""

    pid: int
    ppid: int
    args: str


@dataclass(frozen=True, slots=True)
class Choice:
    """The process that names the pane's program, and why it was chosen."""

    name: str  # what the classifier is told (`process_name`)
    pid: int
    agent: str
    why: str


def _short(args: str, limit: int = 60) -> str:
    words = args.split()
    if not words:
        return "?"
    text = " ".join([os.path.basename(words[0]), *words[1:]])
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _depths(leader: int, members: Sequence[Member]) -> dict[int, int]:
    """Distance from the leader down the parent chain (members off the chain: absent)."""
    children: dict[int, list[int]] = {}
    for m in members:
        children.setdefault(m.ppid, []).append(m.pid)
    depth = {leader: 0}
    todo = [leader]
    while todo:
        pid = todo.pop()
        for child in children.get(pid, ()):
            if child not in depth:
                depth[child] = depth[pid] + 1
                todo.append(child)
    return depth


def choose(
    leader: int,
    leader_args: str,
    members: Iterable[Member],
    agent_of: Callable[[str], str | None],
) -> Choice | None:
    """The agent behind a wrapper that leads the group; None when no member names one.

    `agent_of(name)` is RI-1's manifest match of a `process_name`. The leader itself is
    the caller's business (it is judged first, by tmux's name too); it is skipped here.
    """
    group = [m for m in members if m.pid != leader][:MAX_MEMBERS]
    depth = _depths(leader, group)
    best: tuple[tuple[int, int], Member, str, str] | None = None
    for m in group:
        name = process_name(m.args)
        agent = agent_of(name) if name else None
        if agent is None:
            continue
        key = (depth.get(m.pid, len(group) + 1), m.pid)
        if best is None or key < best[0]:
            best = (key, m, name, agent)
    if best is None:
        return None
    (d, _), m, name, agent = best
    where = f"{d} level{'s' if d != 1 else ''} below" if d <= len(group) else "in the group of"
    why = (
        f"{agent}: `{_short(m.args)}` (pid {m.pid}) runs in the foreground group {where} its "
        f"leader `{_short(leader_args)}` (pid {leader}), which names no agent"
    )
    return Choice(name, m.pid, agent, why)
