"""`paneboard emit STATE ...`: write one status report to the controlling terminal.

Meant for hooks and shell prompts: it prints nothing on stdout (hooks capture it),
one line on stderr when something is wrong, and exits 0 (written), 2 (invalid
report or usage) or 1 (no terminal / cannot write).
"""

from __future__ import annotations

import argparse
import os
import sys

from paneboard_agent.report import PROTOCOLS, ReportError, build, open_tty, write_all


class _Parser(argparse.ArgumentParser):
    """argparse that fails with one line, not a usage block (common.md: one clear line)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        print(f"paneboard emit: {message}", file=sys.stderr)
        raise SystemExit(2)


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
    p.add_argument("--tty", help="write here instead of /dev/tty or $PANEBOARD_TTY")
    return p


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
    try:
        data = build(
            args.state,
            kind=args.kind,
            msg=args.msg,
            title=args.title,
            id=args.id,
            app=args.app,
            progress=progress,
            protocol=args.protocol,
            agent=args.agent,
            session=args.session,
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
