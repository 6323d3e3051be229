"""`paneboard status`: the panes at a glance, for a person, a script, a tmux status line or
a prompt.

From a server (`--server URL`, its viewer token in `$PANEBOARD_VIEWER_TOKEN`, never on
the command line), or from this machine's tmux directly (`--local`), which runs the
collector for a moment and prints what it saw; a report written before that moment is
not seen, so the server's answer is the complete one.

The exit status answers "does something wait on me?" without parsing: 0 nothing waits,
1 at least one pane is `blocked`, 2 the question could not be answered (bad arguments,
server unreachable, token refused).

Everything printed from a pane (program names, messages, titles) is what a program in a
pane chose, so control characters are replaced before it reaches a terminal, where an
escape sequence could move the cursor, retitle the window or worse. The short form
prints no pane text at all: tmux would read `#(...)` in it as a command to run.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from paneboard_protocol.cli_args import OneLineParser
from paneboard_protocol.pane import BOARD_ORDER

NOTHING_WAITS, SOMETHING_WAITS, NO_ANSWER = 0, 1, 2

_ORDER: dict[str, int] = {state: i for i, state in enumerate(BOARD_ORDER)}
_SHORT = (("blocked", "⚠"), ("error", "✗"), ("done", "✓"), ("working", "⟳"))
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_FETCH_LIMIT = 32 * 1024 * 1024  # bytes of /api/panes read at most


@dataclass(frozen=True)
class Row:
    host: str
    session: str
    window: str
    pane: str
    agent: str | None
    state: str | None
    kind: str | None
    msg: str | None
    since: float | None


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def rows_from_api(panes: Iterable[dict[str, Any]]) -> list[Row]:
    """Rows from `/api/panes`: only the fields shown, each as a string or None."""
    return [
        Row(
            host=str(p.get("host") or ""),
            session=str(p.get("session") or ""),
            window=str(p.get("window") or ""),
            pane=str(p.get("pane") or ""),
            agent=_text(p.get("agent")),
            state=_text(p.get("state")),
            kind=_text(p.get("kind")),
            msg=_text(p.get("msg")),
            since=p.get("since") if isinstance(p.get("since"), int | float) else None,
        )
        for p in panes
    ]


def ordered(rows: Iterable[Row]) -> list[Row]:
    """Blocked first, the longest wait first within a state; panes without a state last."""

    def key(r: Row) -> tuple[int, float, str, str, str]:
        return (_ORDER.get(r.state or "", 9), r.since or float("inf"), r.host, r.session, r.pane)

    return sorted(rows, key=key)


def clean(text: str | None, width: int | None = None) -> str:
    """`text` safe for a terminal: control characters become `?`, cut to `width` with `…`."""
    if not text:
        return ""
    out = _CONTROL.sub("?", text)
    if width is not None and len(out) > width:
        out = out[: max(width - 1, 0)] + "…"
    return out


def _age(since: float | None, now: float) -> str:
    if since is None:
        return ""
    seconds = max(0, int(now - since))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m"
    if seconds < 86400:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    return f"{seconds // 86400}d"


def table(rows: Sequence[Row], now: float) -> str:
    """The panes as aligned columns; the message last, cut to keep a line a line."""
    head = ("HOST", "SESSION", "WINDOW", "PANE", "AGENT", "STATE", "FOR", "MESSAGE")
    body = [
        (
            clean(r.host, 24),
            clean(r.session, 20),
            clean(r.window, 20),
            clean(r.pane, 8),
            clean(r.agent, 16),
            clean(r.state if r.kind is None else f"{r.state}:{r.kind}", 20),
            _age(r.since, now) if r.state else "",
            clean(r.msg, 60),
        )
        for r in ordered(rows)
    ]
    widths = [max(len(c[i]) for c in [head, *body]) for i in range(len(head))]
    lines = ["  ".join(c[i].ljust(widths[i]) for i in range(len(head))).rstrip() for c in [head, *body]]
    return "\n".join(lines)


def short(rows: Iterable[Row]) -> str:
    """Counts only, e.g. `⚠2 ⟳3`; empty when no pane is blocked, failed, done or working."""
    counts: dict[str, int] = {}
    for r in rows:
        if r.state:
            counts[r.state] = counts.get(r.state, 0) + 1
    return " ".join(f"{mark}{counts[state]}" for state, mark in _SHORT if counts.get(state))


def exit_status(rows: Iterable[Row]) -> int:
    return SOMETHING_WAITS if any(r.state == "blocked" for r in rows) else NOTHING_WAITS


class StatusError(Exception):
    """Why the panes could not be had, in one sentence."""


def fetch(server: str, token: str, timeout: float = 10.0) -> list[Row]:
    """The live panes from a paneboard server's `/api/panes`."""
    if not re.match(r"https?://", server):
        raise StatusError(f"--server must be an http:// or https:// URL, not {server!r}")
    request = urllib.request.Request(
        server.rstrip("/") + "/api/panes",
        headers={"Authorization": f"Bearer {token}", "Accept": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            body = response.read(_FETCH_LIMIT + 1)
    except urllib.error.HTTPError as exc:
        if exc.code in (401, 403):
            raise StatusError(
                f"the server refused the token ({exc.code}): check $PANEBOARD_VIEWER_TOKEN"
            ) from None
        raise StatusError(f"the server answered {exc.code} {exc.reason}") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise StatusError(f"cannot reach {server}: {reason}") from None
    if len(body) > _FETCH_LIMIT:
        raise StatusError("the server's answer is larger than any pane listing should be")
    try:
        panes = json.loads(body)
    except ValueError:
        raise StatusError(f"{server} did not answer with JSON: is it a paneboard server?") from None
    if not isinstance(panes, list) or not all(isinstance(p, dict) for p in panes):
        raise StatusError(f"{server} did not answer with a list of panes: is it a paneboard server?")
    return rows_from_api(panes)


class _Discard:
    """The collector's sink for one look: the answer is read from its snapshot at the end."""

    async def pane_changed(self, update: object) -> None:
        pass

    async def pane_gone(self, key: object, t: float) -> None:
        pass

    async def host_status(self, host: str, reachable: bool, t: float, error: str | None) -> None:
        pass

    async def host_health(self, host: str, health: object) -> None:
        pass


async def _look_locally(socket_name: str | None, settle: float) -> list[Row]:
    """Run the collector on this machine's tmux for `settle` seconds; what it saw."""
    from paneboard_agent.cli import make_targets
    from paneboard_agent.collector import Collector, Options
    from paneboard_agent.config import HostConfig
    from paneboard_protocol.rules import load_rules

    collector = Collector(
        make_targets([HostConfig(host=None, tmux_socket=socket_name)]),
        _Discard(),
        Options(rules=load_rules(None)),
    )
    task = asyncio.create_task(collector.run())
    try:
        await asyncio.wait({task}, timeout=settle)
        if task.done():
            task.result()  # a collector that stopped early says why
        updates, hosts = collector.snapshot()
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task
    for _host, (reachable, error) in hosts.items():
        if not reachable:
            raise StatusError(f"this machine's tmux: {error or 'not reachable'}")
    return [
        Row(
            host=u.key.host,
            session=u.session or "",
            window=u.window or "",
            pane=u.key.pane,
            agent=u.agent,
            state=u.state,
            kind=u.kind,
            msg=u.msg,
            since=u.since,
        )
        for u in updates
    ]


def build_parser() -> OneLineParser:
    p = OneLineParser(
        prog="paneboard status",
        description="The panes and their states. Exit status: 0 nothing waits on you, "
        "1 a pane is blocked (waits on you), 2 no answer (see the message).",
    )
    where = p.add_mutually_exclusive_group()
    where.add_argument(
        "--server",
        metavar="URL",
        default=os.environ.get("PANEBOARD_SERVER"),
        help="a paneboard server (default: $PANEBOARD_SERVER); its viewer token in $PANEBOARD_VIEWER_TOKEN",
    )
    where.add_argument(
        "--local", action="store_true", help="look at this machine's tmux directly instead of asking a server"
    )
    p.add_argument(
        "--tmux-socket", metavar="NAME", help="with --local: tmux -L NAME (default: the default server)"
    )
    p.add_argument(
        "--settle",
        type=float,
        default=2.0,
        metavar="S",
        help="with --local: seconds to watch before answering (default 2)",
    )
    shape = p.add_mutually_exclusive_group()
    shape.add_argument("--json", action="store_true", help="one JSON array of the panes")
    shape.add_argument(
        "--short", action="store_true", help="counts only, e.g. '⚠2 ⟳3', for a tmux status line"
    )
    return p


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    try:
        if args.local:
            if not 0 < args.settle <= 60:
                raise StatusError("--settle takes seconds from 0 to 60")
            rows = asyncio.run(_look_locally(args.tmux_socket, args.settle))
        else:
            if args.tmux_socket:
                raise StatusError("--tmux-socket goes with --local")
            if not args.server:
                raise StatusError("give --server URL (or $PANEBOARD_SERVER), or --local")
            token = os.environ.get("PANEBOARD_VIEWER_TOKEN")
            if not token:
                raise StatusError(
                    "set $PANEBOARD_VIEWER_TOKEN to a viewer token (paneboard token create NAME --viewer)"
                )
            rows = fetch(args.server, token)
    except StatusError as exc:
        print(f"paneboard status: {exc}", file=sys.stderr)
        return NO_ANSWER
    if args.json:
        print(json.dumps([asdict(r) for r in ordered(rows)], ensure_ascii=False))
    elif args.short:
        print(short(rows))
    elif rows:
        print(table(rows, time.time()))
    else:
        print("no panes")
    return exit_status(rows)
