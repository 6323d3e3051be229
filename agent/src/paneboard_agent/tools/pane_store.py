"""Writing a pane's state options (see `pane_state`) through the pane's own tmux.

`paneboard run` and `paneboard emit` run inside the pane; `$TMUX` names its tmux server's
socket and `$TMUX_PANE` the pane, so `tmux -S <socket> set-option -p -t <pane> @… value`
stores the state where the collector watching that server finds it. Nothing is written
when either variable is missing (not in tmux), and a failing tmux never fails the
report itself: the options are a convenience for late collectors, the bytes in the
pane stay the report.

`OptionWriter` is the relay's: it never blocks the relay's byte loop (one tmux
process at a time, started without waiting, polled by the loop; a change made while
one runs is written by the next, and at most one start per `MIN_SPACING`: a burst of
reports costs at most two processes, and a program reporting all the time four a second).
"""

from __future__ import annotations

import contextlib
import os
import stat
import subprocess
import time
from collections.abc import Mapping

from paneboard_protocol.decoder import Decoder
from paneboard_protocol.events import ClearReport, StatusReport
from paneboard_protocol.pane_state import (
    MAX_7501_VALUE,
    MAX_AGENT_VALUE,
    OPTION_7501,
    OPTION_AGENT,
    LiveState,
    parse_7501,
)

#: seconds a tmux command may take before it is given up on
TMUX_TIMEOUT = 2.0
#: the relay starts at most one tmux per this many seconds (each write is a tmux
#: process, and a program that reports its progress many times a second would pay one
#: per report)
MIN_SPACING = 0.25
#: set in the relay's program's environment to the pane it keeps the options of, so a
#: `paneboard emit` run behind the relay leaves them to it (the relay sees its report too)
RELAY_ENV = "PANEBOARD_RELAY_PANE"


def pane_target(environ: Mapping[str, str] | None = None) -> tuple[list[str], str] | None:
    """(tmux argv prefix, pane id) of the pane we run in, or None outside tmux."""
    env = os.environ if environ is None else environ
    tmux, pane = env.get("TMUX", ""), env.get("TMUX_PANE", "")
    socket = tmux.rsplit(",", 2)[0] if tmux.count(",") >= 2 else ""
    if not socket or not pane.startswith("%") or not pane[1:].isdigit():
        return None
    return ["tmux", "-S", socket], pane


def set_argv(base: list[str], pane: str, values: Mapping[str, str | None]) -> list[str]:
    """One tmux invocation that sets (or, for None, unsets) every option given."""
    argv = list(base)
    for i, (option, value) in enumerate(values.items()):
        if i:
            argv.append(";")
        if value is None:
            argv += ["set-option", "-p", "-u", "-t", pane, option]
        else:
            argv += ["set-option", "-p", "-t", pane, option, value]
    return argv


def read_now(base: list[str], pane: str) -> dict[str, str | None]:
    """The two options' current values and the pane's tty (None: unset or unreadable); for `emit`."""
    fmt = (
        f"#{{={MAX_7501_VALUE + 1}:{OPTION_7501}}}\t#{{={MAX_AGENT_VALUE + 1}:{OPTION_AGENT}}}\t#{{pane_tty}}"
    )
    nothing: dict[str, str | None] = {OPTION_7501: None, OPTION_AGENT: None, "tty": None}
    try:
        res = subprocess.run(
            [*base, "display-message", "-p", "-t", pane, fmt],
            capture_output=True,
            timeout=TMUX_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return nothing
    parts = res.stdout.decode("utf-8", "replace").rstrip("\n").split("\t")
    if res.returncode != 0 or len(parts) != 3:
        return nothing  # garbage (a tab or newline in a value) is replaced, never merged
    return {OPTION_7501: parts[0] or None, OPTION_AGENT: parts[1] or None, "tty": parts[2] or None}


def _same_terminal(path: str, pane_tty: str | None) -> bool:
    """Is `path` (a --tty or $PANEBOARD_TTY) the pane's own terminal?"""
    if not pane_tty:
        return False
    try:
        mine, theirs = os.stat(path), os.stat(pane_tty)
    except OSError:
        return False
    return stat.S_ISCHR(mine.st_mode) and mine.st_rdev == theirs.st_rdev


def write_now(base: list[str], pane: str, values: Mapping[str, str | None]) -> bool:
    """Set the options and wait for tmux (a short-lived `emit` has nothing else to do)."""
    if not values:
        return True
    try:
        res = subprocess.run(
            set_argv(base, pane, values),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=TMUX_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return res.returncode == 0


class OptionWriter:
    """The relay's writer: `want(values)` then `poll()` from its loop; `close()` at exit."""

    def __init__(self, base: list[str], pane: str) -> None:
        self.base = base
        self.pane = pane
        self.pending: dict[str, str | None] = {}
        self.proc: subprocess.Popen[bytes] | None = None
        self.failed = False  # tmux could not be run at all: stop trying
        self.started = -MIN_SPACING  # monotonic time of the last start

    def want(self, values: Mapping[str, str | None]) -> None:
        self.pending.update(values)
        self.poll()

    def poll(self) -> None:
        """Reap a finished tmux; start the next one if something changed meanwhile."""
        if self.proc is not None:
            if self.proc.poll() is None:
                return
            self.proc = None
        if not self.pending or self.failed or self.due() is not None:
            return
        values, self.pending = self.pending, {}
        self.started = time.monotonic()
        try:
            self.proc = subprocess.Popen(
                set_argv(self.base, self.pane, values),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                close_fds=True,
                start_new_session=True,  # never in the pane's foreground group, never signalled with it
            )
        except OSError:
            self.failed = True

    def due(self) -> float | None:
        """Seconds until a pending change may start its tmux (None: nothing waits on time).

        The relay's loop sleeps at most this long; a running tmux wakes it by its SIGCHLD."""
        if not self.pending or self.failed or self.proc is not None:
            return None
        wait = self.started + MIN_SPACING - time.monotonic()
        return wait if wait > 0 else None

    def close(self, final: Mapping[str, str | None] | None = None) -> None:
        """Wait for what is in flight, then write `final` (and anything pending) once."""
        if self.proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=TMUX_TIMEOUT)
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            self.proc = None
        self.pending.update(final or {})
        if self.pending and not self.failed:
            write_now(self.base, self.pane, self.pending)
        self.pending = {}


def writer_group(fd: int, waits: bool = False) -> int | None:
    """The foreground process group a report written on `fd` belongs to (what the collector
    compares with the pane's, RI-2). A reporter typed at the prompt leads that group
    itself for a moment; its report is filed under the shell (`panes.observe`), so the
    shell, the terminal's session leader, is named instead. One that `waits` in front
    while its report stands (`paneboard ask`) is a program of its own to the collector,
    and its group is named: once it has gone, so has its report."""
    try:
        pg = os.tcgetpgrp(fd)
    except OSError:
        return None
    if pg == os.getpid() and not waits:
        with contextlib.suppress(OSError):
            return os.getsid(0)
        return None
    return pg if pg > 0 else None


def remember(
    data: bytes,
    fd: int,
    tty: str | None = None,
    environ: Mapping[str, str] | None = None,
    *,
    waits: bool = False,
) -> bool:
    """`paneboard emit`'s and `paneboard ask`'s part: fold the report just written into the
    pane's options (`waits`: the writer stays in front, see `writer_group`).

    Only for a report written to this tmux pane's terminal (`tty` is where it went when
    not /dev/tty: written elsewhere, it is none of this pane's state), and not behind
    `paneboard run` (the relay saw the report and keeps the options itself). Read,
    change, write: two short tmux commands. Returns whether the options were written."""
    env = os.environ if environ is None else environ
    target = pane_target(env)
    if target is None:
        return False
    base, pane = target
    if env.get(RELAY_ENV) == pane:
        return False
    events = Decoder().feed(data)
    changed = {OPTION_7501 if isinstance(e, (StatusReport, ClearReport)) else OPTION_AGENT for e in events}
    if not changed:
        return False
    current = read_now(base, pane)
    if tty is not None and tty != "/dev/tty" and not _same_terminal(tty, current["tty"]):
        return False
    live = LiveState(writer_group(fd, waits))
    if OPTION_7501 in changed:
        live.adopt(parse_7501(current[OPTION_7501]), OPTION_7501)
    live.apply(events)
    return write_now(base, pane, {o: live.value(o) for o in sorted(changed)})
