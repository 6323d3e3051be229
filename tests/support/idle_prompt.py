"""A program at an idle input prompt drawn as Claude Code draws its own, for the
follow-up tests (tests/agent/test_follow_up.py): started as `claude` (`exec -a`), so the
collector identifies it by its process and reads its screen with the bundled manifest.

It switches bracketed paste on, as Claude Code does; echoes what is typed into its input
box; on Enter outside a paste it records the submission (one JSON line in the file given
as its argument: {"submitted": text}) and shows it as its last answer; Escape and C-c
are recorded as {"key": "Escape" | "C-c"}. Newlines inside a paste stay text.

With `--done` after the file, SIGUSR1 ends a turn: it reports itself done (OSC 7501, as
Claude Code's hooks would), which notifies. A signal rather than at start: a report
written before the collector has found the new pane would go unread.
"""

from __future__ import annotations

import json
import os
import select
import signal
import sys
import termios
import tty

START, END = b"\x1b[200~", b"\x1b[201~"


def draw(answer: str, box: str) -> None:
    rule = "─" * 60
    lines = [f"● {answer}", "", rule, f"❯ {box.replace(chr(13), ' ⏎ ')}", rule, "  ? for shortcuts"]
    sys.stdout.write("\x1b[2J\x1b[H" + "\r\n".join(lines))
    sys.stdout.flush()


def main() -> None:
    record = open(sys.argv[1], "a", encoding="utf-8")  # noqa: SIM115 - open for the program's life

    def note(entry: dict[str, str]) -> None:
        record.write(json.dumps(entry) + "\n")
        record.flush()

    # before the first screen: the collector may read the pane idle at once
    if sys.argv[2:] == ["--done"]:
        from paneboard_protocol.encode import encode_report

        def done(_sig: int, _frame: object) -> None:
            sys.stdout.flush()
            sys.stdout.buffer.write(encode_report("done", app="claude-code", msg="All 3 tests pass"))
            sys.stdout.buffer.flush()

        signal.signal(signal.SIGUSR1, done)
    fd = sys.stdin.fileno()
    tty.setraw(fd)
    termios.tcflush(fd, termios.TCIFLUSH)
    sys.stdout.write("\x1b[?2004h")
    answer, box, pasting, pending = "Ready. All 3 tests pass.", "", False, b""
    draw(answer, box)
    while True:
        if pending and not select.select([fd], [], [], 0.3)[0]:
            # half a marker that never went on: a lone Escape key
            note({"key": "Escape"})
            box, pending = "", pending[1:]
        else:
            pending += os.read(fd, 4096)
        while pending:
            if pending.startswith(START) or pending.startswith(END):
                pasting = pending.startswith(START)
                pending = pending[len(START) :]
            elif START.startswith(pending) or END.startswith(pending):
                break  # half a marker: wait for the rest
            elif pending[:1] == b"\x1b":
                note({"key": "Escape"})
                box, pending = "", pending[1:]
            elif pending[:1] == b"\x03":
                note({"key": "C-c"})
                box, pending = "", pending[1:]
            elif pending[:1] == b"\r" and not pasting:
                note({"submitted": box.replace("\r", "\n")})
                answer, box, pending = f"You said: {box.replace(chr(13), ' / ')}", "", pending[1:]
            else:
                cut = next(
                    (i for i, b in enumerate(pending) if b in (0x1B, 0x03) or (b == 13 and not pasting)), None
                )
                chunk, pending = (pending, b"") if cut is None else (pending[:cut], pending[cut:])
                box += chunk.decode("utf-8", "replace")
        draw(answer, box)


if __name__ == "__main__":
    main()
