"""Scripted stand-ins for real coding agents, one per kind of evidence paneboard reads.

`paneboard demo` runs each in its own tmux pane. They are not simulations of
paneboard: they write to their terminal exactly what the real programs write (the
same escape sequences, produced by `paneboard_protocol.encode`), and everything
downstream — tmux, the collector, the server, the board — is the real thing.

    python -m paneboard.demo_agents welcome|claude|thinkterm|codex|native|remote
"""

from __future__ import annotations

import contextlib
import ctypes
import itertools
import os
import select
import sys
import termios
import time
import tty
from collections.abc import Callable, Iterator

from paneboard_protocol.encode import encode_agent, encode_probe, encode_report

DIM, BOLD, RESET = "\x1b[2m", "\x1b[1m", "\x1b[0m"
GREEN, YELLOW, CYAN, MAGENTA = "\x1b[32m", "\x1b[33m", "\x1b[36m", "\x1b[35m"
CLEAR = "\x1b[H\x1b[2J"
SIX_HOURS = 6 * 3600


def _out(data: str | bytes) -> None:
    sys.stdout.buffer.write(data.encode() if isinstance(data, str) else data)
    sys.stdout.buffer.flush()


def _title(text: str) -> None:
    _out(f"\x1b]2;{text}\x07")


def _set_process_name(name: str) -> None:
    """Name this process like the agent it plays, so screen rules pick it (TA-4).

    tmux's `#{pane_current_command}` reads argv[0] (the demo sets it with `exec -a`);
    the kernel's `comm`, which `ps` shows, is set here.
    """
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(15, name.encode()[:15], 0, 0, 0)


def _probe_like_claude(timeout: float = 2.0) -> bool:
    """Claude Code's start-up detection (P7501-13): XTVERSION, kitty keys, 7501 probe, DA1.

    Supported only if the 7501 answer arrives before the DA1 answer (P7501-12). Inside
    tmux that never happens on its own; under `paneboard run` the relay answers first.
    """
    if not os.isatty(0):
        return False
    saved = termios.tcgetattr(0)
    try:
        tty.setraw(0)
        _out(b"\x1b[>0q\x1b[?u" + encode_probe("st") + b"\x1b[c")
        buf = b""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            ready, _, _ = select.select([0], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                break
            buf += os.read(0, 1024)
            probe_at, da1_at = buf.find(b"\x1b]7501;?"), buf.find(b"\x1b[?")
            if da1_at >= 0 and buf.find(b"c", da1_at) >= 0:
                return 0 <= probe_at < da1_at
        return False
    finally:
        termios.tcsetattr(0, termios.TCSADRAIN, saved)


def _sleep(seconds: float) -> None:
    time.sleep(seconds)


def claude(sleep: Callable[[float], None] = _sleep) -> None:
    """OSC 7501 the way Claude Code sends it: root record plus child task records."""
    supported = _probe_like_claude()
    _out(CLEAR + f"{BOLD}✻ Claude-like demo agent{RESET}\r\n")
    _out(
        f"{DIM}7501 probe: {'supported' if supported else 'unsupported'} "
        f"(run under `paneboard run` to be answered inside tmux){RESET}\r\n\r\n"
    )
    if not supported:
        _out("No status protocol: sending nothing, like Claude Code.\r\n")
        while True:
            sleep(3600)
    app = "claude-code"
    for turn in itertools.count(1):
        _out(f"{CYAN}> Refactor the parser (turn {turn}){RESET}\r\n")
        for pct in range(0, 101, 20):
            _out(encode_report("working", app=app, progress=pct, title=f"Refactoring, turn {turn}"))
            _out(f"  {GREEN}●{RESET} Editing src/parser.py … {pct}%\r\n")
            sleep(1.5)
        _out(encode_report("working", app=app, id="task_1.a", msg="Running the test suite"))
        sleep(2)
        _out(
            encode_report(
                "blocked",
                app=app,
                kind="permission",
                msg="Allow Bash(rm -rf build/) in /srv/project?",
            )
        )
        _out(f"  {YELLOW}? Allow Bash(rm -rf build/)?{RESET} (auto-approved in 12 s)\r\n")
        sleep(12)
        _out(encode_report("clear", id="task_1.a"))
        _out(encode_report("done", app=app, msg=f"Turn {turn}: refactored 3 files, tests pass"))
        _out(f"  {GREEN}✓ Done.{RESET} Waiting for you to look.\r\n\r\n")
        sleep(15)


def thinkterm(sleep: Callable[[float], None] = _sleep) -> None:
    """Only the THINKTERM_AGENT user variable (TA-7), re-sent on every state change."""
    session = f"demo-{os.getpid()}"

    def contract(state: str) -> None:
        _out(encode_agent("my-agent", state, session=session, ts=int(time.time())))

    _out(CLEAR + f"{BOLD}my-agent{RESET} {DIM}(reports THINKTERM_AGENT only){RESET}\r\n")
    for step in itertools.count(1):
        contract("working")
        _out(f"{GREEN}working{RESET} on step {step} …\r\n")
        sleep(9)
        contract("blocked")
        _out(f"{YELLOW}Which branch should I push to? [main/dev]{RESET}\r\n")
        sleep(10)
        contract("idle")
        _out(f"{DIM}ready for input{RESET}\r\n")
        sleep(8)


def _codex_screen(body: str) -> None:
    _out(CLEAR + body.replace("\n", "\r\n"))


def codex(sleep: Callable[[float], None] = _sleep) -> None:
    """Says nothing about itself: only the bundled Codex screen rules can tell its state."""
    _set_process_name("codex")
    spinner = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
    footer = "\n› Use /skills to list available skills\n\ngpt-5.6-sol default · /srv/project\n"
    for _cycle in itertools.count(1):
        for second in range(1, 10):
            _title(f"{spinner[second % len(spinner)]} project")
            _codex_screen(f"• Working ({second}s • esc to interrupt)\n{footer}")
            sleep(1)
        _title("project")
        _codex_screen(
            "• Ran cargo test\n\nAllow command? cargo publish --dry-run\n"
            "  Yes (y)   No (n)\n\npress enter to confirm or esc to cancel\n"
        )
        sleep(10)
        _codex_screen("• Published the dry run. Anything else?\n" + footer)
        sleep(10)


def native(sleep: Callable[[float], None] = _sleep) -> None:
    """Claude Code as it behaves inside tmux without `paneboard run` (P7501-13).

    It sends no reports at all; what is left is native evidence — OSC 9;4 progress and
    a spinner glyph leading the title (TA-3) — and its screen, read by the bundled
    Claude Code manifest because the process is named `claude` (TA-4).
    """
    _set_process_name("claude")
    spinner = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
    prompt = "\n╭────────────────────────────╮\n│ > \n╰────────────────────────────╯\n"
    for turn in itertools.count(1):
        for step in range(0, 21):
            pct = step * 5
            _title(f"{spinner[step % len(spinner)]} Compiling the release build")
            _out(f"\x1b]9;4;1;{pct}\x07")
            _codex_screen(
                f"● cargo build --release (turn {turn})\n  [{pct:3d}%] compiling crate {step} of 20\n"
                "\n✻ Building… (esc to interrupt)\n"
            )
            sleep(0.8)
        _out("\x1b]9;4;0\x07")
        _title("✳ Release build")
        _codex_screen("● Bash(cargo publish --dry-run)\n\n Do you want to proceed?\n ❯ 1. Yes\n   2. No\n")
        sleep(10)
        _codex_screen(f"● The release build is ready (turn {turn}).\n{prompt}")
        sleep(12)


def remote(sleep: Callable[[float], None] = _sleep) -> None:
    """An agent behind an ssh-like transport that went quiet: its last word goes stale.

    The process is named `ssh`, so the pane is unobservable (TA-13); the last contract
    is `blocked` with a `ts` a little under six hours old, so a minute or so into the
    demo the server's staleness sweep takes away its state and its identity.
    """
    _set_process_name("ssh")
    stale_in = int(os.environ.get("PANEBOARD_DEMO_STALE_AFTER", "75"))
    sent = int(time.time()) - SIX_HOURS + stale_in
    _out(CLEAR + f"{DIM}Connected to build-07 (simulated){RESET}\r\n")
    _out(encode_agent("remote-agent", "blocked", session="build-07", ts=sent))
    _out(f"{MAGENTA}remote-agent{RESET}: Approve the deploy to staging? [y/N]\r\n")
    _out(f"{DIM}(connection quiet since then){RESET}\r\n")
    while True:
        sleep(3600)


def welcome(sleep: Callable[[float], None] = _sleep) -> None:
    """The first pane: what this tmux server is, so nobody mistakes it for their own."""
    _out(
        CLEAR + f"{BOLD}paneboard demo{RESET}\r\n\r\n"
        "This is a private tmux server started by `paneboard demo`; every other window\r\n"
        "runs a scripted agent. Switch windows with Ctrl-b n; detach with Ctrl-b d.\r\n"
        "Ctrl-C in the terminal that runs `paneboard demo` removes all of it.\r\n"
    )
    while True:
        sleep(3600)


AGENTS: dict[str, Callable[..., None]] = {
    "welcome": welcome,
    "claude": claude,
    "thinkterm": thinkterm,
    "codex": codex,
    "native": native,
    "remote": remote,
}


def _names() -> Iterator[str]:
    return iter(AGENTS)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or args[0] not in AGENTS:
        print(f"usage: python -m paneboard.demo_agents {{{'|'.join(_names())}}}", file=sys.stderr)
        return 2
    with contextlib.suppress(KeyboardInterrupt, BrokenPipeError):
        AGENTS[args[0]]()
    return 0


if __name__ == "__main__":
    sys.exit(main())
