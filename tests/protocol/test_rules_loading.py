"""Loading manifests: format, errors with file and line, user overrides, reload (TA-17, TA-19)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from paneboard_protocol.rules import (
    ManifestError,
    RuleSet,
    default_user_dir,
    load_rules,
    parse_manifest,
    translate_regex,
)

GOOD = textwrap.dedent(
    """\
    id = "claude-code"
    agent = "claude"
    process = ["claude"]

    [[rules]]
    state = "blocked"
    kind = "permission"
    screen = ['MY OWN PROMPT']
    """
)


def write(directory: Path, name: str, text: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("text", "line", "reason"),
    [
        pytest.param('id = "x"\nagent = \n', 2, "bad TOML", id="bad-toml-line"),
        pytest.param(
            'id = "x"\nagent = "x"\ncolour = "red"\n', 3, "unknown key 'colour'", id="unknown-top-key"
        ),
        pytest.param(
            'id = "x"\nagent = "x"\n\n[[rules]]\nstate = "working"\nscreen = ["a"]\n\n[[rules]]\n'
            'state = "idle"\nregex = ["ok", "(unclosed"]\n',
            10,
            "does not compile",
            id="bad-regex-line",
        ),
        pytest.param(
            'id = "x"\nagent = "x"\n[[rules]]\nstate = "thinking"\nscreen = ["a"]\n',
            4,
            "unknown state 'thinking'",
            id="unknown-state-line",
        ),
        pytest.param(
            'id = "x"\nagent = "x"\n[[rules]]\nstate = "idle"\nscreen = ["a"]\nshade = 3\n',
            6,
            "unknown key 'shade'",
            id="unknown-rule-key-line",
        ),
        pytest.param(
            'id = "x"\nagent = "x"\n[[rules]]\nstate = "idle"\nany = [{ contans = ["a"] }]\n',
            5,
            "unknown key 'contans'",
            id="unknown-gate-key-line",
        ),
        pytest.param(
            'id = "x"\nagent = "x"\n[[rules]]\nstate = "blocked"\nkind = "later"\nscreen = ["a"]\n',
            5,
            "unknown kind",
            id="unknown-kind",
        ),
        pytest.param(
            'id = "x"\nagent = "x"\n[[rules]]\nstate = "idle"\nregion = "middle"\nscreen = ["a"]\n',
            5,
            "unknown region",
            id="unknown-region",
        ),
        pytest.param(
            'id = "x"\nagent = "x"\n[[rules]]\nstate = "idle"\n',
            3,
            "at least one condition",
            id="rule-without-condition",
        ),
        pytest.param(
            'id = "x"\nagent = "x"\n[[rules]]\nstate = "idle"\nregex = \'\\S\'\n',
            5,
            "list of strings (TA-19)",
            id="TA-19-regex-must-be-a-list",
        ),
        pytest.param('agent = "x"\n', None, "missing id", id="missing-id"),
    ],
)
def test_broken_manifest_reports_line_and_reason(text, line, reason):
    with pytest.raises(ManifestError) as exc:
        parse_manifest(text, "m.toml")
    assert reason in exc.value.reason
    assert exc.value.line == line


def test_herdr_hex_escapes_are_translated():
    assert translate_regex(r"^\x{2733} ") == r"^\u2733 "
    assert translate_regex(r"[\x{2A}\x{1F600}]") == r"[\x2a\U0001f600]"
    assert translate_regex(r"\\x{41}") == r"\\x{41}"  # an escaped backslash, not an escape
    assert translate_regex(r"end\z") == r"end\Z"
    m = parse_manifest(
        'id = "h"\nagent = "h"\n[[rules]]\nstate = "idle"\nregion = "osc_title"\nregex = [\'^\\x{2733} \']\n'
    )
    assert m.match("", "✳ Claude Code").state == "idle"


def test_TA_19_regexes_are_lists_and_all_must_match():
    m = parse_manifest('id = "r"\nagent = "r"\n[[rules]]\nstate = "idle"\nregex = [\'a\', \'b\']\n')
    assert m.match("a b") is not None
    assert m.match("a") is None


def test_contains_is_case_insensitive_and_gates_combine():
    m = parse_manifest(
        textwrap.dedent(
            """\
            id = "g"
            agent = "g"
            [[rules]]
            id = "gated"
            state = "blocked"
            contains = ["Proceed?"]
            any = [{ contains = ["yes"] }, { line_regex = ['^❯'] }]
            all = [{ region = "bottom_lines(1)", contains = ["esc"] }]
            not = [{ contains = ["transcript"] }]
            """
        )
    )
    assert m.match("PROCEED? YES\nEsc to cancel") is not None
    assert m.match("proceed?\n❯ 1\nesc") is not None
    assert m.match("proceed? yes\nesc\nmore") is None  # `all` gate: esc not on the bottom line
    assert m.match("proceed? no\nesc") is None  # no `any` branch
    assert m.match("proceed? yes transcript\nesc") is None  # `not`


def test_priority_beats_file_order_and_ties_keep_file_order():
    m = parse_manifest(
        'id = "p"\nagent = "p"\n'
        '[[rules]]\nid = "low"\nstate = "idle"\ncontains = ["x"]\n'
        '[[rules]]\nid = "high"\nstate = "working"\npriority = 5\ncontains = ["x"]\n'
        '[[rules]]\nid = "high2"\nstate = "blocked"\npriority = 5\ncontains = ["x"]\n'
    )
    assert m.match("x").rule == "high"


def test_regions_bottom_top_and_after_rule():
    m = parse_manifest(
        'id = "r"\nagent = "r"\n'
        '[[rules]]\nid = "bottom"\nstate = "idle"\nregion = "bottom_non_empty_lines(2)"\ncontains = ["A"]\n'
        '[[rules]]\nid = "top"\nstate = "working"\nregion = "top_lines(1)"\ncontains = ["B"]\n'
        '[[rules]]\nid = "after"\nstate = "blocked"\nregion = "after_last_rule"\ncontains = ["C"]\n'
    )
    assert m.match("x\nA\n\n\ny\n\n").rule == "bottom"  # empty lines are not counted
    assert m.match("A\nx\ny") is None
    assert m.match("B\nx\ny").rule == "top"
    assert m.match("C\n──────────\nz") is None
    assert m.match("──────────\nC").rule == "after"


def test_TA_17_user_manifest_replaces_bundled_by_id_whatever_the_file_name(tmp_path):
    write(tmp_path, "zz-anything.toml", GOOD)
    rules = load_rules(tmp_path)
    m = rules.for_agent("claude")
    assert m.origin == "user" and m.path.endswith("zz-anything.toml")
    assert m.match("MY OWN PROMPT").state == "blocked"
    assert m.match("Do you want to proceed?\n❯ 1. Yes") is None  # the bundled rules are gone
    assert rules.for_agent("codex").origin == "bundled"


def test_TA_17_reload_without_restart(tmp_path):
    rules = load_rules(tmp_path)
    assert rules.for_agent("claude").origin == "bundled"
    write(tmp_path, "mine.toml", GOOD)
    assert rules.for_agent("claude").origin == "bundled"  # immutable
    reloaded = rules.reload()
    assert reloaded.for_agent("claude").origin == "user"
    (tmp_path / "mine.toml").unlink()
    assert reloaded.reload().for_agent("claude").origin == "bundled"


def test_broken_manifest_never_takes_the_others_down(tmp_path):
    write(tmp_path, "a.toml", GOOD)
    write(tmp_path, "b.toml", 'id = "b"\nagent = "b"\n[[rules]]\nstate = "idle"\nregex = ["("]\n')
    write(tmp_path, "c.toml", 'id = "codex"\nagent = "codex"\nprocess = ["codex"]\nnonsense = 1\n')
    rules = load_rules(tmp_path)
    assert rules.for_agent("claude").origin == "user"
    assert rules.for_agent("b") is None
    assert rules.for_agent("codex").origin == "bundled"  # the broken override leaves the bundled one
    errors = {Path(e.path).name: e for e in rules.errors}
    assert set(errors) == {"b.toml", "c.toml"}
    assert str(errors["b.toml"]).startswith(f"{tmp_path / 'b.toml'}:5: rule 1: regex:")
    assert errors["c.toml"].line == 4


def test_duplicate_user_ids_keep_the_first_file(tmp_path):
    write(tmp_path, "a.toml", GOOD)
    write(tmp_path, "b.toml", GOOD)
    rules = load_rules(tmp_path)
    assert rules.for_agent("claude").path.endswith("a.toml")
    assert len(rules.errors) == 1 and "duplicate id" in rules.errors[0].reason


def test_default_user_dir_honours_env(monkeypatch, tmp_path):
    monkeypatch.setenv("PANEBOARD_RULES", str(tmp_path))
    assert default_user_dir() == tmp_path
    monkeypatch.delenv("PANEBOARD_RULES")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    assert default_user_dir() == tmp_path / "paneboard" / "rules"


def test_process_and_alias_lookup():
    rules = load_rules(Path("/nonexistent-paneboard-dir"))
    assert rules.for_process("claude").agent == "claude"
    assert rules.aliases["claude-code"] == "claude"
    assert isinstance(rules, RuleSet)


def test_TA_17_classifier_swaps_in_reloaded_rules(tmp_path):
    from paneboard_protocol.classifier import PaneClassifier

    rules = load_rules(tmp_path)
    c = PaneClassifier(rules)
    c.set_process(1, "claude", 5)
    c.set_screen(2, "MY OWN PROMPT")
    assert c.classification(2).state == "idle"
    write(tmp_path, "mine.toml", GOOD)
    c.set_rules(3, rules.reload())
    got = c.classification(3)
    assert (got.state, got.kind, got.source) == ("blocked", "permission", "screen")
    assert c.wants_screen
