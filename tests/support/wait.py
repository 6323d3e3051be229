"""The suite's one poller: wait until a condition holds, or fail saying what was awaited.

Real tmux, sshd, servers and browsers answer in their own time, so tests poll rather
than sleep. One function, so every area waits (and times out) the same way.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_for(
    pred: Callable[[], T], timeout: float = 20.0, what: str = "condition", *, interval: float = 0.05
) -> T:
    """Poll `pred` until it returns something truthy and return that; after `timeout`
    seconds raise AssertionError naming `what` (the test's failure message)."""
    deadline = time.monotonic() + timeout
    while True:
        value = pred()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g}s waiting for {what}")
        time.sleep(interval)
