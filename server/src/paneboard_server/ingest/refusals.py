"""Back-off for collector tokens whose connections the server refuses.

A refused connection (a message that fails validation or cannot be stored, a claim to
another collector's host, a bad hello) costs the server a token lookup, a database read,
hosts marked up and down and, for a snapshot, a writer transaction. A collector that
reconnects at once after each refusal would spend those as fast as it can, beside the
honest collectors' commits, and write a log line each time. So each refusal of a token
after its first doubles how long that token's next connection waits before its hello is
read (1 s, 2 s ... up to `MAX_DELAY`); while one of its connections waits, another is
closed at once (1013, try again later). A burst of refusals is logged once, when it
starts; the rest are counted (`refused_delayed` in the core's stats, `/metrics`). A token
that goes `QUIET` seconds without a refusal starts afresh.

Per token, not per address: the token is what the server knows a collector by, and
what was refused (the address-level limits before authentication are the middleware's).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from ..auth import Backoff

#: the longest a refused token's next connection waits
MAX_DELAY = 30.0
#: seconds without a refusal after which a token's back-off and its burst end
QUIET = 120.0
#: refusals before the back-off starts: one refusal alone (a pane the collector then
#: leaves out) costs an honest collector nothing
FREE = 1


class RefusedTokens:
    """Which collector tokens were refused lately, and how long their next connection waits."""

    def __init__(
        self, free: int = FREE, max_delay: float = MAX_DELAY, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.clock = clock
        self._backoff = Backoff(free, max_delay, forget=QUIET)
        self.waiting: set[int] = set()  # tokens with a connection waiting out its delay

    def delay(self, token_id: int) -> float:
        """Seconds this token's connection must wait before it is served (0: serve it now)."""
        return self._backoff.wait(str(token_id), self.clock())

    def refused(self, token_id: int) -> bool:
        """Count a refusal; True when it starts a burst (the one to log)."""
        key = str(token_id)
        now = self.clock()
        first = self._backoff.failures(key, now) == 0
        self._backoff.failed(key, now)
        return first
