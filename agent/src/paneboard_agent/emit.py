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

from paneboard_agent.report import PROTOCOLS, ReportError, build, open_tty, write_all

_Parser = functools.partial(OneLineParser, help_hint=False)


def _parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="paneboard emit",
        description=(
            "Write an OSC 7501 report and/or a THINKTERM_AGENT contract to the controlling terminal "
            "(or $PANEBOARD_TTY). STATE is idle, working, done, blocked, error or clear."
        ),
    )
    p.add_argument("state", metavar="STATE")
    p.add_argument("--kind", help="with blocked: permission, question or auth")
    p.add_argument("--msg", help="one line of text, at most 2048 bytes")
    p.add_argument("--title", help="one line of text, at most 192 bytes")
    p.add_argument("--id", help="child record path, e.g. task_1/a (default: the root record)")
    p.add_argument("--app", help="the program reporting, e.g. claude-code")
    p.add_argument("--progress", help="with working/blocked: 0-100")
    p.add_argument("--protocol", default="osc7501", choices=PROTOCOLS, help="default: osc7501")
    p.add_argument("--agent", help="THINKTERM_AGENT agent id (default: --app)")
    p.add_argument(
        "--session", default=os.environ.get("PANEBOARD_SESSION"), help="THINKTERM_AGENT session id"
    )
    p.add_argument(
        "--ended",
        action="store_true",
        help="THINKTERM_AGENT: the session is over (ended=1); with clear, sent as idle;ended=1",
    )
    p.add_argument("--tty", help="write here instead of /dev/tty or $PANEBOARD_TTY")
    p.add_argument(
        "--hook-json",
        metavar="JSON",
        help="an agent hook's JSON event ('-' reads it from stdin): fills --msg from its message "
        "and --session from its session id when those are not given",
    )
    return p


MAX_HOOK_JSON = 1 << 20
MSG_KEYS = ("message", "last-assistant-message", "last_assistant_message")
SESSION_KEYS = ("session_id", "thread-id", "thread_id")
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


def hook_fields(raw: str) -> tuple[str | None, str | None]:
    """(msg, session) from an agent hook's JSON event (Claude Code, Codex, Gemini CLI)."""
    if len(raw) > MAX_HOOK_JSON:
        raise ValueError(f"--hook-json: the event is over {MAX_HOOK_JSON} bytes")
    try:
        event = json.loads(raw)
    except ValueError:
        raise ValueError("--hook-json: not valid JSON") from None
    if not isinstance(event, dict):
        raise ValueError("--hook-json: not a JSON object")
    msg = next((event[k] for k in MSG_KEYS if isinstance(event.get(k), str) and event[k].strip()), None)
    session = next((event[k] for k in SESSION_KEYS if isinstance(event.get(k), str)), None)
    if session is not None and not _SESSION_OK.fullmatch(session):
        session = None  # an id we cannot carry is left out rather than failing the report
    return (one_line(msg) if msg else None), session


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
            hook_msg, hook_session = hook_fields(raw)
        except (ValueError, OSError) as exc:
            print(f"paneboard emit: {exc}", file=sys.stderr)
            return 2
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
        finally:
            os.close(fd)
    except ReportError as exc:
        print(f"paneboard emit: {exc}", file=sys.stderr)
        return 1
    return 0
