"""The back-off of a collector token refused again and again (`ingest/refusals.py`), pure:
the delays it starts, and that a burst is reported once and ends after a quiet spell."""

from __future__ import annotations

from paneboard_server.ingest.refusals import MAX_DELAY, QUIET, RefusedTokens


def test_refusals_double_the_delay_and_a_burst_is_reported_once() -> None:
    now = [1000.0]
    r = RefusedTokens(clock=lambda: now[0])
    assert r.delay(7) == 0
    assert r.refused(7) is True  # the burst's first: logged
    assert r.delay(7) == 0  # one refusal alone costs nothing
    delays = []
    for _ in range(8):
        assert r.refused(7) is False
        delays.append(r.delay(7))
    assert delays == [1, 2, 4, 8, 16, MAX_DELAY, MAX_DELAY, MAX_DELAY]
    assert r.delay(8) == 0  # another token is not touched
    now[0] += QUIET + 1  # quiet: the next refusal starts a new burst, free again
    assert r.delay(7) == 0
    assert r.refused(7) is True and r.delay(7) == 0
