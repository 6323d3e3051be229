"""`paneboard ask QUESTION`: ask the person at the terminal, and show the board it waits.

Why it exists: `paneboard emit blocked` before a shell `read` leaves the pane blocked
until something reports again, and a script that read its answer and went back to the
prompt left its card blocked for good (nothing it ran said otherwise). `ask` is the
three steps as one command that cannot forget the last: it reports `blocked` (kind
`question`) with the question, reads one line from the terminal, and then, however the
wait ends (an answer, end of input, Ctrl-C, SIGTERM or SIGHUP, a terminal that went
away), reports the state after. The answer goes to stdout, so `x=$(paneboard ask …)`
works: the question and the reading use the terminal itself (`/dev/tty`), never the
captured stdout or a redirected stdin.

Exit status: 0 answered, 1 no answer (end of input, no or a closed terminal), 2 bad
arguments, 130 Ctrl-C (128 + the signal for SIGTERM and SIGHUP).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import signal
import sys
import unicodedata
from collections.abc import Iterator
from types import FrameType

from paneboard_protocol.cli_args import OneLineParser
from paneboard_protocol.events import ReportWord
from paneboard_protocol.pane import KINDS

from paneboard_agent.tools.emit import one_line
from paneboard_agent.tools.pane_store import remember
from paneboard_agent.tools.report import ReportError, build, write_all

_Parser = functools.partial(OneLineParser, help_hint=False)

#: what the pane may say once the wait is over (`clear` removes the record instead)
AFTER_STATES: tuple[ReportWord, ...] = ("idle", "working", "done", "clear")
#: the longest answer kept, in bytes: what one line of a terminal in its usual (canonical)
#: mode holds on Linux (4095 bytes and the newline); the rest of a longer line is dropped
MAX_ANSWER = 4096
#: signals that end the wait like Ctrl-C does: the block is cleared before ask exits
STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


def _parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="paneboard ask",
        description=(
            "Ask a question at the terminal and show paneboard that you wait for the answer: reports "
            "blocked with the question, reads one line from the terminal (also when stdout is "
            "captured, as in x=$(paneboard ask 'Deploy?')), then reports the state after, whether "
            "answered or not, and prints the answer on stdout. An operator can answer it from the "
            "board where the collector takes answers, while ask waits in front. Exit status 0 "
            "answered, 1 no answer (end of input or no terminal), 2 bad arguments, 130 Ctrl-C."
        ),
    )
    p.add_argument("question", metavar="QUESTION", help="the question, shown on the terminal and the board")
    p.add_argument(
        "--kind",
        default="question",
        choices=KINDS,
        help="what the wait is for, shown on the board (default question: the only kind the board "
        "answers with free text)",
    )
    p.add_argument(
        "--after",
        default="idle",
        choices=AFTER_STATES,
        help="the state to report once the wait is over (default idle; working for a script that "
        "goes on with the answer; clear removes the report instead)",
    )
    p.add_argument(
        "--id", help="report on one part of the work, e.g. deploy/prod, instead of the whole program"
    )
    p.add_argument("--app", help="the name of the program asking, e.g. deploy-bot (shown as the agent)")
    return p


def terminal_text(text: str) -> str:
    """The question as written to the terminal: control characters other than newline and
    tab go (an escape sequence in a question, say a file name, would act on the terminal),
    so do lone surrogates (undecodable arguments)."""
    return "".join(c for c in text if c in "\n\t" or unicodedata.category(c) not in ("Cc", "Cs"))


def read_line(fd: int) -> bytes | None:
    """One line from the terminal without its line end, or None at end of input.

    A line ends at a newline, or a carriage return (a terminal in raw mode sends that for
    Enter). End of input (Ctrl-D on an empty line, a hung-up terminal) before the line
    ended is no answer, even after some text: the person did not press Enter. At most
    `MAX_ANSWER` bytes are kept."""
    kept = bytearray()
    while True:
        chunk = os.read(fd, 1024)
        if not chunk:
            return None
        ends = [i for i in (chunk.find(b"\n"), chunk.find(b"\r")) if i >= 0]
        if ends:
            kept += chunk[: min(ends)]
            return bytes(kept[:MAX_ANSWER])
        if len(kept) < MAX_ANSWER:
            kept += chunk[: MAX_ANSWER - len(kept)]


class _Stopped(Exception):
    """SIGTERM or SIGHUP arrived while waiting."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _stop(signum: int, frame: FrameType | None) -> None:
    raise _Stopped(signum)


@contextlib.contextmanager
def _stop_signals() -> Iterator[None]:
    """While waiting, SIGTERM and SIGHUP end the wait the way Ctrl-C does (the default
    action would kill ask before it reports the state after)."""
    before = {s: signal.signal(s, _stop) for s in STOP_SIGNALS}
    try:
        yield
    finally:
        for s, handler in before.items():
            signal.signal(s, handler)


@contextlib.contextmanager
def _uninterrupted() -> Iterator[None]:
    """Hold Ctrl-C, SIGTERM and SIGHUP back while the state after is written: a second
    Ctrl-C must not leave the pane blocked. They are delivered once it is written."""
    held = {signal.SIGINT, *STOP_SIGNALS}
    old = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _report(fd: int, data: bytes) -> None:
    """Write one report to the terminal and keep it in the pane's options (as `emit` does).

    `ask` waits in front of the terminal while its report stands, so a report it writes
    while it leads the foreground group is its own, not its shell's (`remember(waits=...)`)."""
    write_all(fd, data)
    remember(data, fd, waits=True)


def ask(fd: int, question: str, blocked: bytes, after: bytes) -> tuple[int, bytes | None]:
    """Ask on the terminal `fd`: (exit status, the answer or None)."""
    answer: bytes | None = None
    status = 1
    try:
        with _stop_signals():
            _report(fd, blocked)
            prompt = terminal_text(question)
            write_all(fd, (prompt if prompt[-1:].isspace() else prompt + " ").encode("utf-8"))
            answer = read_line(fd)
            status = 0 if answer is not None else 1
    except KeyboardInterrupt:
        status = 130
    except _Stopped as stop:
        status = 128 + stop.signum
    except OSError:  # the terminal went away (EIO once its pane is gone)
        status = 1
    finally:
        with _uninterrupted(), contextlib.suppress(OSError):
            if answer is None:
                write_all(fd, b"\r\n")  # the next output starts on a line of its own
            _report(fd, after)
    return status, answer


def open_terminal() -> int:
    """The controlling terminal, for reading and writing. No fallback to another process's
    terminal (as `emit` has): reading from a terminal that is not ours would take input
    meant for someone else's program."""
    try:
        return os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        raise ReportError("no terminal to ask on (ask reads the answer from the terminal)") from None


def main(argv: list[str]) -> int:
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    msg = one_line(args.question)
    if not msg:
        print("paneboard ask: the question is empty", file=sys.stderr)
        return 2
    try:
        blocked = build("blocked", kind=args.kind, msg=msg, id=args.id, app=args.app)
        after = build(args.after, id=args.id, app=None if args.after == "clear" else args.app)
    except ValueError as exc:
        print(f"paneboard ask: {exc}", file=sys.stderr)
        return 2
    try:
        fd = open_terminal()
    except ReportError as exc:
        print(f"paneboard ask: {exc}", file=sys.stderr)
        return 1
    try:
        status, answer = ask(fd, args.question, blocked, after)
    finally:
        os.close(fd)
    if answer is not None:
        sys.stdout.buffer.write(answer + b"\n")
        sys.stdout.flush()
    return status
