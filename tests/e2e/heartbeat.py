"""A program for a tmux pane that re-sends its state, as agents do (TA-14).

    python3 heartbeat.py STATEFILE [INTERVAL]

Every INTERVAL seconds (default 0.3) it reads `STATE MSG` from STATEFILE and writes
that as an OSC 7501 report. Output written while nobody watched the pane (an sshd or
collector outage) is lost by design; a program like this one is how a pane's current
state reaches the board again afterwards. Tests change the state by rewriting the file.
"""

from __future__ import annotations

import base64
import os
import sys
import time


def main() -> int:
    path = sys.argv[1]
    interval = float(sys.argv[2]) if len(sys.argv) > 2 else 0.3
    while True:
        try:
            with open(path) as f:
                state, _, msg = f.read().strip().partition(" ")
        except OSError:
            state, msg = "", ""
        if state:
            b64 = base64.b64encode(msg.encode()).decode()
            os.write(1, f"\x1b]7501;state={state}:app=beat:msg={b64}\x1b\\".encode())
        time.sleep(interval)


if __name__ == "__main__":
    sys.exit(main())
