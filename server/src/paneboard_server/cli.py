"""`paneboard serve | token | user | db`: the server's commands.

Each is `main(argv) -> int` as `src/paneboard/cli.py` expects; every failure is one
line on stderr and a non-zero exit. Commands that touch the store take `--db URL`
and honour `PANEBOARD_DB`.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import getpass
import os
import sys
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from paneboard_protocol.cli_args import OneLineParser

from .store import (
    DatabaseError,
    check_schema,
    create_engine,
    current_revision,
    head_revision,
    redact,
    require_existing,
    resolve_url,
    upgrade,
    warn_exposure,
)


def _err(cmd: str, msg: str) -> int:
    print(f"paneboard {cmd}: {msg}", file=sys.stderr)
    return 1


_Parser = functools.partial(OneLineParser, help_hint=False)


def _db_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--db",
        metavar="URL|FILE",
        help="where the data is kept: a SQLite file, sqlite:///FILE or postgresql://USER@HOST/NAME "
        "(default: $PANEBOARD_DB, else ~/.local/share/paneboard/paneboard.db)",
    )


async def _with_engine(url: str, fn: Callable[[Any], Awaitable[Any]], check: bool = True) -> Any:
    """Run `fn(engine)` on an existing store (a missing SQLite file is refused, never created)."""
    require_existing(url)
    engine = create_engine(url)
    try:
        if check:
            await check_schema(engine)
        return await fn(engine)
    finally:
        await engine.dispose()


def _run(cmd: str, coro_fn: Callable[[], Coroutine[Any, Any, int]]) -> int:
    from .auth import AccountError

    try:
        return asyncio.run(coro_fn())
    except (DatabaseError, AccountError) as exc:
        return _err(cmd, str(exc))
    except OSError as exc:
        return _err(cmd, f"database unavailable: {exc}")
    except Exception as exc:  # SQLAlchemy/driver errors: one line, never a traceback
        return _err(cmd, f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")


def db_main(argv: list[str]) -> int:
    p = _Parser(
        prog="paneboard db",
        description="Create or upgrade the database paneboard keeps its data in, or show which "
        "version of the layout it has.",
    )
    p.add_argument(
        "action",
        choices=["upgrade", "current"],
        help="upgrade: create the tables (and a SQLite file with its directory) if missing and bring "
        "them up to date, safe to repeat; current: show the version and whether it is up to date "
        "(creates nothing)",
    )
    _db_arg(p)
    args = p.parse_args(argv)
    try:
        url = resolve_url(args.db)
    except DatabaseError as exc:
        return _err("db", str(exc))
    if args.action == "upgrade":
        try:
            upgrade(url)
        except DatabaseError as exc:
            return _err("db", str(exc))
        except Exception as exc:
            return _err("db", f"upgrade failed: {type(exc).__name__}: {str(exc).splitlines()[0]}")
        print(f"database {redact(url)} is at revision {head_revision()}", file=sys.stderr)
        warn_exposure("db", url)
        return 0

    async def current() -> int:
        rev = await _with_engine(url, current_revision, check=False)
        head = head_revision()
        note = "head" if rev == head else f"head is {head}: run `paneboard db upgrade`"
        print(f"{rev or 'none'} ({note})")
        return 0

    return _run("db", current)


def token_main(argv: list[str]) -> int:
    from .auth import accounts

    p = _Parser(
        prog="paneboard token",
        description="Tokens let programs in without a password. A collector token lets `paneboard agent` "
        "send its panes to this server; a viewer token opens the dashboard and API read-only (wall "
        "screens, scripts). Only a hash of each token is stored.",
    )
    sub = p.add_subparsers(dest="action", required=True, parser_class=_Parser, metavar="ACTION")  # type: ignore[call-overload]  # a partial of a parser class
    c = sub.add_parser(
        "create",
        help="make a new token and print it on stdout (the only time it is shown)",
        description="Make a new token and print it, alone, on stdout; it cannot be shown again.",
    )
    c.add_argument("name", metavar="NAME", help="a name you choose for it, e.g. the collector's host")
    c.add_argument(
        "--viewer", action="store_true", help="a read-only viewer token instead of a collector token"
    )
    c.add_argument(
        "--screens",
        action="store_true",
        help="with --viewer: the token also shows panes' screens (what their terminals show; "
        "off by default, see docs/answers.md)",
    )
    _db_arg(c)
    ls = sub.add_parser(
        "list",
        help="show every token's name, kind, state and when it was last used (never its value)",
        description="Show every token's name, kind, state and when it was last used (never its value).",
    )
    _db_arg(ls)
    r = sub.add_parser(
        "revoke",
        help="stop a token from working",
        description="Stop a token from working: every new connection or request with it is refused "
        "(a collector that is connected stays so until it reconnects).",
    )
    r.add_argument("name", metavar="NAME", help="the token's name (both kinds, unless one is given)")
    g = r.add_mutually_exclusive_group()
    g.add_argument("--viewer", action="store_true", help="only the viewer token of that name")
    g.add_argument("--collector", action="store_true", help="only the collector token of that name")
    _db_arg(r)
    args = p.parse_args(argv)
    try:
        url = resolve_url(args.db)
    except DatabaseError as exc:
        return _err("token", str(exc))

    async def go() -> int:
        if args.action == "create":
            kind = "viewer" if args.viewer else "collector"
            if args.screens and not args.viewer:
                return _err("token", "--screens is for viewer tokens (--viewer)")
            token = await _with_engine(
                url, lambda e: accounts.create_token(e, args.name, kind, screens=args.screens)
            )
            print(token)
            print(f"created {kind} token {args.name!r}; it is shown only once", file=sys.stderr)
            return 0
        if args.action == "list":
            rows = await _with_engine(url, accounts.list_tokens)
            for t in rows:
                state = "revoked" if t.revoked_at else "active"
                used = (
                    time.strftime("%Y-%m-%d %H:%M", time.localtime(t.last_used)) if t.last_used else "never"
                )
                shows = "\tshows screens" if t.screens else ""
                print(f"{t.name}\t{t.kind}\t{state}\tlast used {used}{shows}")
            return 0
        which = "viewer" if args.viewer else "collector" if args.collector else None
        n = await _with_engine(url, lambda e: accounts.revoke_token(e, args.name, which))
        if not n:
            return _err("token", f"no active token named {args.name!r}")
        print(f"revoked {n} token(s) named {args.name!r}", file=sys.stderr)
        return 0

    return _run("token", go)


def _read_password(name: str) -> str:
    """The new login's password: typed twice at a terminal (after saying so), else one stdin line."""
    from .auth import PASSWORD_MAX, PASSWORD_MIN, AccountError, check_viewer

    if not sys.stdin.isatty():
        return sys.stdin.readline().rstrip("\r\n")
    print(
        f"Choose a password for dashboard login {name!r}: {PASSWORD_MIN} to {PASSWORD_MAX} characters. "
        "You will type it twice; nothing shows as you type.",
        file=sys.stderr,
    )
    first = getpass.getpass("password: ")
    check_viewer(name, first)  # too short: say so now, not after the second time
    second = getpass.getpass("the same password again: ")
    if first != second:
        raise AccountError("the two passwords differ; nothing was added")
    return first


def user_main(argv: list[str]) -> int:
    from .auth import accounts

    p = _Parser(
        prog="paneboard user",
        description="Dashboard logins: a name and a password for signing in to the dashboard in a browser.",
    )
    sub = p.add_subparsers(dest="action", required=True, parser_class=_Parser, metavar="ACTION")  # type: ignore[call-overload]  # a partial of a parser class
    a = sub.add_parser(
        "add",
        help=f"add a login; asks for its password twice (at least {accounts.PASSWORD_MIN} characters)",
        description=f"Add a dashboard login. At a terminal it asks for the password twice (at least "
        f"{accounts.PASSWORD_MIN} characters); otherwise it reads the password as one line from stdin, "
        "e.g. `printf '%s\\n' \"$PW\" | paneboard user add ana`.",
    )
    a.add_argument("name", metavar="NAME", help="the name to sign in with")
    a.add_argument(
        "--operator",
        action="store_true",
        help="may also answer a blocked pane's prompt from the board (see docs/answers.md)",
    )
    _db_arg(a)
    for verb, says in (("grant", "give"), ("revoke", "take away")):
        gr = sub.add_parser(
            verb,
            help=f"{says} a login the operator role (answering prompts from the board)",
            description=f"{says.capitalize()} an existing login the operator role: answering a blocked "
            "pane's prompt from the board. It counts from the login's next request.",
        )
        gr.add_argument("name", metavar="NAME", help="the login")
        gr.add_argument("role", metavar="ROLE", choices=["operator"], help="operator (the only role)")
        _db_arg(gr)
    ls = sub.add_parser(
        "list",
        help="show every login and when it was added",
        description="Show every login and when it was added.",
    )
    _db_arg(ls)
    r = sub.add_parser(
        "remove",
        help="remove a login and sign it out everywhere",
        description="Remove a login and end its browser sessions.",
    )
    r.add_argument("name", metavar="NAME", help="the login to remove")
    _db_arg(r)
    args = p.parse_args(argv)
    try:
        url = resolve_url(args.db)
    except DatabaseError as exc:
        return _err("user", str(exc))

    async def go() -> int:
        if args.action == "add":
            accounts.check_viewer(args.name)

            async def add(engine: Any) -> None:
                # The store is checked before the password is asked for, not after it was typed twice.
                await accounts.add_viewer(engine, args.name, _read_password(args.name), args.operator)

            await _with_engine(url, add)
            print(
                f"added dashboard login {args.name!r}: sign in on the dashboard's login page "
                "with this name and password",
                file=sys.stderr,
            )
            return 0
        if args.action in ("grant", "revoke"):
            on = args.action == "grant"
            if not await _with_engine(url, lambda e: accounts.set_operator(e, args.name, on)):
                return _err("user", f"no dashboard login named {args.name!r}")
            print(f"{args.name!r} {'is now' if on else 'is no longer'} an operator", file=sys.stderr)
            return 0
        if args.action == "list":
            ops = await _with_engine(url, accounts.list_operators)
            for name, created in await _with_engine(url, accounts.list_viewers):
                role = "\toperator" if name in ops else ""
                print(f"{name}\tcreated {time.strftime('%Y-%m-%d %H:%M', time.localtime(created))}{role}")
            return 0
        if not await _with_engine(url, lambda e: accounts.remove_viewer(e, args.name)):
            return _err("user", f"no dashboard login named {args.name!r}")
        print(f"removed dashboard login {args.name!r}", file=sys.stderr)
        return 0

    return _run("user", go)


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"port {port} is out of range (1-65535)")
    return port


def serve_main(argv: list[str]) -> int:
    p = _Parser(
        prog="paneboard serve",
        description="Run the paneboard server: the dashboard, its API and live stream, and the endpoint "
        "collectors (`paneboard agent --server URL`) send their panes to. Ctrl-C stops it.",
    )
    p.add_argument(
        "--host",
        metavar="ADDRESS",
        help="address to listen on (default 127.0.0.1: this machine only; 0.0.0.0: every interface)",
    )
    p.add_argument("--port", type=_port, metavar="PORT", help="TCP port to listen on, 1-65535 (default 8765)")
    _db_arg(p)
    p.add_argument(
        "--config",
        metavar="FILE",
        help="settings file in TOML (default: $PANEBOARD_CONFIG; see docs/operations.md)",
    )
    p.add_argument(
        "--migrate",
        action="store_true",
        help="create or upgrade the database before starting (what `paneboard db upgrade` does)",
    )
    p.add_argument(
        "--trusted-proxies",
        metavar="ADDRESSES",
        help="comma-separated addresses or networks of reverse proxies whose X-Forwarded-For is "
        "believed (default: server.trusted_proxies, none; see docs/operations.md)",
    )
    p.add_argument(
        "--public-url",
        metavar="URL",
        help="the http(s) address people reach the board at, e.g. https://board.example behind a proxy: "
        "notifications link to a pane's page under it (default: $PANEBOARD_PUBLIC_URL, else "
        "server.public_url)",
    )
    args = p.parse_args(argv)
    from .config import ConfigError, load_config

    try:
        cfg = load_config(args.config or os.environ.get("PANEBOARD_CONFIG"))
        if args.trusted_proxies is not None:
            cfg = cfg.with_trusted_proxies(args.trusted_proxies)
        if args.public_url is not None:
            cfg = cfg.with_public_url(args.public_url, "--public-url")
        elif os.environ.get("PANEBOARD_PUBLIC_URL"):
            cfg = cfg.with_public_url(os.environ["PANEBOARD_PUBLIC_URL"], "$PANEBOARD_PUBLIC_URL")
        url = resolve_url(args.db or cfg.server.db)
    except (ConfigError, DatabaseError) as exc:
        return _err("serve", str(exc))
    host = args.host or cfg.server.host
    port = cfg.server.port if args.port is None else args.port
    if args.migrate:
        try:
            upgrade(url)
        except DatabaseError as exc:
            return _err("serve", str(exc))
        except Exception as exc:
            return _err("serve", f"migration failed: {type(exc).__name__}: {str(exc).splitlines()[0]}")
    try:
        require_existing(url)
    except DatabaseError as exc:
        return _err("serve", str(exc))
    from .serve import run_server

    try:
        return run_server(cfg, url, host, port)
    except DatabaseError as exc:
        return _err("serve", str(exc))
    except OSError as exc:
        return _err("serve", str(exc))


def _base_url(text: str) -> str:
    """The board's address as a phone reaches it: http(s)://HOST[:PORT], no query."""
    from urllib.parse import urlsplit

    parts = urlsplit(text.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
        raise argparse.ArgumentTypeError(f"not an http(s) address of the board: {text!r}")
    return text.strip().rstrip("/")


def _minutes(text: str) -> float:
    from .auth import pairing

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of minutes: {text!r}") from None
    if not 0 < value <= pairing.MINUTES_MAX:
        raise argparse.ArgumentTypeError(
            f"{text} minutes: a link lasts more than 0 and at most {pairing.MINUTES_MAX}"
        )
    return value


def _who() -> str:
    """Who makes a link, for the audit: the user and host, and the SSH client if any."""
    import socket

    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = str(os.getuid())
    ssh = os.environ.get("SSH_CLIENT", "").split()
    return f"{user}@{socket.gethostname()} (paneboard pair" + (f", ssh from {ssh[0]})" if ssh else ")")


def pair_main(argv: list[str]) -> int:
    from .auth import pairing

    p = _Parser(
        prog="paneboard pair",
        description="Sign a phone in without typing a password: make a single-use sign-in link for an "
        "existing dashboard login and print it with a QR code to scan. The link works once, expires "
        f"within minutes ({pairing.MINUTES_DEFAULT} by default) and grants a plain login (the board, "
        "no answering prompts) unless --operator is given. Every link made, used or refused is "
        "audited (--audit shows it). See docs/phone.md.",
    )
    p.add_argument("name", metavar="NAME", nargs="?", help="the dashboard login the phone signs in as")
    p.add_argument(
        "--url",
        type=_base_url,
        metavar="URL",
        help="the board's address as the phone reaches it, e.g. https://board.example.org "
        "(required to make a link)",
    )
    p.add_argument(
        "--minutes",
        type=_minutes,
        default=pairing.MINUTES_DEFAULT,
        metavar="N",
        help=f"how long the link works if unused (default {pairing.MINUTES_DEFAULT}, "
        f"at most {pairing.MINUTES_MAX})",
    )
    p.add_argument(
        "--operator",
        action="store_true",
        help="the session may also answer prompts (only for a login that is an operator)",
    )
    p.add_argument(
        "--audit", action="store_true", help="show the latest pairing events instead of making a link"
    )
    _db_arg(p)
    args = p.parse_args(argv)
    try:
        url = resolve_url(args.db)
    except DatabaseError as exc:
        return _err("pair", str(exc))
    if args.audit:

        async def show() -> int:
            for row in reversed(await _with_engine(url, pairing.audit)):
                when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(row.t))
                print(
                    "\t".join(
                        [when, row.event, row.account or "-", row.role or "-", row.who, row.agent or "-"]
                    )
                )
            return 0

        return _run("pair", show)
    if not args.name:
        return _err("pair", "which login? `paneboard pair NAME --url URL`")
    if not args.url:
        return _err("pair", "--url is needed: the board's address as the phone reaches it (https://...)")

    async def make() -> int:
        import segno

        link = await _with_engine(
            url,
            lambda e: pairing.create_link(
                e, args.name, who=_who(), operator=args.operator, minutes=args.minutes
            ),
        )
        address = f"{args.url}/pair/{link.token}"
        role = (
            "operator (may answer prompts)" if link.operator else "plain (the board; cannot answer prompts)"
        )
        until = time.strftime("%H:%M:%S", time.localtime(link.expires_at))
        print(
            f"Sign-in link for {link.account!r}, role {role}: works once, until {until} "
            f"({args.minutes:g} min). Scan the code with the phone's camera, or open the link:",
            file=sys.stderr,
        )
        print(address)
        segno.make(address, error="m").terminal(out=sys.stdout, compact=True)
        sys.stdout.flush()
        if args.url.startswith("http://"):
            print(
                "note: over plain http a phone gets no push notifications and cannot install the "
                "board as an app (docs/phone.md)",
                file=sys.stderr,
            )
        return 0

    return _run("pair", make)
