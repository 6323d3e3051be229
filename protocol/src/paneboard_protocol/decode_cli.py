"""`paneboard decode [FILE|-] [--all]`: print the status sequences in raw pane output.

The tool a user points at a `tmux pipe-pane` log or a `script` typescript to see what
a program is reporting: one JSON object per recognised sequence, one per line, in
stream order, each with `type` and `offset`. Input is read in chunks, so a multi-GB
log streams in constant memory. Errors are one line on stderr and a non-zero exit
(1 for input problems, 2 for usage); a closed stdout (`| head`) ends quietly.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import sys
import unicodedata
from collections.abc import Callable, Sequence
from typing import BinaryIO

from paneboard_protocol.cli_args import OneLineParser
from paneboard_protocol.decoder import Decoder
from paneboard_protocol.events import Event

CHUNK = 1 << 16
PROG = "paneboard decode"


def _parser() -> argparse.ArgumentParser:
    p = OneLineParser(
        prog=PROG,
        description="Read raw terminal output (a `tmux pipe-pane` or `script` recording) and print "
        "every status report found in it as one JSON line: OSC 7501 reports, THINKTERM_AGENT "
        "variables (OSC 1337 SetUserVar), progress (OSC 9;4), window titles (OSC 0/1/2), "
        "prompt marks (OSC 133) and terminal resets.",
    )
    p.add_argument(
        "file",
        nargs="?",
        default="-",
        metavar="FILE",
        help="the recording to read ('-' or nothing: standard input)",
    )
    p.add_argument(
        "--all",
        action="store_true",
        help="also print the reports that are ignored (malformed or not allowed), each as "
        '{"type": "rejected", ...} with the reason',
    )
    return p


def _open(path: str) -> BinaryIO:
    if path == "-":
        if sys.stdin is None:
            raise OSError(9, "it is closed")
        return sys.stdin.buffer
    if os.path.isdir(path):
        raise IsADirectoryError(21, "is a directory", path)
    return open(path, "rb")


def _describe(exc: OSError, path: str) -> str:
    where = "standard input" if path == "-" else path
    return f"{PROG}: cannot read {where}: {exc.strerror or exc}"


_NON_ASCII = re.compile(r"[^\x00-\x7e]")
_UNSAFE = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn"})


def _escape(match: re.Match[str]) -> str:
    ch = match.group()
    if unicodedata.category(ch) not in _UNSAFE:
        return ch
    code = ord(ch)
    if code > 0xFFFF:
        code -= 0x10000
        return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
    return f"\\u{code:04x}"


def to_line(event: Event) -> str:
    """One NDJSON line: readable UTF-8, but every control, bidi or invisible character
    escaped as `\\uXXXX`, so untrusted text can never drive the terminal showing it."""
    text = json.dumps(event.to_json(), ensure_ascii=False)
    if not text.isascii():
        text = _NON_ASCII.sub(_escape, text)
    return text + "\n"


def _run(stream: BinaryIO, decoder: Decoder, write: Callable[[bytes], object]) -> None:
    while True:
        chunk = stream.read(CHUNK)
        if not chunk:
            break
        events = decoder.feed(chunk)
        if events:
            write("".join(map(to_line, events)).encode())
    events = decoder.close()
    if events:
        write("".join(map(to_line, events)).encode())


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    if sys.stdout is None:
        print(f"{PROG}: standard output is closed", file=sys.stderr)
        return 1
    try:
        stream = _open(args.file)
    except OSError as exc:
        print(_describe(exc, args.file), file=sys.stderr)
        return 1
    decoder = Decoder(rejections=args.all)
    try:
        with contextlib.nullcontext(stream) if args.file == "-" else stream:
            _run(stream, decoder, sys.stdout.buffer.write)
        sys.stdout.buffer.flush()
    except BrokenPipeError:
        # The reader went away (`| head`): stop quietly, and keep Python's exit-time flush
        # of the dead pipe from printing a traceback.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except OSError as exc:
        print(_describe(exc, args.file), file=sys.stderr)
        return 1
    return 0
