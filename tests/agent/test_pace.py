"""The poll budget (pace.py): the same cap under steady reporting, no wait after a quiet spell."""

from __future__ import annotations

import pytest
from paneboard_agent.watch.pace import PollPace


def test_a_report_just_after_a_poll_is_not_made_to_wait_out_the_spacing() -> None:
    pace = PollPace(0.05, 2)
    assert pace.wait(100.0) == 0.0
    pace.spend(100.0)
    # a report 1 ms after the last poll started: a fixed gap would hold it 49 ms
    assert pace.wait(100.001) == 0.0
    pace.spend(100.001)
    # the burst is spent: the third waits until the budget has refilled by one poll
    assert pace.wait(100.002) == pytest.approx(0.048)
    assert pace.wait(100.05) == 0.0


def test_steady_demand_gets_one_poll_a_spacing_plus_the_burst() -> None:
    pace = PollPace(0.05, 2)
    now, polls = 0.0, 0
    while now < 10.0:
        now += pace.wait(now)
        pace.spend(now)
        polls += 1
        now += 0.0001  # the poll's own moment
    assert 199 <= polls <= 203


def test_a_quiet_spell_refills_the_burst_and_no_more() -> None:
    pace = PollPace(0.05, 3)
    for _ in range(10):
        pace.spend(0.0)  # forced polls (a first one, an announced change) still count
    assert pace.wait(0.0) == pytest.approx(0.40)
    now = 60.0
    for _ in range(3):
        assert pace.wait(now) == 0.0
        pace.spend(now)
    assert pace.wait(now) == pytest.approx(0.05)


@pytest.mark.parametrize(("spacing", "burst"), [(0.0, 2), (-1.0, 2), (0.05, 0)])
def test_a_budget_that_cannot_pace_is_refused(spacing: float, burst: int) -> None:
    with pytest.raises(ValueError):
        PollPace(spacing, burst)
