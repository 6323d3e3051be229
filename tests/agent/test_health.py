"""When a host's link health is reported (pure: the clock is handed in)."""

from __future__ import annotations

from paneboard_agent.uplink.health import EVERY, Health, HealthMeter


def test_first_report_then_every_few_seconds_or_on_a_jump() -> None:
    m = HealthMeter()
    m.answered(100.0, 0.040)
    assert m.due(100.0) == Health(0.040, 0, 100.0)
    m.answered(101.0, 0.050)
    assert m.due(101.0) is None  # a small change waits for the next round
    m.answered(100.0 + EVERY, 0.045)
    assert m.due(100.0 + EVERY) == Health(0.045, 0, 100.0 + EVERY)
    m.answered(106.0, 0.200)  # more than twice the last one reported: at once
    assert m.due(106.0) == Health(0.200, 0, 106.0)


def test_loss_and_reconnect_are_reported_at_once() -> None:
    m = HealthMeter()
    m.answered(10.0, 0.010)
    assert m.due(10.0) is not None
    m.lost()
    lost = m.due(10.5)
    assert lost == Health(None, 0, 10.0)  # no round trip while down; the last contact stays
    m.reconnected()
    m.answered(12.0, 0.012)
    assert m.due(12.0) == Health(0.012, 1, 12.0)
    assert Health(0.012, 1, 12.0).wire() == {"rtt": 0.012, "reconnects": 1, "contact": 12.0}


def test_a_poll_without_a_round_trip_keeps_the_last_one() -> None:
    m = HealthMeter()
    m.answered(1.0, 0.030)
    m.answered(2.0)  # a light poll: contact, no round trip measured
    assert m.current() == Health(0.030, 0, 2.0)
