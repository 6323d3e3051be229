"""Rate limiting and de-duplication for outgoing channel messages.

De-duplication is per channel, pane and state: the same pane reaching the same state
again within `dedupe_window` seconds is not re-sent (an agent that flaps
blocked -> working -> blocked in a few seconds is one thing to tell, not three).
Rate limiting is a token bucket per channel so a storm of changes cannot flood a
team's chat; what is over the limit is dropped and counted, never queued without
bound. Both take the time as an argument: no clock of their own.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field


@dataclass
class TokenBucket:
    rate: float  # tokens per second
    burst: float
    tokens: float = -1.0
    at: float = 0.0

    def take(self, now: float) -> bool:
        if self.tokens < 0:
            self.tokens, self.at = self.burst, now
        self.tokens = min(self.burst, self.tokens + max(0.0, now - self.at) * self.rate)
        self.at = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return True
        return False


@dataclass
class Limiter:
    """`allow(channel, pane, state, now)`: may this message go out now?"""

    per_minute: float = 20.0
    burst: float = 10.0
    dedupe_window: float = 300.0
    max_keys: int = 10000
    dropped: int = 0
    _buckets: dict[str, TokenBucket] = field(default_factory=dict)
    _last: OrderedDict[tuple[str, str, str], float] = field(default_factory=OrderedDict)

    def duplicate(self, channel: str, pane: str, state: str, now: float) -> bool:
        at = self._last.get((channel, pane, state))
        return at is not None and now - at < self.dedupe_window

    def allow(self, channel: str, pane: str, state: str, now: float) -> bool:
        if self.duplicate(channel, pane, state, now):
            return False
        return self.allow_many(channel, [(pane, state)], now)

    def allow_many(self, channel: str, keys: list[tuple[str, str]], now: float) -> bool:
        """One message about these (pane, state)s (a grouped one takes one token)."""
        bucket = self._buckets.setdefault(channel, TokenBucket(self.per_minute / 60.0, self.burst))
        if not bucket.take(now):
            self.dropped += 1
            return False
        for pane, state in keys:
            key = (channel, pane, state)
            self._last[key] = now
            self._last.move_to_end(key)
        while len(self._last) > self.max_keys:  # bounded memory, oldest first
            self._last.popitem(last=False)
        return True
