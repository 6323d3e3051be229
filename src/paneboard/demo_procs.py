"""The processes `paneboard demo` starts: recorded whatever signal comes, found from
/proc, and seen gone.

A stop signal (Ctrl-C, SIGTERM, SIGHUP) ends the demo by raising KeyboardInterrupt
wherever it is. Raised inside `subprocess.Popen` after the fork, it would lose a child
that runs on in a session of its own, never to be stopped; so `STOP.held()` puts the
signal off until the child is recorded.

The demo's children are not all its children: the tmux server daemonises (its parent is
init, not the demo), the programs in its panes are the server's children, and the one
behind `paneboard run` sits in a session of the relay's own. Killing the tmux server
only hangs their terminals up; whether they then exit is up to them. So before it stops
anything the demo records each tree it owns (the tmux server's, the serve's and the
collector's), and afterwards waits until every recorded process has ended, killing what
is left, before it says that nothing is.

A process is named by its pid *and* its start time, so a pid the kernel hands to an
unrelated process after ours ended is never waited for, or killed. Without /proc (not
Linux) the trees are empty and the demo does what it did before: kill and wait for its
direct children.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from types import FrameType

PROC = Path("/proc")

#: (pid, start time in clock ticks since boot): one process, never its pid's successor.
Proc = tuple[int, int]


def _stat(pid: int) -> tuple[int, str, int] | None:
    """(parent pid, state letter, start time) of a live pid, from /proc/PID/stat; None if gone.

    The command name (field 2) is in parentheses and may hold spaces and ')', so the
    fields are read after its last ')'.
    """
    try:
        raw = (PROC / str(pid) / "stat").read_bytes()
    except OSError:
        return None
    fields = raw[raw.rfind(b")") + 2 :].split()
    try:
        return int(fields[1]), fields[0].decode("ascii", "replace"), int(fields[19])
    except (IndexError, ValueError):
        return None


def identify(pid: int) -> Proc | None:
    """The process `pid` is now, or None if there is none."""
    stat = _stat(pid)
    return None if stat is None else (pid, stat[2])


def tree(root: int) -> set[Proc]:
    """`root` and every process descended from it, as they are now."""
    parents: dict[int, list[int]] = {}
    with contextlib.suppress(OSError):
        for entry in PROC.iterdir():
            if not entry.name.isdigit():
                continue
            stat = _stat(int(entry.name))
            if stat is not None:
                parents.setdefault(stat[0], []).append(int(entry.name))
    found: set[Proc] = set()
    todo = [root]
    while todo:
        pid = todo.pop()
        proc = identify(pid)
        if proc is None or proc in found:
            continue
        found.add(proc)
        todo.extend(parents.get(pid, ()))
    return found


def alive(proc: Proc) -> bool:
    """Whether this very process still runs (a zombie has ended: only its exit status is left)."""
    stat = _stat(proc[0])
    return stat is not None and stat[2] == proc[1] and stat[1] not in {"Z", "X"}


def signal_all(procs: Iterable[Proc], sig: int) -> None:
    for proc in procs:
        if alive(proc):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(proc[0], sig)


def wait_gone(procs: Iterable[Proc], timeout: float) -> set[Proc]:
    """Wait until none of `procs` is alive or `timeout` s have passed; those still alive."""
    left = {p for p in procs if alive(p)}
    deadline = time.monotonic() + timeout
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = {p for p in left if alive(p)}
    return left


#: Signals that end the demo the way Ctrl-C does: a supervisor's stop, a closed terminal.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class StopSignals:
    """Turns the first stop signal into KeyboardInterrupt, at once or at the end of a
    `held()` block; ignores every later one, so that a second Ctrl-C (people press it
    twice; `uv run` also forwards the first) or the SIGHUP that follows it in a closing
    terminal cannot cut the clean-up short."""

    def __init__(self) -> None:
        self.holding = 0
        self.pending = False

    def install(self) -> None:
        for sig in STOP_SIGNALS:
            signal.signal(sig, self._handler)

    @staticmethod
    def ignore() -> None:
        for sig in STOP_SIGNALS:
            signal.signal(sig, signal.SIG_IGN)

    def _handler(self, signum: int, frame: FrameType | None) -> None:
        self.ignore()
        if self.holding:
            self.pending = True
            return
        raise KeyboardInterrupt

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        """A block no stop signal interrupts; one that came meanwhile is raised at its end."""
        self.holding += 1
        try:
            yield
        finally:
            self.holding -= 1
        if not self.holding and self.pending:
            self.pending = False
            raise KeyboardInterrupt


STOP = StopSignals()
