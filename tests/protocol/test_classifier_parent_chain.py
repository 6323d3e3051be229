"""A shell's report holds while its own commands run, and no longer (RI-2, P7501-8).

The protocol author's snippet — `status working "Syncing photos"`, then `rsync … &&
status done … || status error …` — is written by the shell itself (a function and
`printf`), so the process in front changes to the shell's child while the report is
meant to hold. These tables drive the real classifier with the process changes a
collector sees: ("fg", t, name, pid, chain), `chain` the pids above `pid`, nearest first.
"""

from __future__ import annotations

import pytest
from classifier_steps import RULES, agent, apply, fields, prompt_a, rep
from paneboard_protocol.arbitration import classify_evidence
from paneboard_protocol.classifier import PaneClassifier

SHELL = ("fg", 0.0, None, 100, [1])  # bash (pid 100) at its prompt, started by tmux (1)


def sleep_(t: float, pid: int = 200) -> tuple:
    return ("fg", t, "sleep", pid, [100, 1])


def back(t: float) -> tuple:
    return ("fg", t, None, 100, [1])


CASES = [
    pytest.param(
        [SHELL, ("ev", 1, [rep("working", msg="Syncing photos")]), sleep_(2)],
        {"state": "working", "msg": "Syncing photos", "source": "protocol"},
        id="typed: the shell's working holds while its command runs",
    ),
    pytest.param(
        [SHELL, ("ev", 1, [rep("working", msg="Syncing photos")]), sleep_(2), back(5)],
        {"agent": None, "state": None, "source": None},
        id="Ctrl-C: back at the shell's prompt, its working ends",
    ),
    pytest.param(
        [
            SHELL,
            ("ev", 1, [rep("working", msg="Syncing photos")]),
            sleep_(2),
            back(5),
            ("ev", 5, [rep("done", msg="Photos synced")]),
        ],
        {"state": "done", "msg": "Photos synced", "source": "protocol"},
        id="then done, written by the shell after its command",
    ),
    pytest.param(
        [SHELL, ("ev", 1, [rep("done", msg="built")]), sleep_(2), back(3), ("fg", 4, "ls", 300, [100, 1])],
        {"state": "done", "msg": "built"},
        id="done and error outlive the shell's next prompt and its next command",
    ),
    pytest.param(
        [SHELL, ("ev", 1, [rep("blocked", kind="question", msg="?")]), sleep_(2), back(3)],
        {"state": None},
        id="blocked ends at the shell's next prompt too",
    ),
    pytest.param(
        [
            SHELL,
            ("ev", 1, [rep("working", msg="deploy")]),
            ("fg", 2, "make", 200, [100, 1]),
            ("fg", 3, "cc", 300, [200, 100, 1]),
        ],
        {"state": "working", "msg": "deploy"},
        id="a grandchild in front: the shell is still an ancestor",
    ),
    pytest.param(
        [
            SHELL,
            ("ev", 1, [rep("working", msg="deploy")]),
            ("fg", 2, "make", 200, [100, 1]),
            ("ev", 2, [rep("working", id="make", msg="compiling")]),
            ("fg", 3, "cc", 300, [200, 100, 1]),
            ("fg", 4, "make", 200, [100, 1]),
        ],
        {"state": "working", "msg": "deploy"},
        id="back at make's prompt: make's working ends, the shell's holds",
    ),
    pytest.param(
        [
            SHELL,
            ("ev", 1, [rep("working", msg="Syncing photos")]),
            ("fg", 2, None, 200, [100, 1]),
            sleep_(2.1),
        ],
        {"state": "working", "msg": "Syncing photos"},
        id="the shell's fork seen before its exec: still the shell's child",
    ),
    pytest.param(
        [SHELL, sleep_(1), ("ev", 1, [rep("working", msg="Syncing photos")]), back(4)],
        {"state": None},
        id="pasted: a report filed under the command ends when it exits",
    ),
    pytest.param(
        [
            SHELL,
            sleep_(1),
            ("ev", 1, [rep("working", msg="Syncing photos")]),
            ("fg", 1.5, "sleep", 200, [100, 1]),
        ],
        {"state": "working"},
        id="pasted: and holds while it runs",
    ),
    pytest.param(
        [SHELL, ("ev", 1, [rep("working", msg="x")]), ("fg", 2, "top", 900, [])],
        {"state": None},
        id="a process the shell did not start (no known ancestry): the report ends as before",
    ),
    pytest.param(
        [SHELL, ("ev", 1, [rep("working", msg="x")]), ("fg", 2, "sleep", 200, [150, 1])],
        {"state": None},
        id="another shell's child: the report ends",
    ),
    pytest.param(
        [SHELL, ("ev", 1, [rep("working", msg="x")]), ("fg", 2, "sleep", None, [])],
        {"state": None},
        id="no pid in front: nothing to follow",
    ),
    pytest.param(
        [SHELL, ("ev", 1, [rep("working", msg="Syncing photos")]), ("fg", 2, "claude", 300, [100, 1])],
        {"agent": "claude", "state": "idle", "msg": None, "source": None},
        id="a manifest agent started from the shell is classified on its own evidence",
    ),
    pytest.param(
        [
            SHELL,
            ("ev", 1, [rep("working", msg="Syncing photos")]),
            ("fg", 2, "claude", 300, [100, 1]),
            back(3),
        ],
        {"agent": None, "state": None},
        id="and the shell's working does not come back when it exits",
    ),
    pytest.param(
        [SHELL, ("ev", 1, [rep("working", msg="x")]), sleep_(2), ("ev", 2, [prompt_a()])],
        {"state": None},
        id="OSC 133 A still ends every live record",
    ),
    pytest.param(
        [SHELL, ("ev", 1, [agent("aider", "working")]), sleep_(2)],
        {"agent": None, "state": None},
        id="TA-4: a contract keeps its own rule (its leader left)",
    ),
]


@pytest.mark.parametrize(("steps", "expected"), CASES)
def test_parent_chain(steps: list[tuple], expected: dict) -> None:
    c = PaneClassifier(RULES)
    t = 0.0
    for step in steps:
        t = apply(c, step)
        # the server re-derives the same state from the evidence at every step
        mine = c.classification(t)
        assert classify_evidence(c.evidence(), t) == mine
    assert fields(c.classification(t), list(expected)) == expected


def test_the_writer_is_in_the_evidence() -> None:
    c = PaneClassifier(RULES)
    for step in (SHELL, ("ev", 1, [rep("working", msg="m")]), sleep_(2)):
        apply(c, step)
    (rec,) = c.evidence()["records"]
    assert rec["pid"] == 100
    assert rec["gen"] == c.evidence()["process"]["gen"]  # still live, under sleep


def test_a_long_or_bad_chain_is_bounded() -> None:
    c = PaneClassifier(RULES)
    apply(c, SHELL)
    apply(c, ("ev", 1, [rep("working")]))
    deep = [*range(1000, 1100), 100]  # the writer beyond MAX_CHAIN ancestors
    c.set_process(2, "sleep", 200, chain=deep)
    assert c.classification(2).state is None
