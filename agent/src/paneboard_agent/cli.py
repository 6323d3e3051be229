"""`paneboard agent`: run the collector against local tmux and/or SSH hosts.

    paneboard agent [--config FILE] (--server URL --token T | --stdout)
                    [--local] [--tmux-socket NAME] [--ssh [USER@]HOST[:PORT] ...]
                    [--identity FILE] [--known-hosts FILE]

Flags add to what the config file lists: `--local` (or no host at all) watches this
machine; each `--ssh` adds a host, using `--identity`/`--known-hosts`/`--tmux-socket`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import logging
import os
import signal
import socket
import sys
from collections.abc import Sequence

from paneboard_protocol.cli_args import OneLineParser

from paneboard_agent.config import Config, ConfigError, HostConfig, load_config, parse_ssh_spec

_Parser = functools.partial(OneLineParser, help_hint=False)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="paneboard agent", description="Watch tmux panes (locally or over SSH) and classify them."
    )
    p.add_argument("--config", metavar="FILE", help="TOML file listing hosts (see docs/collector.md)")
    out = p.add_argument_group("output (one of)")
    out.add_argument("--stdout", action="store_true", help="print one JSON line per change of a pane")
    out.add_argument("--server", metavar="URL", help="send to a paneboard server (with --token)")
    out.add_argument(
        "--token",
        metavar="T",
        default=os.environ.get("PANEBOARD_TOKEN") or None,
        help="the collector token for --server (default: $PANEBOARD_TOKEN, which keeps it "
        "out of the process list)",
    )
    p.add_argument("--local", action="store_true", help="watch tmux on this machine")
    p.add_argument("--tmux-socket", metavar="NAME", help="tmux socket name (tmux -L NAME) for --local/--ssh")
    p.add_argument(
        "--ssh",
        metavar="[USER@]HOST[:PORT]",
        action="append",
        default=[],
        help="watch tmux on HOST (repeatable)",
    )
    p.add_argument("--identity", metavar="FILE", action="append", default=[], help="SSH client key for --ssh")
    p.add_argument("--known-hosts", metavar="FILE", help="known_hosts for --ssh (default ~/.ssh/known_hosts)")
    p.add_argument("-v", "--verbose", action="store_true", help="log what the collector does")
    return p


def hosts_from_args(args: argparse.Namespace, config: Config) -> list[HostConfig]:
    hosts = list(config.hosts)
    if args.tmux_socket is not None and ("/" in args.tmux_socket or not args.tmux_socket):
        raise ConfigError("--tmux-socket: a socket name (tmux -L), not a path")
    for spec in args.ssh:
        user, host, port = parse_ssh_spec(spec)
        hosts.append(
            HostConfig(
                host=host,
                port=port,
                user=user,
                identity=tuple(args.identity),
                known_hosts=args.known_hosts,
                tmux_socket=args.tmux_socket,
            )
        )
    if args.local or not hosts:
        hosts.append(HostConfig(host=None, tmux_socket=args.tmux_socket))
    return hosts


def make_targets(hosts: Sequence[HostConfig]) -> list:
    from paneboard_agent.collector import TmuxTarget
    from paneboard_agent.transport_local import LocalTransport
    from paneboard_agent.transport_ssh import SSHTarget, SSHTransport

    targets = []
    ssh: dict[tuple, SSHTransport] = {}  # one transport (connection pool) per host and login
    for h in hosts:
        if h.local:
            transport = LocalTransport(socket.gethostname())
        else:
            assert h.host is not None
            ident = (h.host, h.port, h.user, h.identity, h.known_hosts, h.connect_timeout)
            if ident not in ssh:
                ssh[ident] = SSHTransport(
                    SSHTarget(
                        host=h.host,
                        port=h.port,
                        user=h.user,
                        identity=h.identity,
                        known_hosts=h.known_hosts,
                        connect_timeout=h.connect_timeout,
                    )
                )
            transport = ssh[ident]
        targets.append(
            TmuxTarget(
                transport=transport,
                socket=h.tmux_socket,
                socket_path=h.tmux_socket_path,
                include=h.include,
                exclude=h.exclude,
            )
        )
    return targets


async def _run(args: argparse.Namespace, config: Config, hosts: list[HostConfig]) -> int:
    from paneboard_protocol.rules import load_rules

    from paneboard_agent.collector import Collector, Options

    def read_rules():
        try:
            rules = load_rules(config.rules_dir)
        except OSError as exc:  # the bundled manifests are missing from this installation
            print(f"paneboard agent: rules: bundled manifests unavailable ({exc})", file=sys.stderr)
            rules = load_rules(config.rules_dir, bundled=False)
        for err in rules.errors:
            print(f"paneboard agent: rules: {err}", file=sys.stderr)
        return rules

    rules = read_rules()
    options = Options(poll_interval=config.poll_interval, transports=config.transports, rules=rules)
    uplink = None
    if args.stdout:
        from paneboard_agent.stdout_sink import StdoutSink

        sink = StdoutSink()
    else:
        try:
            from paneboard_agent.uplink import UplinkSink
        except ImportError as exc:
            print(f"paneboard agent: --server is not available in this installation ({exc})", file=sys.stderr)
            return 2
        uplink = UplinkSink(args.server, args.token)
        sink = uplink
    collector = Collector(make_targets(hosts), sink, options)
    if uplink is not None:
        uplink.attach(collector)
        if hasattr(uplink, "on_seen"):  # the server says the user looked: done -> idle
            uplink.on_seen = collector.mark_seen
        await uplink.start()
    loop = asyncio.get_running_loop()
    main = asyncio.current_task()
    assert main is not None
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, main.cancel)

    def reload() -> None:  # SIGHUP: read the screen rules again (TA-17)
        collector.set_rules(read_rules())
        print("paneboard agent: rules reloaded", file=sys.stderr)

    with contextlib.suppress(NotImplementedError, RuntimeError):
        loop.add_signal_handler(signal.SIGHUP, reload)
    try:
        return await collector.run()
    except asyncio.CancelledError:
        return 0
    finally:
        if uplink is not None:
            with contextlib.suppress(Exception):
                await uplink.close()


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    if args.stdout == bool(args.server):
        print("paneboard agent: give exactly one of --stdout or --server URL", file=sys.stderr)
        return 2
    if args.server and not args.token:
        print("paneboard agent: --server needs --token (or $PANEBOARD_TOKEN)", file=sys.stderr)
        return 2
    if args.server:
        from .uplink import ingest_url

        try:
            ingest_url(args.server)  # checked before anything starts: a bad URL is one line
        except ValueError as exc:
            print(f"paneboard agent: {exc}", file=sys.stderr)
            return 2
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="paneboard agent: %(message)s",
        stream=sys.stderr,
    )
    logging.getLogger("asyncssh").setLevel(logging.WARNING if args.verbose else logging.CRITICAL)
    try:
        config = load_config(args.config) if args.config else Config()
        hosts = hosts_from_args(args, config)
    except ConfigError as exc:
        print(f"paneboard agent: {exc}", file=sys.stderr)
        return 2
    try:
        return asyncio.run(_run(args, config, hosts))
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
