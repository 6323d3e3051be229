"""`paneboard rules check [DIR]` and `paneboard rules list [--rules DIR]`.

`check` is what a rule author runs after editing a manifest: every broken manifest
(bad TOML, unknown key, regex that does not compile, unknown state …) is printed as
`file:line: reason`, and the exit status is 1 when there is any. `list` answers
"which manifest is in force for each id" — bundled, or the user file that replaced
it (TA-17).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from paneboard_protocol.cli_args import OneLineParser
from paneboard_protocol.rules import default_user_dir, load_rules

PROG = "paneboard rules"


_Parser = OneLineParser


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog=PROG, description="Check or list screen-rule manifests.")
    sub = p.add_subparsers(dest="cmd", metavar="{check,list}", parser_class=_Parser)
    c = sub.add_parser("check", help="report broken manifests as file:line: reason; exit 1 if any")
    c.add_argument(
        "dir", nargs="?", metavar="DIR", help="rules directory (default: the user rules directory)"
    )
    c.add_argument("--no-bundled", action="store_true", help="check DIR only, not the bundled manifests")
    ls = sub.add_parser("list", help="show which manifest won for each id (bundled or user file)")
    ls.add_argument(
        "--rules", metavar="DIR", help="user rules directory (default $PANEBOARD_RULES or ~/.config/…)"
    )
    return p


def _check(directory: str | None, bundled: bool) -> int:
    path = Path(directory) if directory is not None else default_user_dir()
    if directory is not None and not path.is_dir():
        print(f"{PROG} check: {directory}: not a directory", file=sys.stderr)
        return 2
    rules = load_rules(path, bundled=bundled)
    for err in rules.errors:
        print(err)
    users = sum(1 for m in rules.manifests if m.origin == "user")
    if rules.errors:
        print(f"{PROG} check: {len(rules.errors)} broken manifest(s)", file=sys.stderr)
        return 1
    print(f"ok: {len(rules.manifests)} manifests in force ({users} from {path})")
    return 0


def _list(directory: str | None) -> int:
    rules = load_rules(directory)
    rows = [("ID", "AGENT", "ORIGIN", "PROCESS", "FILE")]
    for m in sorted(rules.manifests, key=lambda m: m.id):
        rows.append((m.id, m.agent, m.origin, ",".join(m.process) or "-", m.path))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    for r in rows:
        print("  ".join(f"{cell:<{w}}" for cell, w in zip(r[:4], widths, strict=True)) + "  " + r[4])
    for err in rules.errors:
        print(f"{PROG} list: broken, not used: {err}", file=sys.stderr)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    try:
        if args.cmd == "check":
            return _check(args.dir, not args.no_bundled)
        if args.cmd == "list":
            return _list(args.rules)
    except BrokenPipeError:
        return 0
    print(f"{PROG}: give a subcommand: check [DIR] | list (try `{PROG} --help`)", file=sys.stderr)
    return 2
