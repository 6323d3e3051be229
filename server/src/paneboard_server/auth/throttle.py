"""Back-off for wrong passwords, per account and per client address (and, with the
same `Backoff`, for collector tokens whose messages the server refuses: ingest's).

Each key (an account name, an address) gets `free` wrong passwords; after that every
further wrong one doubles how long the key must wait before the next attempt
(1 s, 2 s, 4 s ... up to `max_delay`). While a key waits, a login is answered
429 with `Retry-After` without checking the password at all, so a guesser costs the
server nothing and learns nothing. A right password clears the account's and the
address's count. Memory is bounded: at most `max_keys` keys are remembered, the ones
idle longest are forgotten first, and a key idle for `forget` seconds is dropped.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass


@dataclass
class _Entry:
    failures: int = 0
    until: float = 0.0  # no attempt accepted before this time
    last: float = 0.0


class Backoff:
    def __init__(self, free: int, max_delay: float, max_keys: int = 10000, forget: float = 3600.0) -> None:
        self.free = free
        self.max_delay = max_delay
        self.max_keys = max_keys
        self.forget = forget
        self._keys: OrderedDict[str, _Entry] = OrderedDict()

    def wait(self, key: str, now: float) -> float:
        """Seconds `key` must still wait (0: it may try now)."""
        e = self._keys.get(key)
        if e is None:
            return 0.0
        if now - e.last > self.forget:
            del self._keys[key]
            return 0.0
        return max(0.0, e.until - now)

    def failed(self, key: str, now: float) -> float:
        """Count a wrong password; returns the delay it starts (0 while still free)."""
        e = self._keys.pop(key, None) or _Entry()
        if now - e.last > self.forget:
            e = _Entry()
        e.failures += 1
        e.last = now
        over = e.failures - self.free
        delay = 0.0 if over <= 0 else min(self.max_delay, 2.0 ** (over - 1))
        e.until = now + delay
        self._keys[key] = e
        while len(self._keys) > self.max_keys:
            self._keys.popitem(last=False)
        return delay

    def failures(self, key: str, now: float) -> int:
        """Failures counted for `key` since it was last forgotten or cleared."""
        e = self._keys.get(key)
        return 0 if e is None or now - e.last > self.forget else e.failures

    def succeeded(self, key: str) -> None:
        self._keys.pop(key, None)


class LoginThrottle:
    """The two back-offs a login consults: the account's and the client address's."""

    def __init__(self, account_free: int, address_free: int, max_delay: float) -> None:
        self.accounts = Backoff(account_free, max_delay)
        self.addresses = Backoff(address_free, max_delay)

    def retry_after(self, name: str, address: str, now: float) -> int:
        """Whole seconds to wait before this attempt may be checked (0: check it)."""
        wait = max(self.accounts.wait(name.casefold(), now), self.addresses.wait(address, now))
        return math.ceil(wait) if wait > 0 else 0

    def failed(self, name: str, address: str, now: float) -> float:
        return max(self.accounts.failed(name.casefold(), now), self.addresses.failed(address, now))

    def succeeded(self, name: str, address: str) -> None:
        self.accounts.succeeded(name.casefold())
        self.addresses.succeeded(address)
