"""THINKTERM_AGENT contract and identity: TA-4, TA-8..TA-15, RI-1, RI-4, RI-6 (spec 2 / 2b)."""

from __future__ import annotations

import pytest
from classifier_steps import T0, agent, fields, rep, run, unknown_state_contract
from paneboard_protocol.contract import MAX_AGE, MAX_AHEAD

TS = int(T0)
SIX_H = int(MAX_AGE)
UNOBS = ("proc", T0, "ssh", 20, False)

CASES = [
    pytest.param(
        [("ev", T0, [agent("my-agent", "working", ts=TS)])],
        T0,
        {"agent": "my-agent", "state": "working", "source": "protocol"},
        id="TA-1-contract-identifies-and-sets-state",
    ),
    pytest.param(
        [("ev", T0, [agent("my-agent", "blocked")])],
        T0,
        {"agent": "my-agent", "state": "blocked", "source": "protocol"},
        id="TA-7-grammar-v1-blocked",
    ),
    pytest.param(
        [("ev", T0, [agent("my-agent", "idle", session="")])],
        T0,
        {"agent": "my-agent", "state": "idle"},
        id="TA-11-empty-session-accepted",
    ),
    pytest.param(
        [("proc", T0, "claude", 1), ("ev", T0, [agent("my-agent", "working")])],
        T0,
        {"agent": "claude", "state": "idle"},
        id="TA-4-live-process-wins-identity",
    ),
    pytest.param(
        [
            ("proc", T0, "mytool", 1),
            ("ev", T0, [agent("my-agent", "working")]),
            ("proc", T0 + 5, "mytool", 2),
        ],
        T0 + 5,
        {"agent": None, "state": None},
        id="TA-4-variable-left-behind-never-labels-next-program",
    ),
    pytest.param(
        [("proc", T0, "mytool", 1), ("ev", T0, [agent("my-agent", "working")]), ("proc", T0 + 1, None)],
        T0 + 1,
        {"agent": None, "state": None},
        id="RI-5-process-exit-unclassified",
    ),
    pytest.param(
        [("ev", T0, [unknown_state_contract("my-agent")])],
        T0,
        {"agent": "my-agent", "state": "idle", "source": None},
        id="TA-10-unknown-state-drives-nothing",
    ),
    pytest.param(
        [("ev", T0, [agent("my-agent", "blocked")]), ("ev", T0 + 1, [unknown_state_contract("my-agent")])],
        T0 + 1,
        {"agent": "my-agent", "state": "idle"},
        id="RI-6-unknown-state-identifies-never-sets-state",
    ),
    pytest.param(
        [("ev", T0, [unknown_state_contract("other")])],
        T0,
        {"agent": "other"},
        id="TA-8-unknown-keys-ignored-agent-still-read",
    ),
    pytest.param(
        [("ev", T0, [agent("a1", "working")]), ("ev", T0 + 1, [agent("a2", "blocked")])],
        T0 + 1,
        {"agent": "a2", "state": "blocked"},
        id="TA-9-agent-identifier-latest-contract",
    ),
    # Staleness on an observable pane with a recorded leader: state authority goes, identity stays.
    pytest.param(
        [("proc", T0, "mytool", 1), ("ev", T0, [agent("my-agent", "working", ts=TS)])],
        T0 + SIX_H,
        {"agent": "my-agent", "state": "working"},
        id="RI-4-age-exactly-six-hours-is-fresh",
    ),
    pytest.param(
        [("proc", T0, "mytool", 1), ("ev", T0, [agent("my-agent", "working", ts=TS)])],
        T0 + SIX_H + 1,
        {"agent": "my-agent", "state": "idle", "source": None},
        id="TA-12-non-idle-older-than-six-hours-loses-authority",
    ),
    pytest.param(
        [("proc", T0, "mytool", 1), ("ev", T0, [agent("my-agent", "idle", ts=TS)])],
        T0 + 10 * SIX_H,
        {"agent": "my-agent", "state": "idle"},
        id="TA-14-idle-trusted-indefinitely",
    ),
    pytest.param(
        [UNOBS, ("ev", T0, [agent("my-agent", "working")])],
        T0 + 10 * SIX_H,
        {"agent": "my-agent", "state": "working"},
        id="TA-14-no-ts-trusted-indefinitely",
    ),
    pytest.param(
        [
            UNOBS,
            ("ev", T0, [agent("my-agent", "blocked", ts=TS)]),
            ("ev", T0 + SIX_H - 10, [agent("my-agent", "blocked", ts=TS + SIX_H - 10)]),
        ],
        T0 + SIX_H + 100,
        {"agent": "my-agent", "state": "blocked"},
        id="TA-14-resend-resets-window",
    ),
    pytest.param(
        [("proc", T0, "mytool", 1), ("ev", T0, [agent("my-agent", "working", ts=TS + int(MAX_AHEAD) + 1)])],
        T0,
        {"agent": None, "state": None},
        id="TA-12-ts-over-five-minutes-ahead-is-stale",
    ),
    pytest.param(
        [("proc", T0, "mytool", 1), ("ev", T0, [agent("my-agent", "working", ts=TS + int(MAX_AHEAD))])],
        T0,
        {"agent": "my-agent", "state": "working"},
        id="RI-4-ts-exactly-five-minutes-ahead-is-fresh",
    ),
    # Unobservable panes: the window also expires identity (TA-13).
    pytest.param(
        [UNOBS, ("ev", T0, [agent("my-agent", "working", ts=TS)])],
        T0 + SIX_H,
        {"agent": "my-agent", "state": "working", "observable": False},
        id="TA-13-unobservable-fresh-identity",
    ),
    pytest.param(
        [UNOBS, ("ev", T0, [agent("my-agent", "working", ts=TS)])],
        T0 + SIX_H + 1,
        {"agent": None, "state": None, "observable": False},
        id="TA-13-unobservable-stale-identity-expires",
    ),
    pytest.param(
        [("proc", T0, None, None, False), ("ev", T0, [agent("my-agent", "working", ts=TS)])],
        T0 + SIX_H + 1,
        {"agent": None, "state": None, "observable": False},
        id="TA-13-process-not-observable-identity-expires",
    ),
    pytest.param(
        [("proc", T0, "mytool", 1), ("ev", T0 + 1, [agent("my-agent", "working", ts=TS - SIX_H - 5)])],
        T0 + 1,
        {"agent": None, "state": None},
        id="RI-1-new-identity-only-from-fresh-contract",
    ),
    pytest.param(
        [("proc", T0, "mytool", 1), ("ev", T0, [agent("my-agent", "blocked", ts=TS)])],
        T0 + 3 * SIX_H,
        {"agent": "my-agent"},
        id="RI-1-recorded-leader-identity-outlives-staleness",
    ),
    # ended=1
    pytest.param(
        [
            ("proc", T0, "mytool", 1),
            ("ev", T0, [agent("my-agent", "working")]),
            ("ev", T0 + 1, [agent("my-agent", "idle", ended=True)]),
        ],
        T0 + 1,
        {"agent": "my-agent", "state": "working"},
        id="TA-15-ended-ignored-while-leader-in-front",
    ),
    pytest.param(
        [
            ("proc", T0, "mytool", 1),
            ("ev", T0, [agent("my-agent", "working")]),
            ("ev", T0 + 1, [agent("my-agent", "idle", ended=True)]),
            ("proc", T0 + 2, None),
        ],
        T0 + 2,
        {"agent": None, "state": None},
        id="TA-15-pane-leaves-classification-once-process-exits",
    ),
    pytest.param(
        [
            UNOBS,
            ("ev", T0, [agent("my-agent", "working")]),
            ("ev", T0 + 1, [agent("my-agent", "idle", ended=True)]),
        ],
        T0 + 1,
        {"agent": None, "state": None},
        id="RI-6-ended-removes-identity-without-live-process",
    ),
    pytest.param(
        [
            ("proc", T0, "claude", 1),
            ("ev", T0, [agent("claude", "working")]),
            ("ev", T0 + 1, [agent("claude", "idle", ended=True)]),
        ],
        T0 + 1,
        {"agent": "claude", "state": "working"},
        id="RI-6-ended-ignored-while-process-identified-agent-in-front",
    ),
    # RI-1 identity order.
    pytest.param(
        [("proc", T0, "ssh", 5), ("ev", T0, [rep("working", app="claude-code")])],
        T0,
        {"agent": "claude", "state": "working", "observable": False},
        id="RI-1-transport-never-identifies-report-app-does",
    ),
    pytest.param(
        [("proc", T0, "node --no-warnings /usr/local/bin/claude --resume", 5)],
        T0,
        {"agent": "claude", "state": "idle"},
        id="RI-1-interpreter-unwrapped-to-script",
    ),
    pytest.param(
        [("proc", T0, "/venv/bin/python3 /venv/bin/paneboard run --wrap -- claude --resume", 5)],
        T0,
        {"agent": "claude", "state": "idle"},
        id="RI-1-paneboard-run-relay-unwrapped-to-its-program",
    ),
    pytest.param(
        [("proc", T0, "python3 -m paneboard.cli run -- node /usr/lib/codex/bin/codex.js", 5)],
        T0,
        {"agent": "codex"},
        id="RI-1-paneboard-run-as-module-unwrapped-through-interpreter",
    ),
    pytest.param(
        [("proc", T0, "paneboard run --wrap", 5)],
        T0,
        {"agent": None},
        id="RI-1-paneboard-run-without-command-identifies-nothing",
    ),
    pytest.param(
        [("proc", T0, "/usr/local/bin/claude", 5)],
        T0,
        {"agent": "claude"},
        id="RI-1-process-basename-matches-manifest",
    ),
    pytest.param(
        [("ev", T0, [agent("my-agent", "working"), rep("blocked", app="codex")])],
        T0,
        {"agent": "my-agent", "state": "blocked"},
        id="RI-1-contract-before-report-app",
    ),
    pytest.param(
        [("proc", T0, "vim", 5)],
        T0,
        {"agent": None, "state": None},
        id="RI-1-nothing-unclassified",
    ),
]


@pytest.mark.parametrize(("steps", "at", "expected"), CASES)
def test_contract(steps, at, expected):
    got = run(steps, at=at)
    assert fields(got, list(expected)) == expected
