"""A stand-in for Claude Code's start-up probe (P7501-13), for the relay's tests.

It does what Claude Code does: puts its terminal in raw mode, writes XTVERSION
(`ESC[>0q`), the kitty keyboard query (`ESC[?u`), the OSC 7501 probe with ST, and
the DA1 sentinel (`CSI c`), then reads the replies *in order*. The 7501 reply before
the DA1 answer means "supported"; the DA1 answer first means "unsupported"
(P7501-12). When supported it reports like Claude Code does, with its own hand-made
bytes (deliberately not paneboard's encoder), then says goodbye with `done`.

usage: claude_like_probe.py RESULT_FILE [--terminator st|bel] [--pause SECONDS] [--steps DIR]
With --steps, report i (from 1) waits until DIR/step<i> exists, so a test can pace it.
RESULT_FILE gets one JSON line: {"verdict": ..., "replies": [...], "reports": [...]}.
"""

from __future__ import annotations

import base64
import json
import os
import re
import select
import sys
import termios
import time
import tty

REPLY_RE = re.compile(
    rb"\x1b\]7501;\?(?P<osc_tail>[^\x07\x1b]*)(?:\x07|\x1b\\)"  # our probe's answer (pairs allowed)
    rb"|\x1b\[\?(?P<da1>[0-9;]*)c"  # DA1 answer
    rb"|\x1bP>\|(?P<xtversion>[^\x1b]*)\x1b\\"  # XTVERSION answer
    rb"|\x1b\[\?(?P<kitty>[0-9]+)u"  # kitty keyboard flags
)


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def main() -> int:
    result_path = sys.argv[1]
    term = b"\x07" if "bel" in sys.argv[2:] else b"\x1b\\"
    pause = float(sys.argv[sys.argv.index("--pause") + 1]) if "--pause" in sys.argv else 0.0
    steps = sys.argv[sys.argv.index("--steps") + 1] if "--steps" in sys.argv else None
    fd = sys.stdin.fileno()
    saved = termios.tcgetattr(fd)
    replies: list[str] = []
    verdict = "timeout"
    try:
        tty.setraw(fd, termios.TCSANOW)
        os.write(1, b"\x1b[>0q" + b"\x1b[?u" + b"\x1b]7501;?" + term + b"\x1b[c")
        buf = b""
        deadline = time.monotonic() + 15.0  # generous: the DA1 answer ends it early
        while verdict == "timeout" and time.monotonic() < deadline:
            r, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
            if not r:
                break
            buf += os.read(fd, 4096)
            consumed = 0
            for m in REPLY_RE.finditer(buf):
                consumed = m.end()
                name = next(k for k, v in m.groupdict().items() if v is not None)
                replies.append("osc7501" if name == "osc_tail" else name)
                if name == "da1":
                    verdict = "supported" if "osc7501" in replies else "unsupported"
                    break
            buf = buf[consumed:]
        reports: list[str] = []
        if verdict == "supported":
            reports = [
                f"state=working:app=claude-code:progress=40:title={b64('Refactoring ✳ parser')}",
                f"state=blocked:app=claude-code:id=task_1.a:kind=question:msg={b64('Which file first?')}",
                "state=clear:id=task_1.a",
                f"state=done:app=claude-code:msg={b64('All tests pass')}",
            ]
            for i, body in enumerate(reports):
                while steps and i and not os.path.exists(os.path.join(steps, f"step{i}")):
                    time.sleep(0.02)
                os.write(1, b"\x1b]7501;" + body.encode() + b"\x1b\\")
                time.sleep(pause)  # lets a watcher see each state (a real agent takes longer)
        with open(result_path + ".tmp", "w") as f:
            f.write(json.dumps({"verdict": verdict, "replies": replies, "reports": reports}) + "\n")
        os.replace(result_path + ".tmp", result_path)
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)
    return 0


if __name__ == "__main__":
    sys.exit(main())
