"""OSC 7501 records in the classifier: replace, clear, lifecycle, cap, roll-up (spec 1 / 1a)."""

from __future__ import annotations

import pytest
from classifier_steps import RULES, clr, fields, prompt_a, rep, ris, run
from paneboard_protocol.classifier import PaneClassifier
from paneboard_protocol.records import MAX_RECORDS

P = ("proc", 0.0, "claude", 10)

CASES = [
    # id, steps, expected (agent, state, kind, msg, source)
    pytest.param(
        [("ev", 1, [rep("working", app="claude-code")])],
        {"agent": "claude", "state": "working", "source": "protocol"},
        id="P7501-3-working-report-sets-state",
    ),
    pytest.param(
        [("ev", 1, [rep("blocked", kind="question", app="x", msg="Proceed?")])],
        {"agent": "x", "state": "blocked", "kind": "question", "msg": "Proceed?"},
        id="P7501-4-blocked-carries-kind",
    ),
    pytest.param(
        [("ev", 1, [rep("working", kind="question", app="x")])],
        {"state": "working", "kind": None},
        id="P7501-17-kind-only-with-blocked",
    ),
    pytest.param(
        [("ev", 1, [rep("blocked", app="x", msg="m", kind="auth")]), ("ev", 2, [rep("working")])],
        {"agent": None, "state": "working", "kind": None, "msg": None},
        id="P7501-6-each-report-replaces-whole-record",
    ),
    pytest.param(
        [("ev", 1, [rep("working", app="x"), rep("blocked", id="a", app="x")]), ("ev", 2, [clr("a")])],
        {"state": "working"},
        id="P7501-16-clear-subtree",
    ),
    pytest.param(
        [
            ("ev", 1, [rep("blocked", id="ab", app="x"), rep("working", id="a", app="x")]),
            ("ev", 2, [clr("a")]),
        ],
        {"state": "blocked"},
        id="P7501-16-clear-spares-prefix-sibling",
    ),
    pytest.param(
        [
            ("ev", 1, [rep("blocked", id="a/b", app="x"), rep("working", id="c", app="x")]),
            ("ev", 2, [clr("a")]),
        ],
        {"state": "working"},
        id="P7501-16-clear-removes-descendants",
    ),
    pytest.param(
        [("ev", 1, [rep("working", app="x"), rep("blocked", id="a", app="x")]), ("ev", 2, [clr(None)])],
        {"agent": None, "state": None, "source": None},
        id="P7501-16-clear-without-id-removes-all",
    ),
    pytest.param(
        [P, ("ev", 1, [rep("working", app="claude-code")]), ("proc", 2, None)],
        {"agent": None, "state": None},
        id="P7501-8-process-exit-drops-working",
    ),
    pytest.param(
        [("ev", 1, [rep("blocked", app="deploy")]), ("ev", 2, [prompt_a()])],
        {"agent": None, "state": None, "source": None},
        id="P7501-8-osc133-A-drops-blocked",
    ),
    pytest.param(
        [("proc", 0.0, "make", 10), ("ev", 1, [rep("working", app="make")]), ("ev", 2, [prompt_a()])],
        {"agent": None, "state": None, "source": None},
        id="P7501-8-osc133-A-drops-working-of-a-program-no-manifest-names",
    ),
    pytest.param(
        [P, ("ev", 1, [rep("blocked", app="claude-code")]), ("ev", 2, [prompt_a()])],
        {"agent": "claude", "state": "blocked", "source": "protocol"},
        id="P7501-8-osc133-A-from-an-identified-agent-is-not-a-shell-prompt",
    ),
    pytest.param(
        [P, ("ev", 1, [rep("idle", app="claude-code")]), ("proc", 2, None)],
        {"agent": None, "state": None},
        id="P7501-8-process-exit-drops-idle-too",
    ),
    pytest.param(
        [P, ("ev", 1, [rep("done", app="claude-code", msg="ready")]), ("proc", 2, None)],
        {"agent": "claude", "state": "done", "msg": "ready", "source": "protocol"},
        id="P7501-8-done-survives-exit",
    ),
    pytest.param(
        [P, ("ev", 1, [rep("error", app="claude-code")]), ("ev", 2, [prompt_a()])],
        {"agent": "claude", "state": "error"},
        id="P7501-8-error-survives-prompt",
    ),
    pytest.param(
        [P, ("ev", 1, [rep("done", app="claude-code")]), ("proc", 2, None), ("seen", 3)],
        {"agent": None, "state": None},
        id="RI-5-left-over-done-goes-when-seen",
    ),
    pytest.param(
        [P, ("ev", 1, [rep("done", app="claude-code")]), ("seen", 3)],
        {"agent": "claude", "state": "idle", "source": "protocol"},
        id="P7501-8-done-lives-until-seen",
    ),
    pytest.param(
        [("ev", 1, [rep("done", app="x")]), ("at", 99999)],
        {"agent": "x", "state": "done"},
        id="P7501-7-no-heartbeat-records-never-expire",
    ),
    pytest.param(
        [P, ("ev", 1, [rep("done", app="claude-code")]), ("proc", 2, None), ("proc", 3, "codex", 11)],
        {"agent": "codex", "state": "idle", "records": ()},
        id="RI-5-another-agent-starts-drops-results",
    ),
    pytest.param(
        [P, ("ev", 1, [rep("done", app="claude-code")]), ("proc", 2, None), ("proc", 3, "vim", 12)],
        {"agent": "claude", "state": "done"},
        id="RI-5-non-agent-process-keeps-results",
    ),
    pytest.param(
        [("ev", 1, [rep("working", app="x"), rep("blocked", id="a", app="x")]), ("ev", 2, [ris()])],
        {"agent": None, "state": None, "records": ()},
        id="P7501-21-RIS-drops-all",
    ),
    pytest.param(
        [("ev", 1, [rep("working", app="claude-code"), rep("blocked", id="task_1.a", kind="question")])],
        {"agent": "claude", "state": "blocked", "kind": "question"},
        id="P7501-13-claude-child-record-shape",
    ),
    pytest.param(
        [("ev", 1, [rep("working", app="parent"), rep("blocked", id="k/c")])],
        {"agent": "parent", "state": "blocked"},
        id="P7501-18-record-without-app-shows-ancestors",
    ),
    # Roll-up (P7501-22): blocked > error > working > done > idle, ties to the most recent.
    pytest.param(
        [("ev", 1, [rep("error", id="a", app="x"), rep("blocked", id="b", app="x")])],
        {"state": "blocked"},
        id="P7501-22-blocked-beats-error",
    ),
    pytest.param(
        [("ev", 1, [rep("working", id="a", app="x"), rep("error", id="b", app="x")])],
        {"state": "error"},
        id="P7501-22-error-beats-working",
    ),
    pytest.param(
        [("ev", 1, [rep("done", id="a", app="x"), rep("working", id="b", app="x")])],
        {"state": "working"},
        id="P7501-22-working-beats-done",
    ),
    pytest.param(
        [("ev", 1, [rep("idle", id="a", app="x"), rep("done", id="b", app="x")])],
        {"state": "done"},
        id="P7501-22-done-beats-idle",
    ),
    pytest.param(
        [
            ("ev", 1, [rep("blocked", id="a", app="x", kind="auth")]),
            ("ev", 2, [rep("blocked", id="b", kind="question")]),
        ],
        {"state": "blocked", "kind": "question"},
        id="P7501-22-tie-goes-to-most-recent",
    ),
    pytest.param(
        [("ev", 1, [rep("error", id="a", app="x"), rep("blocked", id="b", app="x")])],
        {"state": "blocked"},
        id="RI-8-differs-we-pick-P7501-22-blocked-over-error",
    ),
    pytest.param(
        [
            P,
            ("ev", 1, [rep("error", id="old", app="claude-code")]),
            ("proc", 2, None),
            ("ev", 3, [rep("working", id="new", app="make")]),
        ],
        {"agent": "make", "state": "working"},
        id="RI-8-live-records-before-left-over-results",
    ),
]


@pytest.mark.parametrize(("steps", "expected"), CASES)
def test_records(steps, expected):
    got = run(steps)
    assert fields(got, list(expected)) == expected


def test_P7501_21_cap_evicts_least_recently_updated():
    c = PaneClassifier(RULES)
    c.feed(0, [rep("blocked", id="first", app="x")])
    c.feed(1, [rep("idle", id=f"r{i}", app="x") for i in range(MAX_RECORDS - 1)])
    assert len(c.classification(1).records) == MAX_RECORDS
    c.feed(2, [rep("blocked", id="first", app="x")])  # re-sent: now the most recent
    c.feed(3, [rep("idle", id="newcomer", app="x")])
    ids = {r["id"] for r in c.classification(3).records}
    assert len(ids) == MAX_RECORDS
    assert "first" in ids and "newcomer" in ids and "r0" not in ids


def test_P7501_21_replacing_an_existing_id_never_evicts():
    c = PaneClassifier(RULES)
    c.feed(0, [rep("idle", id=f"r{i}", app="x") for i in range(MAX_RECORDS)])
    c.feed(1, [rep("working", id="r5", app="x")])
    assert len(c.classification(1).records) == MAX_RECORDS
    assert c.classification(1).state == "working"


def test_P7501_6_records_list_shows_each_record():
    got = run(
        [
            (
                "ev",
                5,
                [
                    rep("working", app="claude-code", progress=40, title="T"),
                    rep("blocked", id="task_1.a", kind="question", msg="Which?"),
                ],
            )
        ]
    )
    assert got.records == (
        {
            "id": None,
            "state": "working",
            "kind": None,
            "app": "claude-code",
            "msg": None,
            "title": "T",
            "progress": 40,
            "updated": 5,
        },
        {
            "id": "task_1.a",
            "state": "blocked",
            "kind": "question",
            "app": "claude-code",
            "msg": "Which?",
            "title": None,
            "progress": None,
            "updated": 5,
        },
    )
    assert got.progress is None  # the winner (blocked child) carries none; P7501-17


def test_P7501_19_untrusted_text_is_stripped_of_bidi_and_invisibles():
    got = run([("ev", 1, [rep("blocked", app="x", msg="ok\u202eevil\u200b!")])])
    assert got.msg == "okevil!"
