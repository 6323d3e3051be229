"""The program bench/push_delivery.py drives: each `b` it reads makes it block (an OSC
7501 `blocked` report, and Claude Code's permission prompt drawn under it, so an
operator's push can offer Yes / No), each `w` makes it work again. It logs the moment
it wrote each block (`time.time()` right after the write, one line per block, to the
file named by argv[1]): where a push's delay is measured from."""

from __future__ import annotations

import os
import sys
import termios
import time
import tty

from paneboard_protocol.encode import encode_report

PROMPT = (
    "\x1b[H\x1b[2J● Bash(rm -rf build/ # round {n})\r\n\r\n Do you want to proceed?\r\n ❯ 1. Yes\r\n"
    "   2. No\r\n\r\n Esc to cancel · Tab to amend\r\n"
)


def main() -> None:
    log = open(sys.argv[1], "a", buffering=1)  # noqa: SIM115 - lives as long as the program
    out = sys.stdout.buffer
    saved = termios.tcgetattr(0)
    tty.setcbreak(0)
    log.write(f"ready 0 {time.time()}\n")  # keys sent before this would wait for a newline
    n = 0
    try:
        while True:
            key = os.read(0, 1)
            if key == b"b":
                n += 1
                report = encode_report("blocked", app="claude", kind="permission", msg=f"round {n}")
                out.write(report + PROMPT.format(n=n).encode())
                out.flush()
                log.write(f"blocked {n} {time.time()}\n")
            elif key == b"w":
                out.write(encode_report("working", app="claude") + b"\x1b[H\x1b[2J\xe2\x9c\xbb Working\r\n")
                out.flush()
    finally:
        termios.tcsetattr(0, termios.TCSADRAIN, saved)


if __name__ == "__main__":
    main()
