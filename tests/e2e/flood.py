"""A pane program that floods: MB megabytes of text with RATE OSC 7501 reports per
second mixed in (alternating working/blocked, each msg a counter, so every report is
a change), then one last `done` report with msg `final`.

    python3 flood.py MB RATE LOG

Writes `reports N bytes M seconds S` to LOG when it is done (tmux may slow it down:
a pty blocks a writer nobody reads, which is flow control working, not the test
failing).
"""

from __future__ import annotations

import base64
import os
import sys
import time


def report(state: str, msg: str) -> bytes:
    b64 = base64.b64encode(msg.encode()).decode()
    return f"\x1b]7501;state={state}:app=flood:msg={b64}\x1b\\".encode()


def main() -> int:
    mb, rate, log = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    line = b"compiling unit 0123456789abcdefghijklmnopqrstuvwxyz ........ ok\r\n"
    chunk = line * (65536 // len(line))
    per_tick = max(1, rate // 100)  # 100 ticks a second
    total, n, t0 = 0, 0, time.monotonic()
    out = sys.stdout.fileno()
    while total < mb << 20:
        reports = b"".join(report(("working", "blocked")[(n + i) % 2], f"r{n + i}") for i in range(per_tick))
        n += per_tick
        os.write(out, chunk + reports)
        total += len(chunk) + len(reports)
        due = t0 + n / rate
        if (pause := due - time.monotonic()) > 0:
            time.sleep(pause)
    os.write(out, report("done", "final"))
    # Written aside and renamed into place: the test waits for LOG to exist and reads
    # it at once, so it must never see the file created but not yet written.
    with open(f"{log}.part", "w") as f:
        f.write(f"reports {n} bytes {total} seconds {time.monotonic() - t0:.1f}\n")
    os.replace(f"{log}.part", log)
    time.sleep(3600)
    return 0


if __name__ == "__main__":
    sys.exit(main())
