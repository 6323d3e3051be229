"""How often one tmux server is polled: on average at most one poll a spacing, but a
poll that follows a quiet spell is not made to wait for the one just before it.

Every held report waits for a poll started after it arrived (`tracker.PaneTracker.output`),
so any wait here is added to its delay. A fixed gap after every poll capped the rate but
also made a lone report that came a moment after the previous poll started wait out the
rest of the gap: up to 50 ms on the board for nothing, on every link, although nothing
else was being polled. A budget that lets `burst` polls run back to back and refills at
one a spacing keeps the cap under steady reporting (the same 20 polls a second) and
lets the sparse reports of a quiet host through at once.

This is GCRA (the "generic cell rate algorithm" of ATM and most rate limiters): one
number, the time the budget is next spent through, advanced one spacing per poll.
"""

from __future__ import annotations


class PollPace:
    """A budget of polls: `burst` at once, refilled at one per `spacing` seconds.

    Pure: the caller passes the (monotonic) time."""

    def __init__(self, spacing: float, burst: int) -> None:
        if spacing <= 0 or burst < 1:
            raise ValueError("spacing must be positive and burst at least 1")
        self.spacing = spacing
        self.burst = burst
        self._spent_until = float("-inf")  # when the polls run so far are paid for

    def wait(self, now: float) -> float:
        """Seconds until a poll may start (0: now)."""
        return max(0.0, self._spent_until - (self.burst - 1) * self.spacing - now)

    def spend(self, now: float) -> None:
        """A poll starts now (whether or not `wait` said it could: a first poll, a forced one)."""
        self._spent_until = max(self._spent_until, now) + self.spacing
