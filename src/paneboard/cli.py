"""The `paneboard` command: one entry point, subcommands owned by the member packages.

Each subcommand lives beside the code it drives (the decoder's tools in
`paneboard_protocol`, the collector's in `paneboard_agent`, the server's in
`paneboard_server`) and is imported only when it is run, so `paneboard decode` never
pays for importing FastAPI and a host with only `paneboard-agent` installed can still
run `paneboard agent`. Every subcommand is a `main(argv) -> int` function, its parser
a `paneboard_protocol.cli_args.OneLineParser`: a mistyped --option gets a "did you
mean --x?" there (difflib), as a mistyped command does here.
"""

from __future__ import annotations

import difflib
import importlib
import sys
from collections.abc import Sequence

# name -> (module, function, one-line summary)
COMMANDS: dict[str, tuple[str, str, str]] = {
    "demo": ("paneboard.demo", "main", "everything at once on a private tmux and a throw-away SQLite"),
    "serve": ("paneboard_server.cli", "serve_main", "run the server (API, live stream, dashboard)"),
    "agent": ("paneboard_agent.cli", "main", "run the collector (local tmux or over SSH)"),
    "token": ("paneboard_server.cli", "token_main", "create, list or revoke collector/viewer tokens"),
    "user": ("paneboard_server.cli", "user_main", "add, list or remove dashboard viewers"),
    "pair": ("paneboard_server.cli", "pair_main", "sign a phone in with a single-use link and QR code"),
    "db": ("paneboard_server.cli", "db_main", "upgrade the database schema or show its revision"),
    "status": ("paneboard.status", "main", "the panes and their states, from a server or the local tmux"),
    "decode": ("paneboard_protocol.decode_cli", "main", "print the status sequences in raw pane output"),
    "replay": ("paneboard_protocol.replay_cli", "main", "drive the classifier from a recorded trace"),
    "rules": ("paneboard_protocol.rules_cli", "main", "check, list or explain the screen rules"),
    "run": (
        "paneboard_agent.tools.relay",
        "main",
        "run a program behind a pty relay that answers the 7501 probe",
    ),
    "emit": ("paneboard_agent.tools.emit", "main", "write a status report to the controlling terminal"),
    "ask": ("paneboard_agent.tools.ask", "main", "ask at the terminal, blocked on the board until answered"),
}


def _usage() -> str:
    width = max(len(name) for name in COMMANDS)
    lines = ["usage: paneboard COMMAND [ARGS...]", "", "commands:"]
    lines += [f"  {name:<{width}}  {summary}" for name, (_, _, summary) in COMMANDS.items()]
    lines += ["", "Run `paneboard COMMAND --help` for a command's options."]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in {"-h", "--help", "help"}:
        print(_usage())
        return 0 if args else 2
    if args[0] == "--version":
        from paneboard import __version__

        print(f"paneboard {__version__}")
        return 0
    name, rest = args[0], args[1:]
    if name not in COMMANDS:
        close = difflib.get_close_matches(name, list(COMMANDS), n=1, cutoff=0.6)
        hint = f"; did you mean `paneboard {close[0]}`?" if close else ""
        print(f"paneboard: unknown command {name!r}{hint} (try `paneboard --help`)", file=sys.stderr)
        return 2
    module_name, func_name, _ = COMMANDS[name]
    try:
        module = importlib.import_module(module_name)
        func = getattr(module, func_name)
    except (ImportError, AttributeError) as exc:
        print(f"paneboard {name}: not available in this installation ({exc})", file=sys.stderr)
        return 2
    try:
        return int(func(rest) or 0)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
