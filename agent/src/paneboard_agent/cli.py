"""`paneboard agent`: run the collector against local tmux and/or SSH hosts.

    paneboard agent [--config FILE] (--server URL --token T | --stdout)
                    [--local] [--tmux-socket NAME] [--ssh [USER@]HOST[:PORT] ...]
                    [--identity FILE] [--known-hosts FILE] [--ssh-config FILE]
                    [--no-screens] [--allow-input] [--wait-for-tmux] [-v]

Flags add to what the config file lists: `--local` (or no host at all) watches this
machine; each `--ssh` adds a host, using `--identity`/`--known-hosts`/`--tmux-socket`.
A `--tmux-socket` right after an `--ssh` is that host's own (`--ssh b1 --tmux-socket
work --ssh b2`); one before any `--ssh` is every other host's, as it always was.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import functools
import logging
import os
import signal
import socket
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from paneboard_protocol.cli_args import OneLineParser

from paneboard_agent.config import Config, ConfigError, HostConfig, load_config, parse_ssh_spec

if TYPE_CHECKING:
    from paneboard_protocol.rules import RuleSet

_Parser = functools.partial(OneLineParser, help_hint=False)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="paneboard agent",
        description="Watch the panes of tmux on this machine and on hosts reached over SSH, work out "
        "what the program in each is doing (working, waiting for an answer, done, ...), and print "
        "every change or send it to a paneboard server. With no host given it watches this machine.",
    )
    p.add_argument(
        "--config",
        metavar="FILE",
        help="a TOML file listing the hosts to watch and other settings (see docs/collector.md); "
        "hosts given as options are added to it",
    )
    out = p.add_argument_group("where the changes go (one of)")
    out.add_argument(
        "--stdout", action="store_true", help="print one JSON line each time a pane's state changes"
    )
    out.add_argument(
        "--server",
        metavar="URL",
        help="send them to the paneboard server at URL, e.g. http://board:8000 (needs --token)",
    )
    out.add_argument(
        "--token",
        metavar="T",
        default=os.environ.get("PANEBOARD_TOKEN") or None,
        help="the collector token for --server (default: $PANEBOARD_TOKEN, which keeps it "
        "out of the process list)",
    )
    out.add_argument(
        "--explain",
        action="store_true",
        help="with --stdout: each line also names the process taken for the pane's program "
        '("process"), when a wrapper leads the pane, why that one ("why"), and in words what '
        'decided its state ("decided"); each report a pane wrote that the spec discards is '
        'a line of its own, with why ("discarded", "reason")',
    )
    p.add_argument(
        "--local", action="store_true", help="watch tmux on this machine (the default when no host is given)"
    )
    p.add_argument(
        "--tmux-socket",
        metavar="NAME",
        action=_InOrder,
        help="watch the tmux server started as `tmux -L NAME` instead of the default one; "
        "after an --ssh for that host only, else for --local and every --ssh",
    )
    p.add_argument(
        "--ssh",
        metavar="[USER@]HOST[:PORT]",
        action=_InOrder,
        default=[],
        help="watch tmux on this SSH host; repeat for more hosts (IPv6 as [::1]:2222)",
    )
    p.add_argument(
        "--identity",
        metavar="FILE",
        action="append",
        default=[],
        help="the private key to log in with over SSH (repeatable); only these keys are offered",
    )
    p.add_argument(
        "--known-hosts",
        metavar="FILE",
        help="the trusted SSH host keys (default ~/.ssh/known_hosts); a host not in it is refused",
    )
    p.add_argument(
        "--ssh-config",
        metavar="FILE",
        help="the OpenSSH client config to honour for every SSH host (Host aliases, HostName, User, "
        "Port, IdentityFile, ProxyJump, UserKnownHostsFile...); default ~/.ssh/config when it exists, "
        "`none` reads none",
    )
    p.add_argument(
        "--no-screens",
        action="store_true",
        help="never show a pane's screen to the board, for any host (per host: screens = false)",
    )
    p.add_argument(
        "--allow-input",
        action="store_true",
        help="let the board's operators answer a blocked prompt (its declared answer, or free text), "
        "send an idle agent a follow-up and press Esc, Ctrl-C or a selecting key, typed into the pane "
        "only while it still shows what they saw; a follow-up runs code as the pane's user (off by "
        "default; per host: allow_input = true; see docs/answers.md)",
    )
    p.add_argument(
        "--wait-for-tmux",
        action="store_true",
        help="if no tmux server runs yet on a watched socket, wait for one (default: exit with the reason)",
    )
    p.add_argument(
        "-v", "--verbose", action="store_true", help="also log what it attaches to and each step it takes"
    )
    return p


class _InOrder(argparse.Action):
    """`--ssh` (appended) and `--tmux-socket` (the last one kept, as before), also
    recorded in the order given: a `--tmux-socket` right after an `--ssh` is that
    host's own (`hosts_from_args`)."""

    def __call__(self, parser: Any, ns: argparse.Namespace, value: Any, option: Any = None) -> None:
        order = list(getattr(ns, "host_order", None) or [])
        ns.host_order = [*order, (self.dest, value)]
        if self.dest == "ssh":
            ns.ssh = [*(getattr(ns, "ssh", None) or []), value]
        else:
            setattr(ns, self.dest, value)


def _socket_plan(args: argparse.Namespace) -> tuple[str | None, list[str | None]]:
    """The default socket (a `--tmux-socket` before any `--ssh`, for --local and every
    host without its own) and each `--ssh` host's own (one right after it)."""
    default: str | None = None
    own: list[str | None] = []
    for dest, value in getattr(args, "host_order", None) or []:
        if dest == "ssh":
            own.append(None)
        elif own and own[-1] is None:
            own[-1] = value
        elif not own:
            default = value
        else:
            raise ConfigError(f"--tmux-socket {value}: a second one for the same --ssh host")
    if not getattr(args, "host_order", None) and args.tmux_socket is not None:
        default = args.tmux_socket  # a namespace made without the parser
    for name in [default, *own]:
        if name is not None and ("/" in name or not name):
            raise ConfigError("--tmux-socket: a socket name (tmux -L), not a path")
    return default, own or [None] * len(args.ssh)


def hosts_from_args(args: argparse.Namespace, config: Config) -> list[HostConfig]:
    hosts = list(config.hosts)
    default, own = _socket_plan(args)
    for spec, sock in zip(args.ssh, own, strict=True):
        user, host, port = parse_ssh_spec(spec)
        hosts.append(
            HostConfig(
                host=host,
                port=port,
                user=user,
                identity=tuple(args.identity),
                known_hosts=args.known_hosts,
                tmux_socket=sock if sock is not None else default,
            )
        )
    if args.local or not hosts:
        hosts.append(HostConfig(host=None, tmux_socket=default))
    if getattr(args, "allow_input", False):
        hosts = [dataclasses.replace(h, allow_input=True) for h in hosts]
    if getattr(args, "no_screens", False):  # wins over everything: no screen, nothing typed
        hosts = [dataclasses.replace(h, screens=False, allow_input=False) for h in hosts]
    return hosts


def ssh_config_for(h: HostConfig, chosen: str | None) -> str | None:
    """The ssh config file a host honours: its own, else the CLI's/top-level one, else
    ~/.ssh/config when it exists; "none" anywhere along that order means none."""
    from paneboard_agent.transport.ssh_config import default_ssh_config

    pick = h.ssh_config or chosen
    if pick is None:
        return default_ssh_config()
    return None if pick.lower() == "none" else pick


def make_targets(hosts: Sequence[HostConfig], ssh_config: str | None = None) -> list:
    from paneboard_agent.collector import TmuxTarget
    from paneboard_agent.transport import LocalTransport, Transport
    from paneboard_agent.transport.ssh import SSHTarget, SSHTransport

    targets = []
    ssh: dict[tuple, SSHTransport] = {}  # one transport (connection pool) per host and login
    for h in hosts:
        transport: Transport
        if h.local:
            transport = LocalTransport(socket.gethostname())
        else:
            assert h.host is not None
            cfg = ssh_config_for(h, ssh_config)
            ident = (h.host, h.port, h.user, h.identity, h.known_hosts, h.connect_timeout, cfg)
            if ident not in ssh:
                ssh[ident] = SSHTransport(
                    SSHTarget(
                        host=h.host,
                        port=h.port,
                        user=h.user,
                        identity=h.identity,
                        known_hosts=h.known_hosts,
                        connect_timeout=h.connect_timeout,
                        ssh_config=cfg,
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
                screens=h.screens,
                allow_input=h.allow_input and h.screens,
            )
        )
    return targets


async def _run(args: argparse.Namespace, config: Config, hosts: list[HostConfig]) -> int:
    from paneboard_protocol.rules import load_rules

    from paneboard_agent.collector import Collector, Options

    def read_rules() -> RuleSet:
        try:
            rules = load_rules(config.rules_dir)
        except OSError as exc:  # the bundled manifests are missing from this installation
            print(f"paneboard agent: rules: bundled manifests unavailable ({exc})", file=sys.stderr)
            rules = load_rules(config.rules_dir, bundled=False)
        for err in rules.errors:
            print(f"paneboard agent: rules: {err}", file=sys.stderr)
        return rules

    rules = read_rules()
    options = Options(
        poll_interval=config.poll_interval,
        reread=config.screen_reread,
        transports=config.transports,
        rules=rules,
        wait_for_tmux=args.wait_for_tmux,
    )
    targets = make_targets(hosts, args.ssh_config or config.ssh_config)
    uplink = None
    if args.stdout:
        from paneboard_agent.uplink import StdoutSink

        sink = StdoutSink(explain=args.explain)
        if args.explain:
            options = dataclasses.replace(options, discarded=sink.discarded)
        collector = Collector(targets, sink, options)
    else:
        try:
            from paneboard_agent.uplink import UplinkSink
        except ImportError as exc:
            print(f"paneboard agent: --server is not available in this installation ({exc})", file=sys.stderr)
            return 2
        # The uplink is the collector's sink and side, the collector its source and
        # commands: made first, it is started with the collector once that exists.
        uplink = UplinkSink(args.server, args.token)
        collector = Collector(targets, uplink, options, side=uplink.send_side)
        for watcher in collector.watchers:
            if watcher.target.allow_input:
                print(
                    f"paneboard agent: {watcher.host}: answers from the board may be typed (--allow-input)",
                    file=sys.stderr,
                )
        await uplink.start(source=collector, commands=collector)
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
    watching = asyncio.create_task(collector.run(), name="collector")
    waits: set[asyncio.Future] = {watching}
    if uplink is not None:  # a refused token ends the uplink: then nothing is worth watching for
        waits.add(asyncio.ensure_future(uplink.failed.wait()))
    fatal: str | None = None
    try:
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        if watching.done():
            return watching.result()
        fatal = uplink.fatal if uplink is not None else None
        return 1
    except asyncio.CancelledError:
        return 0
    finally:
        for w in waits:
            w.cancel()
        await _stopped(watching)
        if uplink is not None:
            with contextlib.suppress(Exception):
                await uplink.close()
        if fatal is not None:  # last, so that it is the last line a person reads
            print(f"paneboard agent: {fatal}; exiting", file=sys.stderr)


async def _stopped(task: asyncio.Task) -> None:
    """Cancel `task` and wait for it; cancel again if a cancellation was lost (Python 3.11's
    `wait_for` can swallow one that arrives as its inner await completes)."""
    while not task.done():
        task.cancel()
        await asyncio.wait({task}, timeout=1.0)
    with contextlib.suppress(asyncio.CancelledError, Exception):
        task.result()


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    if args.stdout == bool(args.server):
        print("paneboard agent: give exactly one of --stdout or --server URL", file=sys.stderr)
        return 2
    if args.explain and not args.stdout:
        print("paneboard agent: --explain goes with --stdout", file=sys.stderr)
        return 2
    if args.server and not args.token:
        print("paneboard agent: --server needs --token (or $PANEBOARD_TOKEN)", file=sys.stderr)
        return 2
    if args.server:
        from paneboard_agent.uplink import ingest_url

        try:
            ingest_url(args.server)  # checked before anything starts: a bad URL is one line
        except ValueError as exc:
            print(f"paneboard agent: {exc}", file=sys.stderr)
            return 2
    # One line per connection made, lost and regained, always; -v adds the details.
    logging.basicConfig(level=logging.WARNING, format="paneboard agent: %(message)s", stream=sys.stderr)
    for name in ("paneboard", "paneboard_agent"):
        logging.getLogger(name).setLevel(logging.DEBUG if args.verbose else logging.INFO)
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
