"""The whole suite's tiers (tests/support/proctier.py): every test that may start a process
is marked `proc` here, at collection, before `-m "not proc"` (the fast tier) selects; an
unmarked test that starts one fails."""

from __future__ import annotations

import pytest
from support.proctier import Guard, in_proc_tier

_guard: Guard | None = None
_UNMARKED = pytest.StashKey[bool]()


@pytest.hookimpl(tryfirst=True)  # before the mark plugin applies -m
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        names = {m.name for m in item.iter_markers()}
        fixturenames = list(getattr(item, "fixturenames", ()))
        if in_proc_tier(names, fixturenames):
            if "proc" not in names:
                item.add_marker(pytest.mark.proc)
        else:
            item.stash[_UNMARKED] = True


def pytest_sessionstart(session: pytest.Session) -> None:
    global _guard
    _guard = Guard()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    if _guard is not None and item.stash.get(_UNMARKED, False):
        _guard.arm()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> pytest.TestReport:
    report: pytest.TestReport = yield
    if _guard is None or not item.stash.get(_UNMARKED, False):
        return report
    seen = _guard.disarm()
    if seen and report.outcome != "failed":
        report.outcome = "failed"
        report.longrepr = (
            f"this test started a process during {call.when} but is not in the proc tier: mark it "
            "@pytest.mark.proc (or a tmux/sshd/postgres/browser/realagent marker), or register "
            "the fixture that starts it with support.proctier.spawns. Started:\n  " + "\n  ".join(seen)
        )
    if call.when != "teardown":
        _guard.arm()
    return report
