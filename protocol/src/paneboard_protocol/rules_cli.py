"""`paneboard rules check [DIR]`, `paneboard rules list [--rules DIR]` and
`paneboard rules explain SCREENFILE [--agent A] [--title T] [--progress P] [--rules DIR]`.

`check` is what a rule author runs after editing a manifest: every broken manifest
(bad TOML, unknown key, regex that does not compile, unknown state …) is printed as
`file:line: reason`, and the exit status is 1 when there is any. `list` answers
"which manifest is in force for each id" — bundled, or the user file that replaced
it. `explain` answers the manifest author's question: on this screen, which manifest
and rule matched, on which region and line, and why each other rule did not.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from paneboard_protocol.cli_args import OneLineParser
from paneboard_protocol.rules import Manifest, RuleSet, default_user_dir, load_rules
from paneboard_protocol.rules.explain import report

MAX_SCREEN_FILE = 1 << 20
"""A screen capture is a few kilobytes; anything this big is not one."""

PROG = "paneboard rules"


def _parser() -> argparse.ArgumentParser:
    p = OneLineParser(
        prog=PROG,
        description="Check, list and explain the screen rules that tell an agent's state from its screen.",
    )
    sub = p.add_subparsers(dest="cmd", metavar="{check,list,explain}", parser_class=OneLineParser)
    c = sub.add_parser(
        "check",
        help="report broken manifests as file:line: reason; exit 1 if any",
        description="Load the bundled manifests and those in DIR; print each broken one as "
        "file:line: reason and exit 1 if there is any.",
    )
    c.add_argument("dir", nargs="?", metavar="DIR", help="rules directory (default: your rules directory)")
    c.add_argument("--no-bundled", action="store_true", help="check DIR only, not the bundled manifests")
    ls = sub.add_parser(
        "list",
        help="show which manifest is used for each id (bundled, or your file that replaces it)",
        description="Show, for each manifest id, whether the bundled manifest or your own file is used.",
    )
    ls.add_argument(
        "--rules",
        metavar="DIR",
        help="your rules directory (default $PANEBOARD_RULES or ~/.config/paneboard/rules)",
    )
    ex = sub.add_parser(
        "explain",
        help="say which rule matches a saved screen, where, and why the others do not",
        description="Read a saved screen (e.g. `tmux capture-pane -p > screen.txt`) through the "
        "manifests and say, in plain words, which rule matched, on which region and line, the "
        "question it reads, and for every other rule the condition that failed.",
    )
    ex.add_argument("screen", metavar="SCREENFILE", help="a text file holding the pane's visible screen")
    ex.add_argument(
        "--agent",
        metavar="A",
        help="only this agent's manifest (agent name or manifest id; default: every one)",
    )
    ex.add_argument(
        "--title", metavar="T", default="", help="the window title the program set (default: none)"
    )
    ex.add_argument(
        "--progress", metavar="P", default="", help='the OSC 9;4 progress it sent, as "4;STATE;PERCENT"'
    )
    ex.add_argument(
        "--rules",
        metavar="DIR",
        help="your rules directory (default $PANEBOARD_RULES or ~/.config/paneboard/rules)",
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


def _explain(path: str, agent: str | None, title: str, progress: str, directory: str | None) -> int:
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_SCREEN_FILE + 1)
    except OSError as exc:
        print(f"{PROG} explain: {path}: cannot read: {exc.strerror or exc}", file=sys.stderr)
        return 2
    if len(data) > MAX_SCREEN_FILE:
        print(f"{PROG} explain: {path}: over {MAX_SCREEN_FILE} bytes; not a screen", file=sys.stderr)
        return 2
    screen = data.decode("utf-8", "replace")
    rules = load_rules(directory)
    for err in rules.errors:
        print(f"{PROG} explain: broken, not used: {err}", file=sys.stderr)
    manifests = _pick(rules, agent)
    if agent is not None and not manifests:
        known = ", ".join(sorted(rules.agents))
        print(f"{PROG} explain: no manifest for agent {agent!r} (known: {known})", file=sys.stderr)
        return 2
    unmatched = []
    shown = 0
    for m in manifests:
        if agent is None and m.match(screen, title, progress) is None:
            unmatched.append(m.id)
            continue
        if shown:
            print()
        print("\n".join(report(m, screen, title, progress)))
        shown += 1
    if unmatched:
        if shown:
            print()
        print(f"no rule of these manifests matches: {', '.join(unmatched)} (use --agent to see why)")
    return 0


def _pick(rules: RuleSet, agent: str | None) -> list[Manifest]:
    ordered = sorted(rules.manifests, key=lambda m: m.id)
    if agent is None:
        return ordered
    return [m for m in ordered if agent in (m.agent, m.id, *m.aliases)]


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    try:
        if args.cmd == "check":
            return _check(args.dir, not args.no_bundled)
        if args.cmd == "list":
            return _list(args.rules)
        if args.cmd == "explain":
            return _explain(args.screen, args.agent, args.title, args.progress, args.rules)
    except BrokenPipeError:
        return 0
    print(
        f"{PROG}: give a subcommand: check [DIR] | list | explain SCREENFILE (try `{PROG} --help`)",
        file=sys.stderr,
    )
    return 2
