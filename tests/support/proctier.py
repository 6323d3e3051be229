"""The two tiers of the suite: tests that start no process, and the rest (`proc`).

`./scripts/test --fast` runs only the first tier, for the inner loop; CI runs both. A test
is in the `proc` tier when it carries a process marker (`proc` itself, or one of tmux,
sshd, postgres, browser, realagent), or when it uses a fixture registered here with
`@spawns` (its own, or through another fixture), so most tests get the marker from the
fixtures they use and cannot forget it.

A test that is not in the `proc` tier and still starts a process fails, in both tiers:
a Python audit hook (PEP 578, the public way to observe `subprocess.Popen`, `os.fork`,
`os.posix_spawn`, `os.system`, `os.exec*`) records every start while such a test runs.
Without it a forgotten marker would make the fast tier quietly slow, or make it fail
on a machine without tmux.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import Any, TypeVar

# Markers that each mean "starts an outside program", so each implies `proc`.
PROC_MARKERS = frozenset({"proc", "tmux", "sshd", "postgres", "browser", "realagent"})

# Audit events that start a program (or a copy of this one).
_STARTS = frozenset(
    {"subprocess.Popen", "os.fork", "os.forkpty", "os.posix_spawn", "os.spawn", "os.system", "os.exec"}
)

PROC_FIXTURES: set[str] = set()

F = TypeVar("F", bound=Callable[..., Any])


def spawns(fn: F) -> F:
    """Register a fixture function as starting a process, so every test using it is `proc`.

    Put it under `@pytest.fixture`: the fixture's name is the function's name.
    """
    PROC_FIXTURES.add(fn.__name__)
    return fn


def in_proc_tier(markers: set[str], fixturenames: list[str]) -> bool:
    """Whether a test with these marker names and (transitive) fixtures may start processes."""
    return bool(markers & PROC_MARKERS) or any(name in PROC_FIXTURES for name in fixturenames)


class Guard:
    """Records process starts while armed (one unmarked test's setup, call or teardown)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._armed = False
        self._seen: list[str] = []
        sys.addaudithook(self._hook)  # audit hooks cannot be removed: one per session

    def _hook(self, event: str, args: tuple[Any, ...]) -> None:
        if event not in _STARTS or not self._armed:
            return
        what = event
        if event == "subprocess.Popen" and len(args) > 1:
            what = f"{event} {args[1]!r}"[:300]
        with self._lock:
            if len(self._seen) < 10:  # the first few say enough
                self._seen.append(what)

    def arm(self) -> None:
        with self._lock:
            self._armed, self._seen = True, []

    def disarm(self) -> list[str]:
        """Stop recording; return what was started since `arm`."""
        with self._lock:
            self._armed = False
            seen, self._seen = self._seen, []
        return seen
