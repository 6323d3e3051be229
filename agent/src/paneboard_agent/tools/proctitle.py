"""The relay's process name: the program's, so tmux and `ps` name what runs (#13 item 4).

tmux names a pane's program from the foreground process group's leader, and on Linux
it reads `/proc/PGRP/cmdline` up to the first NUL, then keeps the first word's basename
(osdep-linux.c `osdep_get_name`, names.c `parse_window_name`): under `paneboard run`
that leader is the relay, a Python process, so windows were called `python`. The
kernel's `comm` (prctl PR_SET_NAME) is not what tmux reads; the command line is, and
only rewriting the process's own argv area changes it: `setproctitle` does that (and
sets `comm` too). Without it (not installed, or a platform it does not support) the
relay sets `comm` alone, which `ps -o comm`/`top` show; with it, `comm` is set to the
program's basename afterwards (setproctitle would leave a path's first 15 bytes).

The collector then sees the program's own command line for the relay, the same as
without it, so identity (RI-1) names the agent by the same rule either way.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
from collections.abc import Sequence

#: prctl(2) option that sets the calling thread's `comm` (at most 15 bytes are kept)
PR_SET_NAME = 15
#: the title is cut here: a command line of megabytes is not a process name
MAX_TITLE = 4096


def title_for(command: Sequence[str]) -> str:
    """The program's command line as the relay's title (NUL-free, bounded)."""
    title = " ".join(a.replace("\0", "") for a in command)
    return title[:MAX_TITLE]


def set_title(command: Sequence[str]) -> bool:
    """Name this process after `command`. True when the command line itself changed."""
    title = title_for(command)
    if not title:
        return False
    try:
        import setproctitle
    except ImportError:
        setproctitle = None  # type: ignore[assignment]  # a dependency, but a build may lack it
    changed = False
    if setproctitle is not None:
        with contextlib.suppress(Exception):  # never worth failing the program over
            setproctitle.setproctitle(title)
            changed = True
    # after setproctitle, which puts the title's first 15 bytes (a path, often) there
    _set_comm(os.path.basename(command[0]) or title)
    return changed


def _set_comm(name: str) -> None:
    path = ctypes.util.find_library("c")
    if path is None:
        return
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(path, use_errno=True)
        libc.prctl(PR_SET_NAME, ctypes.c_char_p(name.encode("utf-8", "replace")[:15]), 0, 0, 0)
