"""Programs that ask and wait: the demo's answerable panes and the answer tests' subject.

    python -m paneboard.demo_ask permission [--once]   # Claude-Code-like permission prompt
    python -m paneboard.demo_ask question [--once]     # a free-text question (OSC 7501)

`permission` names itself `claude` and draws Claude Code's permission prompt; the
bundled Claude Code manifest reads it as blocked and offers its answers (1, 2, Esc).
It waits for a key in raw mode, prints `ANSWERED yes|always|no`, works a moment and
asks again (with `--once` it stays idle after the first answer). `question` reports
`blocked`/`question` over OSC 7501 (no manifest: free text), reads one line and prints
`GOT '<line>'` (repr: what was typed, byte for byte), then reports idle.
"""

from __future__ import annotations

import itertools
import os
import sys
import termios
import time
import tty

from paneboard_protocol.encode import encode_report

from paneboard.demo_agents import BOLD, CLEAR, CYAN, DIM, GREEN, RESET, YELLOW, _out, _set_process_name

PROMPT = (
    f"{GREEN}●{RESET} {BOLD}Bash{RESET}(rm -rf build/)\r\n"
    "  ⎿  Remove the stale build directory\r\n\r\n"
    f"{BOLD} Do you want to proceed?{RESET}\r\n"
    f" {CYAN}❯ 1. Yes{RESET}\r\n"
    "   2. Yes, and don't ask again for rm commands in /srv/project\r\n"
    "   3. No\r\n\r\n"
    f"{DIM} Esc to cancel · Tab to amend{RESET}\r\n"
)
IDLE = "\r\n╭────────────────────────────╮\r\n│ > \r\n╰────────────────────────────╯\r\n"
KEYS = {b"1": "yes", b"2": "always", b"3": "no", b"\x1b": "no"}


def _read_key() -> bytes:
    """One key press, raw (the way a TUI reads its menu); Ctrl-C still interrupts."""
    saved = termios.tcgetattr(0)
    try:
        tty.setcbreak(0)
        while True:
            data = os.read(0, 16)
            if not data:
                raise EOFError
            if data[:1] in KEYS:
                return data[:1]
    finally:
        termios.tcsetattr(0, termios.TCSADRAIN, saved)


#: start-up time before the first prompt, as a real agent takes: the collector names a
#: pane's program by polling, and reads a screen only once it knows the program
STARTUP = 1.5


def permission(once: bool = False) -> None:
    _set_process_name("claude")
    _out(CLEAR + f"{DIM}starting…{RESET}\r\n")
    time.sleep(STARTUP)
    for turn in itertools.count(1):
        _out(CLEAR + f"{BOLD}✻ Claude-like asker{RESET} {DIM}(turn {turn}){RESET}\r\n\r\n" + PROMPT)
        answer = KEYS[_read_key()]
        _out(CLEAR + f"ANSWERED {answer}\r\n\r\n✻ Working… (esc to interrupt)\r\n")
        time.sleep(1.5)
        _out(CLEAR + f"ANSWERED {answer}\r\n{GREEN}●{RESET} Done (turn {turn}).\r\n" + IDLE)
        if once:
            while True:
                time.sleep(3600)
        time.sleep(8)


def question(once: bool = False) -> None:
    app = "asker"
    while True:
        _out(encode_report("blocked", app=app, kind="question", msg="Which branch should I push to?"))
        _out(f"{YELLOW}Which branch should I push to?{RESET} ")
        line = sys.stdin.readline()
        if not line:
            return
        _out(encode_report("working", app=app, msg="pushing"))
        _out(f"GOT {line.rstrip(chr(10))!r}\r\n")
        time.sleep(1)
        _out(encode_report("idle", app=app))
        if once:
            while True:
                time.sleep(3600)
        time.sleep(8)


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    once = "--once" in args
    mode = next((a for a in args if not a.startswith("-")), "permission")
    run = {"permission": permission, "question": question}.get(mode)
    if run is None:
        print("usage: python -m paneboard.demo_ask permission|question [--once]", file=sys.stderr)
        return 2
    try:
        run(once)
    except (KeyboardInterrupt, EOFError):
        return 0
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
