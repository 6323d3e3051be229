"""The program bench/answers.py answers: a Claude-Code-like permission prompt that logs
when each key arrives (`time.time()` right after reading it, one line per key, to the
file named by argv[1]) and redraws a new round at once, so every round has a new
screen (a new fingerprint). `m` prints a marker line (for the screen-update delay)."""

from __future__ import annotations

import os
import sys
import termios
import time
import tty


def main() -> None:
    log = open(sys.argv[1], "a", buffering=1)  # noqa: SIM115 - lives as long as the program
    out = sys.stdout
    tty.setcbreak(0)
    rnd = 0
    marks = 0

    def draw() -> None:
        out.write(
            f"\x1b[H\x1b[2J● Bash(round {rnd})\r\n\r\n Do you want to proceed?\r\n ❯ 1. Yes\r\n   2. No\r\n"
            f"\r\n Esc to cancel · Tab to amend\r\n"
        )
        out.flush()

    time.sleep(1.5)  # named `claude` by the collector's poll before the first prompt
    draw()
    try:
        while True:
            key = os.read(0, 1)
            t = time.time()
            if key == b"1":
                log.write(f"key {rnd} {t}\n")
                rnd += 1
                draw()
            elif key == b"m":
                marks += 1
                out.write(f"\x1b[7;1HMARK {marks}\x1b[K")
                out.flush()
                log.write(f"mark {marks} {time.time()}\n")
    finally:
        termios.tcsetattr(0, termios.TCSADRAIN, termios.tcgetattr(0))


if __name__ == "__main__":
    main()
