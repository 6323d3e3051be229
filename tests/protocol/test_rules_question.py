"""The question a blocked prompt asks, read off the screen into the classification's msg.

The screens are the fixtures (real captures from herdr's suite, and ours for agents
without captures) plus the demo's own screens (`paneboard.demo_agents`), which must
give their question on the card.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from paneboard_protocol.classifier import PaneClassifier
from paneboard_protocol.events import Title
from paneboard_protocol.rules import ManifestError, load_rules, parse_manifest
from paneboard_protocol.rules.question import MAX_QUESTION, default_lines, is_noise, join_question

FIXTURES = Path(__file__).parent / "fixtures" / "screens"
BUNDLED = load_rules(FIXTURES / "no-user-rules", bundled=True)

# fixture file -> the question its blocked prompt must carry (None: the screen shows none).
QUESTIONS = {
    "claude__bash_permission_with_idle_title.txt": "do you want to proceed? / bash command: rm -rf /tmp/test",
    "claude-own__edit_permission_blocked.txt": (
        "Do you want to make this edit to parser.py? / Update(src/parser.py)"
    ),
    "claude__select_form_with_stale_progress.txt": None,  # only the choices are on screen
    "codex__yn_prompt_over_working_line.txt": "do you want to continue? [y/n]",
    "codex__trust_directory_blocked.txt": (
        "Do you trust the contents of this / You are in C:\\Users\\user\\project"
    ),
    "codex__confirm_prompt_over_working_line.txt": None,  # "1. Yes, proceed" and the hint only
    "codex__title_action_required_blocked.txt": None,
    "devin__trust_prompt_blocked.txt": "Do you trust the authors of this directory?",
    "devin__permission_prompt_blocked.txt": "Running command / $ sleep 30",
    "gemini__tool_confirmation_blocked.txt": (
        "Allow execution of: 'rm'? / Shell rm -rf build/ (remove the build directory)"
    ),
    "gemini__title_action_required_blocked.txt": None,
    "aider__yes_no_blocked.txt": "src/parser.py / Add file to the chat? (Y)es/(N)o/(D)on't ask again [Yes]:",
    "opencode__permission_blocked.txt": "Permission required / Bash rm -rf dist",
    "amp__approval_blocked.txt": "Waiting for approval / Bash: rm -rf dist",
    "pi__extension_select_blocked.txt": "⚠️ Dangerous command: / rm -rf pb-dir / Allow?",
    "copilot__trust_blocked.txt": (
        "Do you trust the files in this folder? / /tmp/pytest-of-root/pytest-30/test_copilot_turn0/work"
    ),
    "copilot__shell_permission_blocked.txt": "Do you want to run this command? / touch pb-ran",
    "copilot__create_permission_blocked.txt": (
        "Do you want to create "
        "/tmp/pytest-of-root/pytest-48/test_copilot_file_write_questi0/work/pb-note.txt?"
    ),
    "copilot__ask_user_blocked.txt": "Which colour should the note be?",
    # the last inner box of the path dialog is the directory its third choice would open
    "copilot__path_permission_blocked.txt": "Do you want to allow this? / /etc",
    "qwen__shell_confirmation_blocked.txt": (
        "Allow execution of: 'touch'? / Shell touch pb-ran (Create pb-ran) ←"
    ),
    "qwen__write_confirmation_blocked.txt": "Apply this change? / WriteFile Writing to pb-note.txt ←",
    "qwen__ask_user_question_blocked.txt": "Which colour should the button be?",
    "qwen__auto_mode_fallback_blocked.txt": (
        "Allow execution of: 'touch'? / Shell touch pb-ran (Create pb-ran) ←"
    ),
    "qwen__mcp_confirmation_blocked.txt": (
        'Allow execution of MCP tool "touch" from server "pb"? / touch (pb MCP Server) {"name":"pb-mcp"} ←'
    ),
    "qwen__plan_confirmation_blocked.txt": "Would you like to proceed? / ExitPlanMode Plan: ←",
}


def _blocked_cases():
    for index in ("index.jsonl", "paneboard.jsonl"):
        for line in (FIXTURES / index).read_text(encoding="utf-8").splitlines():
            case = json.loads(line)
            if case["expected_state"] == "blocked":
                yield pytest.param(case, id=case["file"].removesuffix(".txt"))


def _classify(agent: str, screen: str, title: str | None = None):
    process = BUNDLED.for_agent(agent).process[0]
    c = PaneClassifier(BUNDLED)
    c.set_process(0, process, 100)
    if title:
        c.feed(1, [Title(0, title, 2)])
    c.set_screen(2, screen)
    return c.classification(10)


def test_every_blocked_fixture_has_its_question_listed():
    listed = {p.values[0]["file"] for p in _blocked_cases()}
    assert listed == set(QUESTIONS)


@pytest.mark.parametrize("case", list(_blocked_cases()))
def test_blocked_fixture_carries_its_question_as_msg(case):
    screen = (FIXTURES / case["file"]).read_text(encoding="utf-8")
    got = _classify(case["agent"], screen, case["title"])
    assert got.state == "blocked"
    assert got.source in ("screen", "native")
    assert got.msg == QUESTIONS[case["file"]]


# The demo's screen-rule panes (paneboard.demo_agents.native / .codex), frame for frame.
DEMO_CLAUDE = "● Bash(cargo publish --dry-run)\n\n Do you want to proceed?\n ❯ 1. Yes\n   2. No\n"
DEMO_CODEX = (
    "• Ran cargo test\n\nAllow command? cargo publish --dry-run\n"
    "  Yes (y)   No (n)\n\npress enter to confirm or esc to cancel\n"
)


def test_demo_claude_permission_gives_its_question():
    got = _classify("claude", DEMO_CLAUDE, "✳ Release build")
    assert (got.state, got.kind, got.source) == ("blocked", "permission", "screen")
    assert got.msg == "Do you want to proceed? / Bash(cargo publish --dry-run)"
    assert got.title == "Release build"  # shown as a title, glyph off


@pytest.mark.parametrize("title", ["project", "[ ! ] Action Required | project"])
def test_demo_codex_approval_gives_its_question_under_either_title(title):
    got = _classify("codex", DEMO_CODEX, title)
    assert (got.state, got.kind, got.source) == ("blocked", "permission", "screen")
    assert got.msg == "Allow command? cargo publish --dry-run"


def test_question_is_sanitised_and_bounded():
    evil = "Do you want to \u202eproceed\u202c? " + "x" * 1000 + "\x07\n ❯ 1. Yes\n   2. No\n"
    got = _classify("claude", evil)
    assert got.state == "blocked"
    assert got.msg is not None and len(got.msg) <= MAX_QUESTION
    assert "\u202e" not in got.msg and "\x07" not in got.msg
    assert got.msg.startswith("Do you want to proceed? xxx") and got.msg.endswith("…")


def test_question_leaves_with_the_prompt():
    c = PaneClassifier(BUNDLED)
    c.set_process(0, "claude", 1)
    c.set_screen(1, DEMO_CLAUDE)
    assert c.classification(1).msg is not None
    c.set_screen(2, "● Done.\n\n╭──────╮\n│ > \n╰──────╯\n")
    assert c.classification(10).state == "idle"
    assert c.classification(10).msg is None


# ------------------------------------------------------------------ the default


def _one_rule(extra: str = "") -> str:
    return (
        'id = "t"\nagent = "t"\nprocess = ["t"]\n\n[[rules]]\nid = "ask"\nstate = "blocked"\n'
        'kind = "question"\ncontains = ["[y/n]"]\n' + extra
    )


def test_default_takes_the_lines_around_the_match():
    m = parse_manifest(_one_rule())
    screen = "old question? long ago\n\nbuild finished\nDeploy to production? [y/n]\n"
    assert m.match(screen).msg == "Deploy to production? [y/n] / build finished"


def test_question_key_names_region_and_lines_in_order():
    m = parse_manifest(
        _one_rule("question = { region = \"bottom_lines(3)\", lines = ['\\\\?', '^tool: '] }\n")
    )
    screen = "tool: old\nnoise\ntool: deploy.sh\nRun it? [y/n]\n"
    assert m.match(screen).msg == "Run it? [y/n] / tool: deploy.sh"


def test_question_key_region_only_keeps_every_non_noise_line():
    m = parse_manifest(_one_rule('question = "bottom_lines(4)"\n'))
    screen = "──────────\nDelete 3 files?\n ❯ 1. Yes\n   2. No\nEsc to cancel [y/n]\n"
    assert m.match(screen).msg == "Delete 3 files?"  # the border, choices and key hint are noise


@pytest.mark.parametrize(
    "extra, why",
    [
        ('question = "nowhere"\n', "unknown region"),
        ('question = "title"\n', "part of the screen"),
        ("question = { lines = ['('] }\n", "does not compile"),
        ("question = { where = 1 }\n", "unknown key 'where'"),
        ("question = 3\n", "region name or a table"),
    ],
)
def test_bad_question_key_is_rejected(extra, why):
    with pytest.raises(ManifestError, match=why):
        parse_manifest(_one_rule(extra))


def test_question_only_on_blocked_rules():
    text = 'id = "t"\n[[rules]]\nstate = "working"\ncontains = ["x"]\nquestion = "screen"\n'
    with pytest.raises(ManifestError, match="only with state = 'blocked'"):
        parse_manifest(text)


@pytest.mark.parametrize(
    "line, noise",
    [
        ("", True),
        ("╰──────────╯", True),
        (" ❯ 1. Yes", True),
        ("  Yes (y)   No (n)", True),
        ("Enter to select · ↑/↓ to navigate · Esc to cancel", True),
        ("Do you want to proceed?", False),
        ("Allow command? cargo publish", False),
        ("● Bash(cargo publish --dry-run)", False),
    ],
)
def test_noise_lines(line, noise):
    assert is_noise(line) is noise


def test_default_lines_without_anything_usable():
    assert default_lines([" ❯ 1. Yes", "Esc to cancel"], 1) == []
    assert default_lines(["plain text"], None, ask_only=True) == []
    assert join_question([]) is None


# ------------------------------------------------------------------ kinds (issue: title rules drop the kind)


def test_every_bundled_blocked_rule_has_a_kind():
    blocked = [(m.id, r) for m in BUNDLED.manifests for r in m.rules if r.state == "blocked"]
    missing = [(mid, r.id) for mid, r in blocked if not r.kind]
    assert missing == []
    # Title rules are rules like any other (the "Action Required" titles of Codex and
    # Gemini): the check above covers them, it is not vacuous for them.
    titles = {mid for mid, r in blocked if "title" in r.gate.regions()}
    assert {"codex", "gemini-cli"} <= titles


@pytest.mark.parametrize(
    "agent, title",
    [("codex", "[ ! ] Action Required | llm-proxy"), ("gemini", "✋  Action Required (app)")],
)
def test_action_required_title_alone_is_blocked_with_a_kind(agent, title):
    got = _classify(agent, "", title)
    assert (got.state, got.kind, got.source) == ("blocked", "permission", "native")


def test_screen_kind_and_question_beat_the_action_required_title():
    screen = (FIXTURES / "codex__yn_prompt_over_working_line.txt").read_text(encoding="utf-8")
    got = _classify("codex", screen, "[ . ] Action Required | project")
    assert (got.state, got.kind, got.source) == ("blocked", "question", "screen")
    assert got.msg == "do you want to continue? [y/n]"
    assert got.title == "Action Required | project"


# ------------------------------------------------------------------ a contract's blocked (no manifest)


def _contract(c, d, t, state, ts):
    from paneboard_protocol.encode import encode_agent

    c.feed(t, d.feed(encode_agent("my-agent", state, session="s", ts=ts)))


@pytest.mark.parametrize(
    "process, screen, question",
    [
        # paneboard.demo_agents.thinkterm: earlier turns are still on screen above
        (
            "python3",
            "working on step 1 …\nWhich branch should I push to? [main/dev]\nready for input\n"
            "working on step 2 …\nWhich branch should I push to? [main/dev]\n",
            "Which branch should I push to? [main/dev]",
        ),
        # paneboard.demo_agents.remote: behind ssh, so unobservable
        (
            "ssh",
            "Connected to build-07 (simulated)\nremote-agent: Approve the deploy to staging? [y/N]\n"
            "(connection quiet since then)\n",
            "remote-agent: Approve the deploy to staging? [y/N]",
        ),
    ],
)
def test_contract_blocked_takes_the_question_off_its_screen(process, screen, question):
    from paneboard_protocol.arbitration import classify_evidence
    from paneboard_protocol.decoder import Decoder

    now = 1_800_000_000.0
    c, d = PaneClassifier(BUNDLED), Decoder(rejections=True)
    c.set_process(now, process, 5)
    _contract(c, d, now, "working", int(now))
    assert not c.wants_screen  # no manifest, not blocked: no capture
    _contract(c, d, now + 1, "blocked", int(now))
    assert c.wants_screen
    c.set_screen(now + 2, screen)
    got = c.classification(now + 2)
    assert (got.state, got.source, got.msg) == ("blocked", "protocol", question)
    assert classify_evidence(c.evidence(), now + 2).msg == question  # the server reads the same
    _contract(c, d, now + 3, "idle", int(now))
    assert c.classification(now + 3).msg is None and not c.wants_screen
    _contract(c, d, now + 4, "blocked", int(now))
    assert c.classification(now + 4).msg is None  # the old screen's question is not the new one's


def test_contract_question_needs_a_question_mark():
    from paneboard_protocol.decoder import Decoder

    c, d = PaneClassifier(BUNDLED), Decoder(rejections=True)
    c.set_process(0, "python3", 5)
    _contract(c, d, 1, "blocked", None)
    c.set_screen(2, "compiling\nlinking\n")
    assert c.classification(2).msg is None
