"""A program for a tmux pane that changes state when told to, and says when it did.

    python3 paced.py MODE FIFO LOG

It reads lines `SEQ STATE` from FIFO; for each it writes, to its terminal, either an
OSC 7501 report (MODE `report`: state=STATE, msg=`mSEQx`) or a Codex-like screen
(MODE `screen`: no report at all, only what the bundled codex screen rules read),
then appends `SEQ <time.time() just before the write>` to LOG. The benchmark and the
flood test compare that instant with when the change shows up further down the path.
MODE `screen` names itself `codex` (argv[0] is set by `exec -a`; comm here).
"""

from __future__ import annotations

import base64
import contextlib
import ctypes
import os
import sys
import time

WORKING = (
    "• Working ({n}s • esc to interrupt)\r\n\r\n› Use /skills to list skills\r\n\r\ngpt default · /srv\r\n"
)
BLOCKED = (
    "• Ran cargo test #{n}\r\n\r\nAllow command? cargo publish --dry-run\r\n"
    "  Yes (y)   No (n)\r\n\r\npress enter to confirm or esc to cancel\r\n"
)


def frame(mode: str, seq: int, state: str) -> bytes:
    if mode == "report":
        msg = base64.b64encode(f"m{seq}x".encode()).decode()
        return f"\x1b]7501;state={state}:app=bench:msg={msg}\x1b\\".encode()
    body = (WORKING if state == "working" else BLOCKED).format(n=seq)
    return ("\x1b[H\x1b[2J" + body).encode()


def main() -> int:
    mode, fifo, log = sys.argv[1:4]
    if mode == "screen":
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None).prctl(15, b"codex", 0, 0, 0)
    out = sys.stdout.fileno()
    with open(log, "a", buffering=1) as lg, open(fifo, "rb", buffering=0) as ctl:
        lg.write("ready\n")
        buf = b""
        while True:
            chunk = ctl.read(4096)
            if not chunk:
                return 0
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                seq, state = line.decode().split()
                data = frame(mode, int(seq), state)
                t = time.time()  # taken before the write: nothing downstream can precede it
                os.write(out, data)
                lg.write(f"{seq} {t:.6f}\n")


if __name__ == "__main__":
    sys.exit(main())
