"""Answers declared per blocked rule (rules/answers.py), read off real screens.

Every blocked screen rule of Claude Code, Codex, Gemini CLI and Aider declares its
answers; on the captures of the real programs (fixtures/real) and the screen corpus
(fixtures/screens) the answers offered, their labels and
the keys they press are exactly these."""

from __future__ import annotations

from pathlib import Path

import pytest
from paneboard_protocol.rules import ManifestError, load_rules, parse_manifest
from paneboard_protocol.screen import offer

FIX = Path(__file__).parent / "fixtures"
RULES = load_rules(FIX / "screens" / "no-user-rules", bundled=True)

CLAUDE_DIR = "/tmp/pytest-of-root/pytest-96/test_claude_code_turn_screen_0/work"
# (capture, agent, title) -> [(answer id, label as drawn, keys)]
CASES = {
    ("real/claude/blocked.txt", "claude", None): [
        ("yes", "Yes", ("1",)),
        ("always", "Yes, and always allow access to " + CLAUDE_DIR + " from this", ("2",)),
        ("no", "No", ("Escape",)),
    ],
    ("screens/claude__bash_permission_with_idle_title.txt", "claude", None): [
        ("yes", "Yes", ("1",)),
        ("no", "No", ("Escape",)),
    ],
    ("screens/claude-own__edit_permission_blocked.txt", "claude", None): [
        ("yes", "Yes", ("1",)),
        ("always", "Yes, allow all edits during this session", ("2",)),
        ("no", "No", ("Escape",)),
    ],
    ("screens/claude__select_form_with_stale_progress.txt", "claude", None): [
        ("1", "Yes", ("1",)),
        ("2", "No", ("2",)),
        ("cancel", "Cancel", ("Escape",)),
    ],
    ("real/codex/blocked.txt", "codex", None): [
        ("yes", "Yes, proceed", ("y",)),
        ("always", "Yes, and don't ask again for commands that start with `touch pb-ran`", ("p",)),
        ("no", "No", ("Escape",)),
    ],
    ("screens/codex__confirm_prompt_over_working_line.txt", "codex", None): [
        ("yes", "Yes, proceed", ("y",)),
        ("no", "No", ("Escape",)),
    ],
    ("screens/codex__trust_directory_blocked.txt", "codex", None): [
        ("yes", "Yes, continue", ("Enter",)),
        ("no", "No, quit", ("Down", "Enter")),
    ],
    ("screens/codex__yn_prompt_over_working_line.txt", "codex", None): [
        ("yes", "Yes", ("y",)),
        ("no", "No", ("n",)),
    ],
    ("real/gemini/blocked.txt", "gemini", None): [
        ("once", "Allow once", ("1",)),
        ("always", "Allow for this session", ("2",)),
        ("no", "No, suggest changes", ("Escape",)),
    ],
    ("screens/gemini__tool_confirmation_blocked.txt", "gemini", None): [
        ("once", "Yes, allow once", ("1",)),
        ("always", "Yes, allow always ...", ("2",)),
        ("no", "No, suggest changes", ("Escape",)),
    ],
    ("real/aider/blocked.txt", "aider", None): [
        ("yes", "Yes", ("y", "Enter")),
        ("no", "No", ("n", "Enter")),
        ("never", "Don't ask again", ("d", "Enter")),
    ],
    ("screens/aider__yes_no_blocked.txt", "aider", None): [
        ("yes", "Yes", ("y", "Enter")),
        ("no", "No", ("n", "Enter")),
        ("never", "Don't ask again", ("d", "Enter")),
    ],
    # plain text cannot say which choice is selected: only "Reject" (Escape) is offered
    ("real/opencode/blocked.txt", "opencode", None): [("reject", "Reject", ("Escape",))],
    ("screens/opencode__permission_blocked.txt", "opencode", None): [("reject", "Reject", ("Escape",))],
    ("real/copilot/trust.txt", "copilot", None): [
        ("yes", "Yes", ("1",)),
        ("always", "Yes, and remember this folder for future sessions", ("2",)),
        ("no", "No", ("Escape",)),
    ],
    ("real/copilot/blocked.txt", "copilot", None): [
        ("yes", "Yes", ("1",)),
        (
            "always",
            "Yes, and don't ask again for `touch` in this directory (/tmp/pytest-of-root/pytest-30/.../work)",
            ("2",),
        ),
        ("no", "No", ("Escape",)),
    ],
    ("real/copilot-prompts/blocked.txt", "copilot", None): [
        ("yes", "Yes", ("1",)),
        (
            "always",
            "Yes, and don't ask again for file operations when in this directory "
            "(/tmp/pytest-of-root/pytest-48/.../work)",
            ("2",),
        ),
        ("no", "No", ("Escape",)),
    ],
    # a path outside the session's: four choices, the third (a whole directory) not offered
    ("screens/copilot__path_permission_blocked.txt", "copilot", None): [
        ("yes", "Yes", ("1",)),
        ("always", "Yes, and remember this path for this session", ("2",)),
        ("no", "No", ("Escape",)),
    ],
    # the model's own suggestions are not offered: what every ask_user form takes
    ("real/copilot-prompts/ask.txt", "copilot", None): [
        ("decline", "Decline", ("C-d",)),
        ("cancel", "Cancel", ("Escape",)),
    ],
    ("real/qwen/blocked.txt", "qwen", None): [
        ("once", "Yes, allow once", ("1",)),
        ("always", "Always allow run 'touch *' commands in this project", ("2",)),
        ("no", "No, suggest changes", ("Escape",)),
    ],
    ("real/qwen-edit/blocked.txt", "qwen", None): [
        ("once", "Yes, allow once", ("1",)),
        ("always", "Yes, allow always", ("2",)),
        ("no", "No, suggest changes", ("Escape",)),
    ],
    ("real/qwen-mcp/blocked.txt", "qwen", None): [
        ("once", "Yes, allow once", ("1",)),
        ("always", "Always allow mcp__pb__touch in this project", ("2",)),
        ("no", "No, suggest changes", ("Escape",)),
    ],
    # translated: only the title reads it, and no answer is declared for what no rule reads
    ("real/qwen-de/blocked.txt", "qwen", "✳︎ Qwen - work"): [],
    # auto mode, its judge unavailable: choice 2 is "Switch to Default Mode and allow once"
    ("real/qwen-auto/blocked.txt", "qwen", None): [
        ("once", "Yes, allow once", ("1",)),
        ("no", "No, suggest changes", ("Escape",)),
    ],
    # "3. Type something..." opens a text field: not offered
    ("real/qwen-question/blocked.txt", "qwen", None): [
        ("1", "Blue", ("1",)),
        ("2", "Green", ("2",)),
        ("cancel", "Cancel", ("Escape",)),
    ],
    # the plan's own numbered lines above are not the choices
    ("real/qwen-plan/blocked.txt", "qwen", None): [
        ("yes", "Yes, restore previous mode (default)", ("1",)),
        ("always", "Yes, and auto-accept edits", ("2",)),
        ("manual", "Yes, and manually approve edits", ("3",)),
        ("no", "No, keep planning", ("Escape",)),
    ],
}


@pytest.mark.parametrize("case", list(CASES), ids=[c[0] for c in CASES])
def test_answers_on_real_screens(case: tuple[str, str, str | None]) -> None:
    path, agent, title = case
    screen = (FIX / path).read_text(encoding="utf-8")
    got = offer(RULES, agent, "blocked", None, screen, title)
    assert not got.text
    assert [(a.id, label, a.keys) for a, label in got.answers] == CASES[case]


def test_every_blocked_screen_rule_of_the_five_declares_answers() -> None:
    for agent in ("claude", "codex", "gemini", "aider", "opencode", "copilot", "qwen"):
        m = RULES.for_agent(agent)
        assert m is not None, agent
        for r in m.rules:
            if r.state == "blocked" and not r.native:
                assert r.answers, f"{agent}: {r.id} declares no answers"


def test_every_corpus_screen_read_as_blocked_offers_answers() -> None:
    """Whatever screen of the five a manifest reads as blocked (on the screen, not the
    title alone) offers at least one answer: no blocked prompt is left unanswerable."""
    dirs = [FIX / "screens"]
    n = 0
    for d in dirs:
        for f in sorted(d.glob("*.txt")) if d.is_dir() else []:
            agent = {
                "claude": "claude",
                "codex": "codex",
                "gemini": "gemini",
                "aider": "aider",
                "opencode": "opencode",
                "copilot": "copilot",
                "qwen": "qwen",
            }.get(f.name.split("__")[0])
            m = RULES.for_agent(agent) if agent else None
            if m is None:
                continue
            screen = f.read_text(encoding="utf-8")
            match = m.match(screen, "", "")
            if match is None or match.state != "blocked" or match.native:
                continue
            got = offer(RULES, agent, "blocked", match.kind, screen)
            assert got.answers, f.name
            n += 1
    assert n >= 8


def test_not_blocked_offers_nothing_and_a_question_without_answers_takes_text() -> None:
    screen = (FIX / "real/claude/blocked.txt").read_text(encoding="utf-8")
    assert offer(RULES, "claude", "working", None, screen).answers == ()
    free = offer(RULES, "claude", "blocked", "question", "what now?\n> ", msg="Which branch?")
    assert free.text and free.answers == () and free.prompt == "Which branch?"
    perm = offer(RULES, "claude", "blocked", "permission", "nothing here")
    assert not perm.text and perm.answers == ()


@pytest.mark.parametrize(
    "answers, why",
    [
        ('[{ id = "x", label = "X", keys = ["send-keys"] }]', "not allowed"),
        ('[{ id = "x", label = "X", keys = ["1;rm"] }]', "not allowed"),
        ('[{ id = "X Y", label = "X", keys = ["1"] }]', "id must match"),
        ('[{ id = "x", label = "X", keys = [] }]', "keys must be"),
        ('[{ id = "x", label = "X", keys = ["1"], run = "sh" }]', "unknown key"),
        ('[{ id = "x", label = "X", keys = ["1"] }, { id = "x", label = "Y", keys = ["2"] }]', "twice"),
        ('[{ id = "x", label = "X", keys = ["1"], option = 0 }]', "choice number"),
        ('[{ id = "x", label = "X", keys = ["1"], option = "1" }]', "choice number"),
        ('[{ id = "x", label = "X", keys = ["Enter"], moves_from = 1 }]', "needs the option"),
        ('[{ id = "x", label = "X", keys = ["Enter"], selected = "^X$" }]', "selected needs a line"),
    ],
)
def test_manifest_answers_are_checked(answers: str, why: str) -> None:
    text = f'id = "t"\n[[rules]]\nid = "r"\nstate = "blocked"\ncontains = ["?"]\nanswers = {answers}\n'
    with pytest.raises(ManifestError, match=why):
        parse_manifest(text)


def test_answers_only_on_blocked_rules() -> None:
    text = (
        'id = "t"\n[[rules]]\nstate = "idle"\ncontains = ["$"]\n'
        'answers = [{ id = "x", label = "X", keys = ["1"] }]\n'
    )
    with pytest.raises(ManifestError, match="only with state"):
        parse_manifest(text)
