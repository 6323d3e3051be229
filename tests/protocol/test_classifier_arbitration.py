"""How the evidence combines (spec section 3, TA-1..TA-5, TA-16, TA-18, RI-2, RI-7, RI-9).

Each row of the two precedence tables in `paneboard_protocol.arbitration` has a case
whose id starts with `S3-identity-N` or `S3-state-N`.
"""

from __future__ import annotations

import pytest
from classifier_steps import (
    T0,
    agent,
    fields,
    progress,
    prompt_a,
    rep,
    run,
    title,
    unknown_state_contract,
)
from paneboard_protocol.events import Probe, PromptMark, UserVar
from paneboard_protocol.rules import RuleSet, parse_manifest

CLAUDE = ("proc", 0, "claude", 1)
SSH = ("proc", 0, "ssh", 2, False)
PERMISSION = "Bash command\n\nDo you want to proceed?\n❯ 1. Yes\n  2. No"
PROMPT = "some output\n\n❯ \n? for shortcuts"
WORKING = "● Reading files…\n\n✻ Thinking… (esc to interrupt)"
OTHER = "just some text"

CASES = [
    # Identity table.
    pytest.param(
        [CLAUDE, ("ev", 1, [agent("other", "working")])],
        {"agent": "claude"},
        id="S3-identity-1-process-manifest",
    ),
    pytest.param(
        [SSH, ("ev", 1, [agent("other", "working")])], {"agent": "other"}, id="S3-identity-2-contract"
    ),
    pytest.param(
        [SSH, ("ev", 1, [rep("working", app="claude-code")])],
        {"agent": "claude"},
        id="S3-identity-3-live-record-app-alias",
    ),
    pytest.param(
        [CLAUDE, ("ev", 1, [rep("error", app="claude-code")]), ("proc", 2, None)],
        {"agent": "claude", "state": "error"},
        id="S3-identity-4-left-over-result",
    ),
    pytest.param(
        [("proc", 0, "bash", 1)], {"agent": None, "state": None, "source": None}, id="S3-identity-5-nothing"
    ),
    # State table.
    pytest.param(
        [CLAUDE, ("screen", 1, PERMISSION), ("ev", 2, [rep("working", app="claude-code")])],
        {"state": "working", "source": "protocol"},
        id="S3-state-1-live-record-beats-screen",
    ),
    pytest.param(
        [CLAUDE, ("ev", 1, [rep("working", app="claude-code")]), ("screen", 2, PERMISSION)],
        {"state": "working", "source": "protocol"},
        id="RI-2-screen-not-even-read-under-a-report",
    ),
    pytest.param(
        [CLAUDE, ("ev", 1, [rep("working", app="codex")]), ("screen", 2, PERMISSION)],
        {"agent": "claude", "state": "blocked", "kind": "permission", "source": "screen"},
        id="RI-2-report-naming-another-agent-does-not-apply",
    ),
    pytest.param(
        [SSH, ("ev", 1, [agent("claude", "blocked")]), ("screen", 2, PROMPT)],
        {"agent": "claude", "state": "idle", "source": "screen"},
        id="S3-state-2-screen-beats-contract",
    ),
    pytest.param(
        [SSH, ("ev", 1, [agent("claude", "idle")]), ("screen", 2, PERMISSION)],
        {"state": "blocked", "kind": "permission", "source": "screen"},
        id="TA-5-screen-wins-state",
    ),
    pytest.param(
        [CLAUDE, ("screen", 1, OTHER), ("ev", 2, [title("⠂ project")])],
        {"state": "working", "source": "native", "title": "project"},
        id="S3-state-2-title-region-is-native",
    ),
    pytest.param(
        [SSH, ("ev", 1, [agent("claude", "working")]), ("screen", 2, OTHER)],
        {"state": "working", "source": "protocol"},
        id="S3-state-3-contract-when-no-rule-matches",
    ),
    pytest.param(
        [SSH, ("ev", 1, [unknown_state_contract("tool"), title("⠋ build")])],
        {"agent": "tool", "state": "working", "source": "native"},
        id="S3-state-4-native-spinner-without-manifest",
    ),
    pytest.param(
        [SSH, ("ev", 1, [agent("tool", "blocked"), title("⠋ build")])],
        {"state": "blocked", "source": "protocol"},
        id="S3-state-4-contract-beats-native",
    ),
    pytest.param(
        [("proc", 0, "codex", 3), ("ev", 1, [title("⠋ codex")]), ("screen", 2, OTHER)],
        {"agent": "codex", "state": "idle", "source": None},
        id="RI-7-native-only-through-manifest-regions",
    ),
    pytest.param(
        [CLAUDE, ("ev", 1, [rep("done", app="claude-code")]), ("proc", 2, None)],
        {"state": "done", "source": "protocol"},
        id="S3-state-5-left-over-results",
    ),
    pytest.param(
        [CLAUDE, ("screen", 1, OTHER)],
        {"agent": "claude", "state": "idle", "source": None},
        id="S3-state-6-fallback-idle-never-blocked",
    ),
    pytest.param([], {"agent": None, "state": None}, id="S3-state-7-unclassified"),
    # Screen rules (TA-2), the bottom of the screen (RI-9), title/progress (TA-18).
    pytest.param(
        [CLAUDE, ("screen", 1, WORKING)],
        {"state": "working", "source": "screen"},
        id="TA-2-screen-rule-matches-visible-output",
    ),
    pytest.param(
        [CLAUDE, ("screen", 1, PERMISSION + "\n" + "\n".join(f"line {i}" for i in range(64)))],
        {"state": "idle", "source": None},
        id="RI-9-only-bottom-64-rows-are-read",
    ),
    pytest.param(
        [CLAUDE, ("ev", 1, [title("⠂ x")]), ("proc", 2, "claude", 9), ("screen", 3, OTHER)],
        {"state": "idle", "title": None},
        id="TA-18-title-cleared-when-program-changes",
    ),
    pytest.param(
        [CLAUDE, ("screen", 1, PERMISSION), ("proc", 2, "claude", 9)],
        {"agent": "claude", "state": "idle", "source": None},
        id="TA-4-new-process-is-not-read-through-the-old-frame",
    ),
    pytest.param(
        [CLAUDE, ("ev", 1, [title("⠂ icon", code=1)]), ("screen", 2, OTHER)],
        {"state": "idle", "title": None},
        id="TA-18-icon-title-is-not-the-title",
    ),
    pytest.param(
        [CLAUDE, ("screen", 1, WORKING), ("ev", 2, [rep("idle", app="claude-code")])],
        {"state": "idle", "source": "protocol"},
        id="TA-16-reported-idle-needs-no-screen-rules",
    ),
    # Native signals without manifests (TA-3): OSC 9;4.
    pytest.param(
        [SSH, ("ev", 1, [unknown_state_contract("tool"), progress(1, 40)])],
        {"state": "working", "source": "native", "progress": 40},
        id="TA-3-osc-9-4-1-is-working",
    ),
    pytest.param(
        [SSH, ("ev", 1, [unknown_state_contract("tool"), progress(2, 40)])],
        {"state": "error", "source": "native"},
        id="TA-3-osc-9-4-2-is-error",
    ),
    pytest.param(
        [SSH, ("ev", 1, [unknown_state_contract("tool"), progress(3)])],
        {"state": "idle", "source": None},
        id="RI-7-osc-9-4-3-indeterminate-is-not-working",
    ),
    pytest.param(
        [SSH, ("ev", 1, [unknown_state_contract("tool"), title("◐ Initial")])],
        {"state": "working", "source": "native"},
        id="TA-3-half-circle-spinner-title",
    ),
    pytest.param(
        [SSH, ("ev", 1, [unknown_state_contract("tool"), title("✳ Claude Code")])],
        {"state": "idle"},
        id="TA-3-static-glyph-is-not-a-spinner",
    ),
    # Neighbours and write-only records.
    pytest.param(
        [("ev", 1, [rep("working", app="x"), PromptMark(0, "C"), PromptMark(0, "D", 0)])],
        {"state": "working"},
        id="P7501-14-osc133-C-D-do-not-touch-records",
    ),
    pytest.param(
        [("ev", 1, [rep("working", app="x"), UserVar(0, "OTHER", "v")])],
        {"state": "working", "agent": "x"},
        id="P7501-14-other-user-vars-ignored",
    ),
    pytest.param(
        [("ev", 1, [rep("blocked", app="x")])],
        {"state": "blocked"},
        id="P7501-11-report-without-probe-accepted",
    ),
    pytest.param(
        [("ev", 1, [Probe(0, "bel")])], {"agent": None, "state": None}, id="P7501-10-probe-changes-nothing"
    ),
    pytest.param(
        [("ev", 1, [rep("working", app="x"), Probe(0, "st")])],
        {"state": "working"},
        id="P7501-9-records-write-only-probe-keeps-them",
    ),
    pytest.param(
        [CLAUDE, ("ev", 1, [rep("blocked", app="claude-code"), prompt_a()]), ("screen", 2, PROMPT)],
        {"state": "blocked", "source": "protocol"},
        id="P7501-8-an-identified-agents-own-prompt-mark-keeps-its-report-over-the-screen",
    ),
]


@pytest.mark.parametrize(("steps", "expected"), CASES)
def test_arbitration(steps, expected):
    got = run(steps)
    assert fields(got, list(expected)) == expected


def test_TA_3_detection_off_uses_only_native_signals():
    """rules=None: no manifests at all, so the spinner still says working."""
    got = run([("ev", T0, [agent("tool", "idle"), title("⠙ x")])], rules=None)
    assert (got.agent, got.state, got.source) == ("tool", "idle", "protocol")
    got = run([("ev", T0, [unknown_state_contract("tool"), title("⠙ x")])], rules=None)
    assert (got.agent, got.state, got.source) == ("tool", "working", "native")


def test_TA_18_title_rule_never_matches_an_unset_title():
    m = parse_manifest(
        'id = "t"\nagent = "t"\nprocess = ["t"]\n[[rules]]\nstate = "working"\ntitle = [\'\\S\']\n'
    )
    rules = RuleSet.from_manifests([m])
    assert run([("proc", 0, "t", 1), ("screen", 1, "x")], rules=rules).state == "idle"
    got = run([("proc", 0, "t", 1), ("screen", 1, "x"), ("ev", 2, [title("host")])], rules=rules)
    assert (got.state, got.source) == ("working", "native")


def test_TA_18_progress_region_reads_what_was_emitted():
    m = parse_manifest(
        'id = "t"\nagent = "t"\nprocess = ["t"]\n[[rules]]\nstate = "idle"\nregion = "progress"\n'
        'regex = [\'^4;0\']\n[[rules]]\nstate = "working"\ncontains = ["busy"]\n'
    )
    rules = RuleSet.from_manifests([m])
    base = [("proc", 0, "t", 1), ("screen", 1, "busy")]
    assert run(base, rules=rules).state == "working"
    got = run([*base, ("ev", 2, [progress(0)])], rules=rules, at=5)
    assert (got.state, got.source) == ("idle", "native")
