"""Identity through wrappers (`identity.choose`) as a table: a foreground group in, the
process that names the pane's program (and why) out. No processes are started."""

from __future__ import annotations

import pytest
from paneboard_protocol.identity import Member, choose, process_identity, process_name
from paneboard_protocol.rules import load_rules

RULES = load_rules("/nonexistent-paneboard-rules")  # the bundled manifests only


def agent_of(name: str) -> str | None:
    m = RULES.for_process(process_identity(name))
    return m.agent if m is not None else None


CLAUDE_JS = "node /home/u/.npm/_npx/1/node_modules/@anthropic-ai/claude-code/cli.js"

# name: (leader pid, leader args, members (pid, ppid, args); expected (pid, agent) or None)
CASES: dict[str, tuple[int, str, list[tuple[int, int, str]], tuple[int, str] | None]] = {
    "bash -c 'claude; exec bash': the child": (
        10,
        "bash -c claude; exec bash",
        [(10, 1, "bash -c claude; exec bash"), (11, 10, "claude --permission-mode default")],
        (11, "claude"),
    ),
    "npx: npm exec -> sh -c -> node cli.js, two levels down": (
        20,
        "npm exec claude",
        [(20, 1, "npm exec claude"), (21, 20, "sh -c claude"), (22, 21, CLAUDE_JS)],
        (22, "claude"),
    ),
    "uv run aider: the interpreter's script names it": (
        30,
        "uv run aider",
        [(30, 1, "uv run aider"), (31, 30, "/home/u/.venv/bin/python3 /home/u/.venv/bin/aider --yes")],
        (31, "aider"),
    ),
    "make: make -> sh -c -> codex": (
        40,
        "make agent",
        [(40, 1, "make agent"), (41, 40, "/bin/sh -c codex"), (42, 41, "codex")],
        (42, "codex"),
    ),
    "an agent that runs another as a tool stays the program": (
        50,
        "bash -c claude",
        [(50, 1, "bash -c claude"), (52, 51, "codex exec x"), (51, 50, "claude")],
        (51, "claude"),
    ),
    "same depth: the older (lower pid) wins": (
        60,
        "bash -c 'aider & codex'",
        [(60, 1, "bash"), (62, 60, "codex"), (61, 60, "aider")],
        (61, "aider"),
    ),
    "a member off the leader's chain (its parent gone) still counts, after the chain": (
        70,
        "bash -c x",
        [(70, 1, "bash -c x"), (71, 1, "gemini"), (72, 70, "sleep 5")],
        (71, "gemini"),
    ),
    "nothing but tools in the group: none": (
        80,
        "make test",
        [(80, 1, "make test"), (81, 80, "sh -c pytest"), (82, 81, "python3 -m pytest -q")],
        None,
    ),
    "the leader alone is skipped (the caller judged it)": (
        90,
        "claude",
        [(90, 1, "claude")],
        None,
    ),
    "a transport in the group names no agent": (
        100,
        "bash -c 'ssh build'",
        [(100, 1, "bash -c ssh build"), (101, 100, "ssh build")],
        None,
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_choose(name: str) -> None:
    leader, leader_args, members, want = CASES[name]
    got = choose(leader, leader_args, [Member(*m) for m in members], agent_of)
    assert (None if got is None else (got.pid, got.agent)) == want
    if got is not None:
        assert f"pid {got.pid}" in got.why and f"pid {leader}" in got.why and got.agent in got.why


def test_why_says_how_far_below_the_leader() -> None:
    leader, args, members, _ = CASES["npx: npm exec -> sh -c -> node cli.js, two levels down"]
    got = choose(leader, args, [Member(*m) for m in members], agent_of)
    assert got is not None and "2 levels below" in got.why and "npm exec claude" in got.why


def test_process_name_keeps_an_interpreters_script() -> None:
    assert process_name("/usr/bin/node /x/claude/cli.js --y") == "/usr/bin/node /x/claude/cli.js --y"
    assert process_name("/usr/local/bin/codex --full-auto") == "codex"
    assert process_name("-bash") == "bash"
    assert process_name("") == ""
    assert len(process_name("python3 " + "x" * 5000)) == 512
