"""What runs in the relay's child: the new session's small leader and, under it, the program.

Apart from `relay.py` because none of it runs in the relay's own process: it is the
forked side of `Relay._spawn`, which reports back over `err_w` ("P<pid>;" once the
program is forked, "E<errno>;" when it could not be executed).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import resource
import signal
import termios
from typing import Any

FORWARD_TO_CHILD = (signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2)
FORWARD_TO_FOREGROUND = (signal.SIGINT, signal.SIGQUIT)
HANDLED = (
    signal.SIGCHLD,
    signal.SIGWINCH,
    signal.SIGTSTP,
    signal.SIGCONT,
    *FORWARD_TO_CHILD,
    *FORWARD_TO_FOREGROUND,
)


def session_leader(
    command: list[str], previous: dict[int, Any], slave: int, err_w: int
) -> None:  # pragma: no cover - in the child
    """Be the new session's leader and run the program in a process group of its own.

    Why not exec the program as the session leader, as `script` does: a session
    leader's process group is orphaned, and the kernel discards Ctrl-Z's SIGTSTP
    (and a program's own `kill(0, SIGTSTP)`, which is how vim suspends) in an
    orphaned group. With this small leader as its parent the program's group is
    not orphaned, so it stops as it would in the pane; the leader then stops
    itself with SIGSTOP, which the relay sees and follows (`_reap`), and on
    SIGCONT the leader continues the program. The leader exits with the
    program's status and dies of the same signal when the program did.
    """
    signal.set_wakeup_fd(-1)
    os.setsid()
    fcntl.ioctl(slave, termios.TIOCSCTTY, 0)
    for fd in (0, 1, 2):
        os.dup2(slave, fd)
    if slave > 2:
        os.close(slave)
    restore = {}
    for sig in (*HANDLED, signal.SIGPIPE, signal.SIGXFSZ):
        ignored = previous.get(sig) == signal.SIG_IGN and sig in HANDLED
        restore[sig] = signal.SIG_IGN if ignored else signal.SIG_DFL
        signal.signal(sig, restore[sig])
    program = os.fork()
    if program == 0:
        try:
            os.setpgid(0, 0)
            signal.signal(signal.SIGTTOU, signal.SIG_IGN)
            os.tcsetpgrp(0, os.getpid())  # the program is the terminal's foreground job
            signal.signal(signal.SIGTTOU, signal.SIG_DFL)
            os.execvp(command[0], command)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.write(err_w, f"E{exc.errno or 0};".encode())
        os._exit(127)
    with contextlib.suppress(OSError):
        os.setpgid(program, program)
    with contextlib.suppress(OSError):
        os.write(err_w, f"P{program};".encode())
    os.close(err_w)
    for sig in (signal.SIGINT, signal.SIGQUIT, signal.SIGTSTP, signal.SIGTTIN, signal.SIGTTOU):
        signal.signal(sig, signal.SIG_IGN)  # the terminal's signals are the program's

    def forward(sig: int, frame: object) -> None:  # someone signalled the leader, not the relay
        with contextlib.suppress(ProcessLookupError):
            os.kill(program, sig)

    for sig in FORWARD_TO_CHILD:
        signal.signal(sig, forward)
    while True:
        try:
            _, status = os.waitpid(program, os.WUNTRACED)
        except ChildProcessError:
            os._exit(0)
        except InterruptedError:
            continue
        if os.WIFSTOPPED(status):
            os.kill(os.getpid(), signal.SIGSTOP)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(program, signal.SIGCONT)
            continue
        if os.WIFSIGNALED(status):
            killer = os.WTERMSIG(status)
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # the program already dumped
            with contextlib.suppress(OSError, ValueError):  # SIGKILL/SIGSTOP: already default
                signal.signal(killer, signal.SIG_DFL)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, [killer])
            os.kill(os.getpid(), killer)
            os._exit(128 + killer)
        os._exit(os.waitstatus_to_exitcode(status))
