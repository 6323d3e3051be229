"""The answer survives: a `done` without text does not hide the one answer another
`done` carries (spec.md, the answer rule beside P7501-22).

Codex writes its own OSC 7501 `done` (no `msg`) at a turn's end, and its `notify`
recipe writes `done` with the answer under its own `id`; under load either comes last.
"""

from __future__ import annotations

import pytest
from classifier_steps import RULES, apply, fields, rep
from paneboard_protocol.arbitration import classify_evidence
from paneboard_protocol.classifier import PaneClassifier

CODEX = ("proc", 0.0, "codex", 50)
NOTIFY = "paneboard-notify"


def said(msg: str) -> object:
    return rep("done", id=NOTIFY, app="codex", msg=msg)


CASES = [
    pytest.param(
        [CODEX, ("ev", 1, [rep("working")]), ("ev", 2, [said("42")]), ("ev", 3, [rep("done")])],
        {"agent": "codex", "state": "done", "msg": "42"},
        id="codex's own done last: the answer shows",
    ),
    pytest.param(
        [CODEX, ("ev", 1, [rep("working")]), ("ev", 2, [rep("done")]), ("ev", 3, [said("42")])],
        {"state": "done", "msg": "42"},
        id="the recipe's done last: the answer shows",
    ),
    pytest.param(
        [
            CODEX,
            ("ev", 1, [rep("working")]),
            ("ev", 2, [rep("done"), said("first answer")]),
            ("ev", 3, [rep("working")]),
            ("ev", 4, [rep("done")]),
        ],
        {"state": "done", "msg": None},
        id="an answer older than the last working is never shown for the next turn",
    ),
    pytest.param(
        [
            CODEX,
            ("ev", 1, [rep("working")]),
            ("ev", 2, [rep("done"), said("first answer")]),
            ("ev", 3, [rep("working")]),
            ("ev", 4, [rep("done")]),
            ("ev", 5, [said("second answer")]),
        ],
        {"state": "done", "msg": "second answer"},
        id="the next turn's answer shows when it comes",
    ),
    pytest.param(
        [
            CODEX,
            ("ev", 1, [rep("done", id="a", msg="one"), rep("done", id="b", msg="two"), rep("done")]),
        ],
        {"state": "done", "msg": None},
        id="two answers: most recent wins, as P7501-22 says",
    ),
    pytest.param(
        [CODEX, ("ev", 1, [said("42"), rep("done", msg="own")])],
        {"state": "done", "msg": "own"},
        id="the winner's own message stays",
    ),
    pytest.param(
        [CODEX, ("ev", 1, [said("42"), rep("idle")])],
        {"state": "done", "msg": "42"},
        id="a record in another state: P7501-22 alone",
    ),
    pytest.param(
        [CODEX, ("ev", 1, [said("42"), rep("working", id="w")])],
        {"state": "working"},
        id="working outranks done",
    ),
    pytest.param(
        [CODEX, ("ev", 1, [rep("working")]), ("ev", 2, [said("42"), rep("done")]), ("proc", 3, None, 10)],
        {"agent": "codex", "state": "done", "msg": "42"},
        id="after codex exits: the left-over answer still shows",
    ),
]


@pytest.mark.parametrize(("steps", "expected"), CASES)
def test_answer(steps: list[tuple], expected: dict) -> None:
    c = PaneClassifier(RULES)
    t = 0.0
    for step in steps:
        t = apply(c, step)
        assert classify_evidence(c.evidence(), t) == c.classification(t)
    assert fields(c.classification(t), list(expected)) == expected


def test_version_1_evidence_is_read_as_before() -> None:
    """An older collector's evidence (no `other_seq`, no writer pids) still classifies,
    without the answer rule: what that collector itself showed."""
    c = PaneClassifier(RULES)
    for step in (CODEX, ("ev", 1, [rep("working")]), ("ev", 2, [said("42")]), ("ev", 3, [rep("done")])):
        apply(c, step)
    ev = c.evidence()
    ev["v"] = 1
    del ev["other_seq"]
    for r in ev["records"]:
        del r["pid"]
    got = classify_evidence(ev, 3)
    assert (got.state, got.msg) == ("done", None)
