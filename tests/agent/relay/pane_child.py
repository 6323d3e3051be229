"""A small program for the relay's tests to run behind `paneboard run`.

usage: pane_child.py MODE STATE_DIR
  signals  catch SIGINT/SIGTERM/SIGHUP, log the name to STATE_DIR/log, exit 40+signal
  winch    log "COLSxROWS" to STATE_DIR/log at start and on every SIGWINCH
  echo     read lines from the terminal, print "got <line>", exit 0 at end of input
  sleep    do nothing until killed
Every mode first writes STATE_DIR/ready with "PID PPID" (the parent is the relay).
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path


def log(state: Path, text: str) -> None:
    with open(state / "log", "a") as f:
        f.write(text + "\n")


def main() -> int:
    mode, state = sys.argv[1], Path(sys.argv[2])
    state.mkdir(parents=True, exist_ok=True)

    if mode == "signals":

        def on_signal(sig: int, frame: object) -> None:
            log(state, signal.Signals(sig).name)
            os._exit(40 + sig)

        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, on_signal)
    elif mode == "winch":

        def on_winch(sig: int, frame: object) -> None:
            size = os.get_terminal_size(0)
            log(state, f"{size.columns}x{size.lines}")

        signal.signal(signal.SIGWINCH, on_winch)
        on_winch(0, None)

    (state / "ready.tmp").write_text(f"{os.getpid()} {os.getppid()}")
    os.replace(state / "ready.tmp", state / "ready")

    if mode == "echo":
        for line in sys.stdin:
            print(f"got {line.rstrip()}", flush=True)
        return 0
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    sys.exit(main())
