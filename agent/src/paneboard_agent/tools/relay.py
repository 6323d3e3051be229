"""`paneboard run [--wrap] [--] CMD [ARGS...]`: a pty relay that answers the 7501 probe.

Inside tmux a program probing for OSC 7501 (P7501-12) asks tmux, which never answers
the probe but answers the DA1 sentinel, so the program concludes "unsupported" and
stays silent (P7501-13). The relay sits between the pane and the program on a pty of
its own: every byte passes both ways unchanged, and when the program's output carries
the exact probe, the relay writes the reply (`OSC 7501 ; ?` with the query's own
terminator, P7501-10) into the program's input *before it forwards a single further
byte* of that output. The DA1 query follows the probe, so tmux cannot even see it
before the reply is queued: the reply always arrives first. The probe itself is passed
on (tmux ignores it and logs `unknown '7501'`), so the collector sees it too.

The rest is what a good `script`-style wrapper owes its user: the outer terminal is in
raw mode while running and restored on every exit path; window size is copied on
SIGWINCH and on resume; Ctrl-C and Ctrl-Z are plain bytes through raw mode, so the
program's own line discipline turns them into signals exactly as without the relay;
SIGTERM/SIGHUP/SIGUSR* are forwarded to the program, SIGINT/SIGQUIT to its foreground
process group; when the program stops (Ctrl-Z on a program without a job-control
shell) the relay restores the terminal and stops too, and on SIGCONT re-enters raw
mode, resyncs the size and continues the program. The program's exit status is ours
(128+N when signal N killed it). With stdin not a tty (pipe mode) nothing is made raw,
the pty does not echo, and end of input becomes the pty's EOF character.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import fcntl
import os
import select
import signal
import sys
import termios
import time
import tty
from typing import Any

from paneboard_protocol.cli_args import OneLineParser
from paneboard_protocol.encode import probe_reply, tmux_passthrough

from paneboard_agent.tools.proctitle import set_title
from paneboard_agent.tools.relay_child import FORWARD_TO_CHILD, FORWARD_TO_FOREGROUND, HANDLED, session_leader
from paneboard_agent.tools.relay_scan import OutputScanner
from paneboard_agent.tools.relay_state import RelayState

READ_SIZE = 65536
MAX_BATCH = 1 << 18  # program output taken per turn of the loop before it is written on
MAX_PENDING_INPUT = 1 << 20  # stop reading our stdin while this much waits for the program
DRAIN_IDLE = 0.1  # after the program exits: give up on its pty after this long without output
DRAIN_MAX = 1.0  # ... or after this long in all


def build_parser() -> OneLineParser:
    """`paneboard run`'s options, on the parser every subcommand uses. Options stop at the
    first word that is not one (or at `--`): everything from CMD on is CMD's own."""
    p = OneLineParser(
        prog="paneboard run",
        usage="paneboard run [--wrap] [--] CMD [ARGS...]",
        help_hint=False,
        allow_abbrev=False,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Run CMD (e.g. `paneboard run claude`) so that it can report its state from inside\n"
        "tmux. Programs such as Claude Code first ask the terminal whether it understands\n"
        "status reports, and tmux never answers, so they stay silent; paneboard run gives\n"
        "CMD a terminal of its own, answers that question, and passes everything else\n"
        "through unchanged in both directions.",
        epilog="Exit status: CMD's own, 128+N if signal N killed it, 127 if CMD was not found,\n"
        "126 if it could not be executed.",
    )
    p.add_argument(
        "--wrap",
        action="store_true",
        help="also pass CMD's status reports on to the terminal outside tmux "
        "(needs tmux's allow-passthrough option on)",
    )
    p.add_argument(
        "command",
        nargs=argparse.REMAINDER,
        metavar="CMD [ARGS...]",
        help="the program to run, and its arguments",
    )
    return p


def parse_args(argv: list[str]) -> tuple[bool, list[str]]:
    """(wrap, command); a usage error or `--help` exits as every subcommand's does."""
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        parser.error(f"unknown option {unknown[0]!r} (put the command after --)")
    command: list[str] = args.command
    if command[:1] == ["--"]:  # argparse leaves the `--` that ended the options in place
        command = command[1:]
    if not command:
        parser.error("no command given")
    return args.wrap, command


def _get_winsize(fd: int) -> bytes | None:
    try:
        return fcntl.ioctl(fd, termios.TIOCGWINSZ, b"\0" * 8)
    except OSError:
        return None


def _exit_code(status: int) -> int:
    code = os.waitstatus_to_exitcode(status)
    return 128 - code if code < 0 else code


class Relay:
    """One run: spawn the program on a fresh pty and relay until it has exited."""

    def __init__(self, command: list[str], wrap: bool = False, stdin: int = 0, stdout: int = 1) -> None:
        self.command = command
        self.wrap = wrap
        self.stdin = stdin
        self.stdout = stdout
        self.stdin_tty = os.isatty(stdin)
        self.size_fd = next((fd for fd in (stdin, stdout, 2) if os.isatty(fd)), None)
        self.saved: list | None = None  # the outer terminal's modes from before raw mode
        self.raw_held = False  # we have put the outer terminal in raw mode and owe it a restore
        self.state = RelayState.from_env()  # the pane's state options, for late collectors
        self.scanner = OutputScanner(reports=wrap or self.state is not None)
        self.to_child = bytearray()
        self.master = -1
        self.pid = -1  # the session leader we forked
        self.program = -1  # the program, its child, in a process group of its own
        self.status: int | None = None
        self.stdin_open = True
        self.stdout_open = True
        self.last_input_byte = b"\n"
        self.previous: dict[int, Any] = {}  # signal handlers as they were before the relay
        self.expected_echoes = 0  # replies we wrote that the pty will echo back verbatim

    # -- the outer terminal ---------------------------------------------------------------
    def _foreground(self) -> bool:
        """Is our process group the terminal's foreground job? (Only then may we touch it.)"""
        try:
            return os.tcgetpgrp(self.stdin) == os.getpgrp()
        except OSError:  # not our controlling terminal: no job control, so it is ours to use
            return True

    def _enter_raw(self) -> None:
        """Raw mode, if we hold the terminal: in the background (`bg`, `&`) we leave it
        alone, since touching it would only get us stopped by SIGTTOU."""
        if not self.stdin_tty or self.raw_held or not self._foreground():
            return
        try:
            if self.saved is None:
                self.saved = termios.tcgetattr(self.stdin)
            tty.setraw(self.stdin, termios.TCSANOW)
            self.raw_held = True
        except termios.error:
            pass

    def _restore(self) -> None:
        if self.saved is not None and self.raw_held:
            self.raw_held = False
            with contextlib.suppress(termios.error):
                termios.tcsetattr(self.stdin, termios.TCSADRAIN, self.saved)

    def _sync_size(self) -> None:
        if self.size_fd is None or self.master < 0:
            return
        size = _get_winsize(self.size_fd)
        if size is not None:
            with contextlib.suppress(OSError):
                fcntl.ioctl(self.master, termios.TIOCSWINSZ, size)

    # -- the program ------------------------------------------------------------------------
    def _spawn(self) -> int | None:
        """Fork and exec; return None when running, or the exit status to give up with."""
        master, slave = os.openpty()
        if self.stdin_tty:
            with contextlib.suppress(termios.error):
                termios.tcsetattr(slave, termios.TCSANOW, termios.tcgetattr(self.stdin))
        else:  # pipe mode: input comes from a pipe, echoing it back would duplicate it
            attrs = termios.tcgetattr(slave)
            attrs[3] &= ~(termios.ECHO | termios.ECHONL)
            termios.tcsetattr(slave, termios.TCSANOW, attrs)
        size = _get_winsize(self.size_fd) if self.size_fd is not None else None
        if size is not None:
            fcntl.ioctl(slave, termios.TIOCSWINSZ, size)
        err_r, err_w = os.pipe()  # close-on-exec: EOF means exec succeeded
        pid = os.fork()
        if pid == 0:  # pragma: no cover - runs in the child
            try:
                os.close(master)
                os.close(err_r)
                session_leader(self.command, self.previous, slave, err_w)
            finally:
                os._exit(127)
        os.close(slave)
        os.close(err_w)
        with os.fdopen(err_r, "rb") as f:
            messages = f.read().decode("ascii", "replace")
        program, err = pid, None
        for msg in messages.split(";"):
            if msg.startswith("P"):
                program = int(msg[1:])
            elif msg.startswith("E"):
                err = int(msg[1:] or 0)
        if err is not None:
            os.waitpid(pid, 0)
            os.close(master)
            reason = os.strerror(err) if err else "exec failed"
            print(f"paneboard run: cannot run {self.command[0]!r}: {reason}", file=sys.stderr)
            return 127 if err == errno.ENOENT else 126
        os.set_blocking(master, False)
        self.master, self.pid, self.program = master, pid, program
        return None

    def _foreground_group(self) -> int:
        try:
            pgrp = os.tcgetpgrp(self.master)
        except OSError:
            pgrp = -1
        return pgrp if pgrp > 0 else self.program

    def _signal_child(self, sig: int, group: bool) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            if group:
                os.killpg(self._foreground_group(), sig)
            else:
                os.kill(self.program, sig)

    def _reap(self) -> None:
        """Collect the program's exit, or follow it into a stop."""
        while self.status is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG | os.WUNTRACED)
            except ChildProcessError:
                self.status = 0
                return
            if pid == 0:
                return
            if os.WIFSTOPPED(status):
                self._stop_self()
            else:
                self.status = status

    def _stop_self(self) -> None:
        """The program stopped (Ctrl-Z): give the terminal back and stop like it did."""
        self._restore()
        signal.signal(signal.SIGTSTP, signal.SIG_DFL)
        try:
            os.kill(os.getpid(), signal.SIGTSTP)  # we stop here until SIGCONT
        finally:
            signal.signal(signal.SIGTSTP, _noop)
        self._resume()

    def _resume(self) -> None:
        """After SIGCONT (`fg` or `bg`): continue the program; raw mode only in front."""
        self._enter_raw()
        self._sync_size()
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGCONT)  # the leader continues the program itself

    def _on_signal(self, sig: int) -> None:
        if sig == signal.SIGCHLD:
            self._reap()
        elif sig == signal.SIGWINCH:
            self._sync_size()
        elif sig == signal.SIGCONT:
            self._resume()
        elif sig == signal.SIGTSTP:
            # Someone stopped *us*: stop the program as the terminal would; when it
            # reports stopped, _reap follows it into the stop.
            self._signal_child(signal.SIGTSTP, group=True)
        elif sig in FORWARD_TO_FOREGROUND:
            self._signal_child(sig, group=True)
        elif sig in FORWARD_TO_CHILD:
            self._signal_child(sig, group=False)

    # -- bytes --------------------------------------------------------------------------------
    def _write_out(self, data: bytes) -> None:
        if not self.stdout_open or not data:
            return
        view = memoryview(data)
        while view:
            try:
                n = os.write(self.stdout, view)
                view = view[n:]
            except BlockingIOError:
                select.select([], [self.stdout], [], 1.0)
            except OSError:  # the outer terminal is gone: keep draining, drop output
                self.stdout_open = False
                return

    def _flush_input(self) -> None:
        while self.to_child:
            try:
                n = os.write(self.master, self.to_child)
            except BlockingIOError:
                return
            except OSError:
                self.to_child.clear()
                return
            del self.to_child[:n]

    def _on_output(self, chunk: bytes) -> None:
        pos = 0
        for found in self.scanner.feed(chunk):
            if found.kind == "probe" and self.expected_echoes:
                # Our own reply, echoed back by a pty with ECHO on and ECHOCTL off:
                # answering it would start an endless probe/reply loop.
                self.expected_echoes -= 1
                self._write_out(chunk[pos : found.end])
            elif found.kind == "probe":
                # The reply goes to the program first; only then do we forward the probe
                # and whatever follows it (the DA1 query tmux will answer).
                self.to_child += probe_reply(found.terminator)
                if self._echoes_verbatim():
                    self.expected_echoes += 1
                self._flush_input()
                self._write_out(chunk[pos : found.end])
            else:
                self._write_out(chunk[pos : found.end])
                if self.wrap:
                    self._write_out(tmux_passthrough(found.seq))
                if self.state is not None:
                    self.state.feed(found.seq)
            pos = found.end
        self._write_out(chunk[pos:])

    def _echoes_verbatim(self) -> bool:
        """Will the program's pty echo our reply back as the same bytes (ECHO without ECHOCTL)?"""
        try:
            lflag = termios.tcgetattr(self.master)[3]
        except termios.error:
            return False
        return bool(lflag & termios.ECHO) and not lflag & termios.ECHOCTL

    def _read_output(self) -> tuple[bytes, bool]:
        """Read what the program has written, up to MAX_BATCH; return (bytes, still open).

        The pty hands over a few KiB per read; taking everything already there before
        writing it on costs no latency (the reads never wait) and makes bulk output
        several times cheaper per byte.
        """
        parts: list[bytes] = []
        total = 0
        while total < MAX_BATCH:
            try:
                chunk = os.read(self.master, READ_SIZE)
            except BlockingIOError:
                break
            except OSError:  # EIO: every holder of the program's side has closed it
                return b"".join(parts), False
            if not chunk:
                return b"".join(parts), False
            parts.append(chunk)
            total += len(chunk)
        return b"".join(parts), True

    def _on_stdin_eof(self) -> None:
        self.stdin_open = False
        if self.stdin_tty:
            return  # the terminal hung up; SIGHUP (forwarded) tells the program
        try:
            attrs = termios.tcgetattr(self.master)
        except termios.error:
            return
        if attrs[3] & termios.ICANON:
            eof = attrs[6][termios.VEOF]
            # A pending partial line needs one EOF to be delivered and one more to read as EOF.
            self.to_child += eof if self.last_input_byte in (b"\n", b"\r") else eof + eof

    def _loop(self, wake: int) -> None:
        master_open = True
        drain_until: float | None = None
        while True:
            rlist = [wake]
            if master_open:
                rlist.append(self.master)
                reading = not self.stdin_tty or self.raw_held or self._foreground()
                if self.stdin_open and reading and len(self.to_child) < MAX_PENDING_INPUT:
                    rlist.append(self.stdin)
            wlist = [self.master] if self.to_child and master_open else []
            timeout = None
            if self.status is not None:
                # The program has exited: take what it wrote before exiting, but do not
                # wait forever for a background process that keeps the pty open.
                now = time.monotonic()
                if drain_until is None:
                    drain_until = now + DRAIN_MAX
                timeout = max(0.0, min(DRAIN_IDLE, drain_until - now))
            if self.state is not None and (due := self.state.poll()) is not None:
                timeout = due if timeout is None else min(timeout, due)
            r, w, _ = select.select(rlist, wlist, [], timeout)
            if wake in r:
                with contextlib.suppress(BlockingIOError):
                    for sig in os.read(wake, 256):
                        self._on_signal(sig)
            if self.master in r:
                chunk, master_open = self._read_output()
                if chunk:
                    self._on_output(chunk)
                if not master_open:
                    self._reap()
            if self.stdin in r:
                try:
                    data = os.read(self.stdin, READ_SIZE)
                except BlockingIOError:
                    data = None
                except OSError:
                    data = b""
                if data == b"":
                    self._on_stdin_eof()
                elif data:
                    self.to_child += data
                    self.last_input_byte = data[-1:]
            if self.to_child and master_open:
                self._flush_input()
            if self.status is not None:
                if not master_open or not (r or w):
                    return
                if drain_until is not None and time.monotonic() >= drain_until:
                    return

    def run(self) -> int:
        wake_r, wake_w = os.pipe()
        os.set_blocking(wake_r, False)
        os.set_blocking(wake_w, False)
        previous = self.previous = {sig: signal.signal(sig, _noop) for sig in HANDLED}
        old_wakeup = signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
        saved_env = {k: os.environ.get(k) for k in (self.state.child_env() if self.state else {})}
        try:
            if self.state is not None:
                os.environ.update(self.state.child_env())
            failed = self._spawn()
            if failed is not None:
                return failed
            self._enter_raw()
            self._reap()  # it may already have exited
            self._loop(wake_r)
            return _exit_code(self.status or 0)
        finally:
            self._restore()
            for key, value in saved_env.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
            if self.state is not None:
                self.state.close()
            signal.set_wakeup_fd(old_wakeup)
            for sig, handler in previous.items():
                signal.signal(sig, handler if handler is not None else signal.SIG_DFL)
            for fd in (wake_r, wake_w, self.master):
                if fd >= 0:
                    with contextlib.suppress(OSError):
                        os.close(fd)


def _noop(signum: int, frame: object) -> None:
    """A Python-level handler, so the C handler writes the signal to the wakeup pipe."""


def main(argv: list[str]) -> int:
    wrap, command = parse_args(argv)
    set_title(command)  # tmux and ps name the program, not `python` (proctitle.py)
    try:
        return Relay(command, wrap=wrap).run()
    except OSError as exc:
        print(f"paneboard run: {exc.strerror or exc}", file=sys.stderr)
        return 1
    except Exception as exc:  # a bug of ours: the terminal is already restored (finally)
        print(f"paneboard run: internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
