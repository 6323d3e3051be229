"""`paneboard emit STATE ...`: write one status report to the controlling terminal.

Meant for hooks and shell prompts: it prints nothing on stdout (hooks capture it),
one line on stderr when something is wrong, and exits 0 (written), 2 (invalid
report or usage) or 1 (no terminal / cannot write).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import re
import sys
import unicodedata

from paneboard_protocol.cli_args import OneLineParser
from paneboard_protocol.encode import MAX_MSG_DECODED

from paneboard_agent.tools.pane_store import remember
from paneboard_agent.tools.report import PROTOCOLS, ReportError, build, open_tty, write_all

_Parser = functools.partial(OneLineParser, help_hint=False)


def _parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="paneboard emit",
        description=(
            "Tell paneboard what your script or program is doing: writes a status report to the "
            "terminal it runs in, where the collector reads it. For scripts and agent hooks. A blocked "
            "stands until another report for the same --id replaces it (or clear removes it), or "
            "until the program it was made for leaves the terminal (never, when that is your "
            "interactive shell): report again once answered (`paneboard emit idle`). To "
            "ask a question from a script, use `paneboard ask QUESTION` instead: it reports blocked, "
            "reads the answer and reports the state after, whatever happens. "
            "Prints nothing on stdout; exit status 0 written, 2 bad arguments, 1 no terminal."
        ),
    )
    p.add_argument(
        "state",
        metavar="STATE",
        help="idle, working, done, blocked or error; clear removes what was reported before "
        "(a blocked stays until something reports again)",
    )
    p.add_argument("--kind", help="with blocked, what it waits for: permission, question or auth")
    p.add_argument("--msg", help="the text to show, e.g. the question asked (one line, at most 2048 bytes)")
    p.add_argument("--title", help="a short title (one line, at most 192 bytes)")
    p.add_argument("--id", help="report on one part of the work, e.g. task_1/a, instead of the whole program")
    p.add_argument("--app", help="the name of the program reporting, e.g. claude-code (shown as the agent)")
    p.add_argument("--progress", help="how far along, 0 to 100 (with working or blocked)")
    p.add_argument(
        "--protocol",
        default="osc7501",
        choices=PROTOCOLS,
        help="which kind of report to write: osc7501 (the default), thinkterm (a THINKTERM_AGENT "
        "variable, read by ThinkTerm-style terminals) or both",
    )
    p.add_argument("--agent", help="with thinkterm: the agent's name (default: --app)")
    p.add_argument(
        "--session",
        default=os.environ.get("PANEBOARD_SESSION"),
        help="with thinkterm: an id for the agent's session (default: $PANEBOARD_SESSION)",
    )
    p.add_argument(
        "--ended",
        action="store_true",
        help="with thinkterm: the agent's session is over",
    )
    p.add_argument(
        "--tty",
        help="write to this terminal or file instead (default: $PANEBOARD_TTY, else the terminal "
        "the command runs in)",
    )
    p.add_argument(
        "--hook-json",
        metavar="JSON",
        help="an agent hook's JSON event ('-' reads it from stdin): fills --msg from its message "
        "and --session from its session id when those are not given; a Codex notify event of "
        "its own side requests (naming the thread) writes nothing",
    )
    return p


MAX_HOOK_JSON = 1 << 20
MSG_KEYS = ("message", "last-assistant-message", "last_assistant_message")
#: Where each agent's events name their session: Claude Code, Gemini CLI and Qwen Code
#: `session_id`, Codex's notify `thread-id`, GitHub Copilot CLI `sessionId` (camelCase).
SESSION_KEYS = ("session_id", "sessionId", "thread-id", "thread_id")
_SESSION_OK = re.compile(r"[A-Za-z0-9_.:,+/@-]{1,128}")


def one_line(text: str, limit: int = MAX_MSG_DECODED) -> str:
    """Hook text made reportable: whitespace runs (newlines too) become one space,
    control characters and lone surrogates go, and it is cut to `limit` UTF-8 bytes on a character
    boundary (with an ellipsis), because a reader rejects a report over the limit."""
    text = " ".join(
        "".join(" " if unicodedata.category(c) in ("Cc", "Cs", "Zl", "Zp") else c for c in text).split()
    )
    if len(text.encode("utf-8")) <= limit:
        return text
    cut = text.encode("utf-8")[: limit - 3].decode("utf-8", "ignore")
    return cut + "…"


def hook_event(raw: str) -> dict[str, object]:
    """An agent hook's JSON event, bounded and checked to be an object."""
    if len(raw) > MAX_HOOK_JSON:
        raise ValueError(f"--hook-json: the event is over {MAX_HOOK_JSON} bytes")
    try:
        event = json.loads(raw)
    except ValueError:
        raise ValueError("--hook-json: not valid JSON") from None
    if not isinstance(event, dict):
        raise ValueError("--hook-json: not a JSON object")
    return event


def hook_fields(event: dict[str, object]) -> tuple[str | None, str | None]:
    """(msg, session) from an agent hook's JSON event (Claude Code, Codex, Gemini CLI, Qwen
    Code, GitHub Copilot CLI)."""
    msg = next((v for k in MSG_KEYS if isinstance(v := event.get(k), str) and v.strip()), None)
    session = next((v for k in SESSION_KEYS if isinstance(v := event.get(k), str)), None)
    if session is not None and not _SESSION_OK.fullmatch(session):
        session = None  # an id we cannot carry is left out rather than failing the report
    return (one_line(msg) if msg else None), session


#: Codex runs its `notify` program for its own side requests too: after a prompt it names
#: the thread through a second, ephemeral thread whose one turn is one of these prompts
#: (seen with the real Codex CLI 0.171.0: `input-messages` ["Generate a concise,
#: single-line task title of at most 36 characters ..."], a thread id of its own, and
#: `last-assistant-message` the title, while the user's turn still runs).
CODEX_SIDE_PROMPTS = (
    "Generate a concise, single-line task title",
    "Write a brief catch-up for a user returning to this",
)


def codex_side_request(event: dict[str, object]) -> str | None:
    """Why a Codex `notify` event does not end the user's turn, or None when it does (or
    when the event is not Codex's notify payload at all: only that one has a `type`
    beside `thread-id`/`turn-id`). A report of `done` for it would be a lie mid-turn."""
    kind = event.get("type")
    if not isinstance(kind, str) or not ("thread-id" in event or "turn-id" in event):
        return None
    if kind != "agent-turn-complete":
        return f"a Codex {kind!r} event, not a turn's end"
    prompts = event.get("input-messages")
    if (
        isinstance(prompts, list)
        and prompts
        and all(isinstance(m, str) and m.lstrip().startswith(CODEX_SIDE_PROMPTS) for m in prompts)
    ):
        return "Codex's own side request (naming the thread), not the user's turn"
    return None


def main(argv: list[str]) -> int:
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    progress: int | None = None
    if args.progress is not None:
        try:
            progress = int(args.progress, 10)
        except ValueError:
            print(
                f"paneboard emit: progress must be a whole number 0-100, not {args.progress!r}",
                file=sys.stderr,
            )
            return 2
    msg, session = args.msg, args.session
    if args.hook_json is not None:
        try:
            raw = sys.stdin.read(MAX_HOOK_JSON + 1) if args.hook_json == "-" else args.hook_json
            event = hook_event(raw)
        except (ValueError, OSError) as exc:
            print(f"paneboard emit: {exc}", file=sys.stderr)
            return 2
        if codex_side_request(event) is not None:
            return 0  # nothing happened that the pane should show: no report, no error
        hook_msg, hook_session = hook_fields(event)
        msg = msg if msg is not None else hook_msg
        session = session if session is not None else hook_session
    try:
        data = build(
            args.state,
            kind=args.kind,
            msg=msg,
            title=args.title,
            id=args.id,
            app=args.app,
            progress=progress,
            protocol=args.protocol,
            agent=args.agent,
            session=session,
            ended=args.ended,
        )
    except ValueError as exc:
        print(f"paneboard emit: {exc}", file=sys.stderr)
        return 2
    try:
        fd = open_tty(args.tty)
        try:
            write_all(fd, data)
        except OSError as exc:
            raise ReportError(f"cannot write the report: {exc.strerror}") from None
        else:
            # ... and where a collector that attaches later finds it (pane_state.py)
            remember(data, fd, args.tty or os.environ.get("PANEBOARD_TTY"))
        finally:
            os.close(fd)
    except ReportError as exc:
        print(f"paneboard emit: {exc}", file=sys.stderr)
        return 1
    return 0
