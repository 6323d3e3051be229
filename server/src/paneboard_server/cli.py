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
from collections.abc import Awaitable, Callable
from typing import Any

from paneboard_protocol.cli_args import OneLineParser

from .database import DatabaseError, create_engine, redact, resolve_url


def _err(cmd: str, msg: str) -> int:
    print(f"paneboard {cmd}: {msg}", file=sys.stderr)
    return 1


_Parser = functools.partial(OneLineParser, help_hint=False)


def _db_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--db",
        help="database URL or SQLite file (default: $PANEBOARD_DB or ~/.local/share/paneboard/paneboard.db)",
    )


async def _with_engine(url: str, fn: Callable[[Any], Awaitable[Any]], check: bool = True) -> Any:
    from .migrate import check_schema

    engine = create_engine(url)
    try:
        if check:
            await check_schema(engine)
        return await fn(engine)
    finally:
        await engine.dispose()


def _run(cmd: str, coro_fn: Callable[[], Awaitable[int]]) -> int:
    from .accounts import AccountError

    try:
        return asyncio.run(coro_fn())
    except (DatabaseError, AccountError) as exc:
        return _err(cmd, str(exc))
    except OSError as exc:
        return _err(cmd, f"database unavailable: {exc}")
    except Exception as exc:  # SQLAlchemy/driver errors: one line, never a traceback
        return _err(cmd, f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")


def db_main(argv: list[str]) -> int:
    p = _Parser(prog="paneboard db", description="Upgrade the database schema or show its revision.")
    p.add_argument("action", choices=["upgrade", "current"])
    _db_arg(p)
    args = p.parse_args(argv)
    try:
        url = resolve_url(args.db)
    except DatabaseError as exc:
        return _err("db", str(exc))
    from .migrate import current_revision, head_revision, upgrade

    if args.action == "upgrade":
        try:
            upgrade(url)
        except DatabaseError as exc:
            return _err("db", str(exc))
        except Exception as exc:
            return _err("db", f"upgrade failed: {type(exc).__name__}: {str(exc).splitlines()[0]}")
        print(f"database {redact(url)} is at revision {head_revision()}", file=sys.stderr)
        return 0

    async def current() -> int:
        rev = await _with_engine(url, current_revision, check=False)
        head = head_revision()
        note = "head" if rev == head else f"head is {head}: run `paneboard db upgrade`"
        print(f"{rev or 'none'} ({note})")
        return 0

    return _run("db", current)


def token_main(argv: list[str]) -> int:
    from . import accounts

    p = _Parser(prog="paneboard token", description="Collector and read-only viewer tokens.")
    sub = p.add_subparsers(dest="action", required=True, parser_class=_Parser)
    c = sub.add_parser("create", help="create a token and print it (alone, on stdout)")
    c.add_argument("name")
    c.add_argument("--viewer", action="store_true", help="a read-only viewer token (scripts, wall screens)")
    _db_arg(c)
    ls = sub.add_parser("list", help="list tokens (never their values)")
    _db_arg(ls)
    r = sub.add_parser("revoke", help="revoke a token by name")
    r.add_argument("name")
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
            token = await _with_engine(url, lambda e: accounts.create_token(e, args.name, kind))
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
                print(f"{t.name}\t{t.kind}\t{state}\tlast used {used}")
            return 0
        kind = "viewer" if args.viewer else "collector" if args.collector else None
        n = await _with_engine(url, lambda e: accounts.revoke_token(e, args.name, kind))
        if not n:
            return _err("token", f"no active token named {args.name!r}")
        print(f"revoked {n} token(s) named {args.name!r}", file=sys.stderr)
        return 0

    return _run("token", go)


def _read_password() -> str:
    if not sys.stdin.isatty():
        line = sys.stdin.readline()
        return line.rstrip("\r\n")
    first = getpass.getpass("password: ")
    second = getpass.getpass("again: ")
    if first != second:
        from .accounts import AccountError

        raise AccountError("the passwords differ")
    return first


def user_main(argv: list[str]) -> int:
    from . import accounts

    p = _Parser(prog="paneboard user", description="Dashboard viewer accounts.")
    sub = p.add_subparsers(dest="action", required=True, parser_class=_Parser)
    a = sub.add_parser("add", help="add a viewer (password from stdin when it is not a terminal)")
    a.add_argument("name")
    _db_arg(a)
    ls = sub.add_parser("list")
    _db_arg(ls)
    r = sub.add_parser("remove")
    r.add_argument("name")
    _db_arg(r)
    args = p.parse_args(argv)
    try:
        url = resolve_url(args.db)
    except DatabaseError as exc:
        return _err("user", str(exc))

    async def go() -> int:
        if args.action == "add":
            password = _read_password()
            await _with_engine(url, lambda e: accounts.add_viewer(e, args.name, password))
            print(f"added viewer {args.name!r}", file=sys.stderr)
            return 0
        if args.action == "list":
            for name, created in await _with_engine(url, accounts.list_viewers):
                print(f"{name}\tcreated {time.strftime('%Y-%m-%d %H:%M', time.localtime(created))}")
            return 0
        if not await _with_engine(url, lambda e: accounts.remove_viewer(e, args.name)):
            return _err("user", f"no viewer named {args.name!r}")
        print(f"removed viewer {args.name!r}", file=sys.stderr)
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
    p = _Parser(prog="paneboard serve", description="Run the server (API, live stream, dashboard).")
    p.add_argument("--host", help="address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=_port, help="port, 1-65535 (default 8765)")
    _db_arg(p)
    p.add_argument("--config", help="TOML configuration file")
    p.add_argument("--migrate", action="store_true", help="upgrade the database schema first")
    args = p.parse_args(argv)
    from .config import ConfigError, load_config

    try:
        cfg = load_config(args.config or os.environ.get("PANEBOARD_CONFIG"))
        from .notify.service import NotifySettings

        NotifySettings.from_config(cfg.notify)  # a bad [notify] table fails here, in one line
        url = resolve_url(args.db or cfg.server.db)
    except (ConfigError, DatabaseError) as exc:
        return _err("serve", str(exc))
    host = args.host or cfg.server.host
    port = cfg.server.port if args.port is None else args.port
    if args.migrate:
        from .migrate import upgrade

        try:
            upgrade(url)
        except Exception as exc:
            return _err("serve", f"migration failed: {type(exc).__name__}: {str(exc).splitlines()[0]}")
    from .serve import run_server

    try:
        return run_server(cfg, url, host, port)
    except DatabaseError as exc:
        return _err("serve", str(exc))
    except OSError as exc:
        return _err("serve", str(exc))
