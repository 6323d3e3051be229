"""`paneboard rules explain SCREENFILE` on the corpus screens, called in this process.

What a manifest author needs from it: the manifest and rule that matched, the region and
line it matched on, the question it reads, and for each other rule the condition that
failed — in words, not a dump.
"""

from __future__ import annotations

from pathlib import Path

from paneboard_protocol.rules import load_rules, parse_manifest
from paneboard_protocol.rules.explain import explain, why_not
from paneboard_protocol.rules.regions import _screen_of, _Texts
from support.clirun import CliResult, run_cli_text

SCREENS = Path(__file__).parent / "fixtures" / "screens"


def rules(*args: str, tmp_path: Path) -> CliResult[str]:
    env = {"PATH": "/usr/bin:/bin", "PANEBOARD_RULES": str(tmp_path / "none")}
    return run_cli_text("rules", *args, env=env)


def test_explain_names_manifest_rule_region_line_and_question(tmp_path):
    got = rules(
        "explain",
        str(SCREENS / "claude__bash_permission_with_idle_title.txt"),
        "--agent",
        "claude",
        "--title",
        "✳ Claude Code",
        tmp_path=tmp_path,
    )
    assert got.returncode == 0, got.stderr
    out = got.stdout
    assert "manifest claude-code (agent claude, bundled:claude-code.toml)" in out
    assert "result: permission_prompt → blocked (permission), priority 850" in out
    assert 'matched on the screen, line 1: "do you want to proceed?"' in out
    assert "question: do you want to proceed? / bash command: rm -rf /tmp/test" in out
    # every other rule, with the condition that failed
    assert "no  select_form → blocked (question), priority 980" in out
    assert 'because no `any` gate matches (1: after_last_rule does not contain "enter to confirm"' in out
    assert "no  prompt_box_idle → idle, priority 500" in out
    assert '`not` gate 1 matches (bottom_lines(8), line 6: "Esc to cancel' in out
    # a rule that matches but is outranked says so
    assert "matches  title_static_idle → idle, priority 250" in out
    assert "but a rule above it is used" in out


def test_explain_says_when_the_screen_rule_beats_the_title_rule(tmp_path):
    got = rules(
        "explain",
        str(SCREENS / "codex__yn_prompt_over_working_line.txt"),
        "--agent",
        "codex",
        "--title",
        "[ . ] Action Required | project",
        tmp_path=tmp_path,
    )
    assert got.returncode == 0, got.stderr
    assert "result: yes_no_question → blocked (question)" in got.stdout
    assert "title_action_required matched first but reads only the title" in got.stdout
    assert (
        'on the title "[ . ] Action Required | project", but it reads only the title; '
        "the screen rule below says more" in got.stdout
    )


def test_explain_without_agent_shows_the_manifests_that_match(tmp_path):
    got = rules("explain", str(SCREENS / "aider__yes_no_blocked.txt"), tmp_path=tmp_path)
    assert got.returncode == 0, got.stderr
    assert "manifest aider (agent aider" in got.stdout
    assert "result: yes_no_question → blocked (question)" in got.stdout
    assert "no rule of these manifests matches:" in got.stdout
    assert "(use --agent to see why)" in got.stdout


def test_explain_with_no_match_says_idle(tmp_path):
    got = rules(
        "explain", str(SCREENS / "codex__ordinary_text_fallback.txt"), "--agent", "codex", tmp_path=tmp_path
    )
    assert got.returncode == 0, got.stderr
    assert "result: no rule matches: a known agent with nothing on screen is idle" in got.stdout


def test_explain_errors_are_one_line(tmp_path):
    got = rules("explain", str(tmp_path / "missing.txt"), tmp_path=tmp_path)
    assert got.returncode == 2 and "cannot read" in got.stderr and got.stderr.count("\n") == 1
    screen = tmp_path / "s.txt"
    screen.write_text("hello\n")
    got = rules("explain", str(screen), "--agent", "nobody", tmp_path=tmp_path)
    assert got.returncode == 2
    assert "no manifest for agent 'nobody' (known: " in got.stderr


def test_explain_user_manifest_and_escapes_are_harmless(tmp_path):
    d = tmp_path / "mine"
    d.mkdir()
    (d / "t.toml").write_text(
        'id = "t"\nprocess = ["t"]\n[[rules]]\nid = "ask"\nstate = "blocked"\n'
        'kind = "question"\ncontains = ["deploy?"]\n',
        encoding="utf-8",
    )
    screen = tmp_path / "s.txt"
    screen.write_text("\x1b]0;evil\x07Really deploy? [y/N]\n", encoding="utf-8")
    got = rules("explain", str(screen), "--agent", "t", "--rules", str(d), tmp_path=tmp_path)
    assert got.returncode == 0, got.stderr
    assert "\x1b" not in got.stdout and "\x07" not in got.stdout
    assert "result: ask → blocked (question), priority 0" in got.stdout


def test_why_not_reports_the_condition_that_stopped_the_rule():
    m = parse_manifest(
        'id = "t"\n[[rules]]\nstate = "idle"\nregion = "bottom_lines(1)"\n'
        'contains = ["ready"]\nline_regex = [\'^> $\']\nnot = [{ contains = ["busy"] }]\n'
    )
    gate = m.rules[0].gate
    texts = lambda s: _Texts(_screen_of(s, 64), "", "")  # noqa: E731
    assert why_not(gate, texts("nothing")) == 'bottom_lines(1) does not contain "ready"'
    assert why_not(gate, texts("ready")) == 'no line of bottom_lines(1) matches "^> $"'
    assert why_not(gate, texts("x\n> ")).startswith("bottom_lines(1) does not contain")
    assert why_not(gate, texts("busy ready\n")) == 'no line of bottom_lines(1) matches "^> $"'


def test_explain_agrees_with_match_on_every_fixture():
    bundled = load_rules(SCREENS / "no-user-rules")
    for path in sorted(SCREENS.glob("*.txt")):
        screen = path.read_text(encoding="utf-8")
        for m in bundled.manifests:
            verdicts, taken, _ = explain(m, screen)
            match = m.match(screen)
            assert (taken.id if taken else None) == (match.rule if match else None), (path.name, m.id)
            for v in verdicts:
                assert v.matched == v.rule.gate.matches(*_raw(screen, m)), (path.name, v.rule.id)


def _raw(screen: str, m):
    lines = "\n".join(_screen_of(screen, m.rows).lines)
    return lines, "", ""


def test_rules_help_texts_are_plain_words(tmp_path):
    import re

    for args in ([], ["check"], ["list"], ["explain"]):
        got = rules(*args, "--help", tmp_path=tmp_path)
        assert got.returncode == 0, got.stderr
        assert not re.search(r"\b(?:TA|RI|F|P7501)-\d+", got.stdout), (args, got.stdout)
        assert "explain" in got.stdout or args
