"""`paneboard replay TRACE.jsonl [--rules DIR]` / `--raw FILE`: drive the classifier from a trace.

This is how a rule author checks a manifest against a recorded session, and how our
own tests replay one hand-written trace per spec rule through the real command. It
prints the pane's classification each time it changes, including changes that come
from time alone: a debounce that releases at t+0.45 prints at t+0.45, and a contract
that goes stale prints at its staleness instant (deadlines are evaluated between trace
lines). A bad line is reported with its line number and skipped; the exit status is 1
if any line was bad.

Trace lines (JSON objects, `t` in unix seconds, never decreasing):
  {"t": …, "output": "<text, escapes as \\u001b>"}   or "output_b64": "<base64 bytes>"
  {"t": …, "process": "claude", "pid": 12}         null: back to the shell / exited
  {"t": …, "process": "sleep", "pid": 13, "chain": [12, 1]}
                                                   with the pids above it, nearest first:
                                                   a report stays live while its writer is
                                                   in front or among them (RI-2)
  {"t": …, "group": [[10, 1, "bash -c claude"], [11, 10, "claude"]]}
                                                   the foreground group, leader first:
                                                   [pid, ppid, args]; the program is
                                                   chosen as the collector does (identity)
  {"t": …, "observable": false}                    the current process cannot be observed
  {"t": …, "screen": "<visible text>"}
  {"t": …, "seen": true}                           the user looked at the pane
  {"t": …}                                         time passes
Keys may be combined on one line; they apply in the order process/observable, output,
screen, seen.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import json
import math
import sys
from collections.abc import Iterator, Sequence
from typing import Any, TextIO

from paneboard_protocol.arbitration import Classification
from paneboard_protocol.classifier import PaneClassifier
from paneboard_protocol.cli_args import OneLineParser
from paneboard_protocol.debounce import CAP
from paneboard_protocol.decoder import Decoder
from paneboard_protocol.events import Event, Rejected
from paneboard_protocol.identity import Member, choose, process_identity, process_name
from paneboard_protocol.rules import RuleSet, load_rules
from paneboard_protocol.why import explain

PROG = "paneboard replay"
KEYS = frozenset(
    {"t", "output", "output_b64", "process", "pid", "chain", "group", "observable", "screen", "seen"}
)
MAX_CHAIN = 64
MAX_GROUP = 1024
MAX_LINE = 16 * 1024 * 1024
"""A trace line longer than this is refused rather than read into memory whole."""


def _parser() -> argparse.ArgumentParser:
    p = OneLineParser(
        prog=PROG,
        description="Play a recorded pane back through the classifier and print what it concludes "
        "each time that changes: one JSON line with t, agent, state, kind, source and msg. Use it to "
        "see why a pane was shown as it was, or to try screen rules on a recording.",
    )
    p.add_argument(
        "trace",
        nargs="?",
        metavar="TRACE.jsonl",
        help="the recording to play: a trace file of JSON lines ('-': stdin)",
    )
    p.add_argument(
        "--raw",
        metavar="FILE",
        help="play raw terminal output instead (e.g. from `tmux pipe-pane`), all at one moment",
    )
    p.add_argument(
        "--process", metavar="NAME", help="with --raw: the program that was running in the pane (e.g. claude)"
    )
    p.add_argument(
        "--explain",
        action="store_true",
        help='also name the screen rule that decided each state ("rule": manifest and rule id), '
        'why a process behind a wrapper names the program ("why") and, in words, what decided '
        'the state ("decided"); and print each discarded report with its reason ("discarded")',
    )
    p.add_argument(
        "--rules",
        metavar="DIR",
        help="a directory of your own screen-rule files, used beside the bundled ones "
        "(default: $PANEBOARD_RULES or ~/.config/paneboard/rules)",
    )
    return p


class BadLine(ValueError):
    """A trace line that cannot be applied."""


def _key(c: Classification) -> tuple[Any, ...]:
    return (c.agent, c.state, c.kind, c.source, c.msg)


def _out(t: float, c: Classification) -> dict[str, Any]:
    return {
        "t": round(t, 6),
        "agent": c.agent,
        "state": c.state,
        "kind": c.kind,
        "source": c.source,
        "msg": c.msg,
    }


class Replayer:
    """Feeds trace lines to one classifier and writes each change of classification."""

    def __init__(self, rules: RuleSet | None, out: TextIO, explain: bool = False) -> None:
        self.c = PaneClassifier(rules)
        self.explain = explain
        self.decoder = Decoder(rejections=True)
        self.out = out
        self.now: float | None = None
        self.printed = _key(Classification())
        self.proc: tuple[str | None, int | None, str | None] = (None, None, None)
        self.rules = rules

    def _agent_of(self, name: str) -> str | None:
        m = self.rules.for_process(process_identity(name)) if self.rules is not None else None
        return m.agent if m is not None else None

    def _choose(self, group: list[list[Any]]) -> tuple[str | None, int | None, str | None]:
        """The collector's choice (panes.observe): the leader when it names an agent,
        else the agent a manifest names in the group, else the leader as it is."""
        (lpid, _, largs), members = group[0], [Member(p, pp, a) for p, pp, a in group]
        lname = process_name(largs) or None
        if lname is not None and self._agent_of(lname) is not None:
            return lname, lpid, None
        choice = choose(lpid, largs, members, self._agent_of)
        if choice is not None:
            return choice.name, choice.pid, choice.why
        return lname, lpid, None

    def _emit(self, t: float) -> None:
        got = self.c.classification(t)
        if _key(got) != self.printed:
            self.printed = _key(got)
            obj = _out(t, got)
            if self.explain:
                obj["rule"] = None
                screen = self.c.evidence()["screen"]
                if got.source in ("screen", "native") and screen and screen.get("result"):
                    obj["rule"] = f"{screen['result']['manifest']}/{screen['result']['rule']}"
                obj["why"] = self.c.evidence()["process"]["why"]
                obj["decided"] = explain(self.c.evidence(), t).text
            self.out.write(json.dumps(obj, ensure_ascii=False) + "\n")

    def _feed(self, t: float, events: list[Event]) -> None:
        """Feed decoded events; with --explain, say of each discarded report why first
        (it stays discarded: the classifier sees what it always sees)."""
        if self.explain:
            for ev in events:
                if isinstance(ev, Rejected):
                    line = {"t": round(t, 6), "discarded": ev.proto, "reason": ev.reason}
                    self.out.write(json.dumps(line, ensure_ascii=False) + "\n")
        self.c.feed(t, events)

    def advance_to(self, t: float) -> None:
        """Evaluate every deadline up to and including `t`, printing changes at their own time."""
        if self.now is None:
            self.now = t
            return
        while True:
            d = self.c.next_deadline(self.now)
            if d is None or d > t:
                break
            self.now = d
            self._emit(d)
        self.now = t

    def apply(self, obj: dict[str, Any]) -> None:
        t = obj["t"]
        self.advance_to(t)
        if "process" in obj or "observable" in obj or "group" in obj:
            name, pid, why = self.proc
            if "process" in obj:
                name, pid, why = obj["process"], obj.get("pid"), None
            if "group" in obj:
                name, pid, why = self._choose(obj["group"])
            self.proc = (name, pid, why)
            self.c.set_process(t, name, pid, obj.get("observable", True), why, obj.get("chain", ()))
        if "output" in obj or "output_b64" in obj:
            data = obj["_bytes"]
            self._feed(t, self.decoder.feed(data))
        if "screen" in obj:
            self.c.set_screen(t, obj["screen"])
        if obj.get("seen"):
            self.c.mark_seen(t)
        self._emit(t)

    def finish(self) -> None:
        """Let a pending debounce release after the last line (bounded: no staleness hours later)."""
        if self.now is None:
            return
        end = self.now + CAP
        self._feed(self.now, self.decoder.close())
        self._emit(self.now)
        self.advance_to(end)


def parse_line(text: str, previous_t: float | None) -> dict[str, Any]:
    """Validate one trace line; raises BadLine with a reason a person can act on."""
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BadLine(f"not JSON: {exc.msg} (column {exc.colno})") from None
    if not isinstance(obj, dict):
        raise BadLine("a trace line must be a JSON object")
    unknown = sorted(set(obj) - KEYS)
    if unknown:
        raise BadLine(f"unknown key {unknown[0]!r} (known: {', '.join(sorted(KEYS))})")
    t = obj.get("t")
    if isinstance(t, bool) or not isinstance(t, int | float) or not math.isfinite(t):
        raise BadLine("missing or invalid 't' (unix seconds, a number)")
    if previous_t is not None and t < previous_t:
        raise BadLine(f"time goes backwards ({t} after {previous_t})")
    if "output" in obj and "output_b64" in obj:
        raise BadLine("give 'output' or 'output_b64', not both")
    if "output" in obj:
        if not isinstance(obj["output"], str):
            raise BadLine("'output' must be a string")
        obj["_bytes"] = obj["output"].encode("utf-8", "surrogateescape")
    if "output_b64" in obj:
        if not isinstance(obj["output_b64"], str):
            raise BadLine("'output_b64' must be a base64 string")
        try:
            obj["_bytes"] = base64.b64decode(obj["output_b64"], validate=True)
        except (binascii.Error, ValueError):
            raise BadLine("'output_b64' is not valid base64") from None
    if "process" in obj and obj["process"] is not None and not isinstance(obj["process"], str):
        raise BadLine("'process' must be a string or null")
    if "pid" in obj and (isinstance(obj["pid"], bool) or not isinstance(obj["pid"], int | None)):
        raise BadLine("'pid' must be an integer")
    chain = obj.get("chain", [])
    if not isinstance(chain, list) or len(chain) > MAX_CHAIN:
        raise BadLine(f"'chain' must be a list of at most {MAX_CHAIN} pids")
    if any(isinstance(p, bool) or not isinstance(p, int) or p < 1 for p in chain):
        raise BadLine("'chain' must hold positive integer pids")
    if "group" in obj:
        _check_group(obj["group"])
        if "process" in obj:
            raise BadLine("give 'process' or 'group', not both")
    if "observable" in obj and not isinstance(obj["observable"], bool):
        raise BadLine("'observable' must be true or false")
    if "screen" in obj and obj["screen"] is not None and not isinstance(obj["screen"], str):
        raise BadLine("'screen' must be a string")
    if "seen" in obj and not isinstance(obj["seen"], bool):
        raise BadLine("'seen' must be true or false")
    return obj


def _check_group(group: Any) -> None:
    ok = isinstance(group, list) and 0 < len(group) <= MAX_GROUP
    for m in group if ok else ():
        ok = ok and (
            isinstance(m, list)
            and len(m) == 3
            and all(type(v) is int and v >= 0 for v in m[:2])
            and isinstance(m[2], str)
        )
    if not ok:
        raise BadLine(f"'group' must be a list of 1 to {MAX_GROUP} [pid, ppid, args] (the leader first)")


def _load(rules_dir: str | None) -> RuleSet:
    rules = load_rules(rules_dir)
    for err in rules.errors:
        print(f"{PROG}: rules: {err}", file=sys.stderr)
    return rules


def _replay_trace(path: str, rules: RuleSet, explain: bool = False) -> int:
    name = "<stdin>" if path == "-" else path
    stream: TextIO
    try:
        stream = sys.stdin if path == "-" else open(path, encoding="utf-8", errors="surrogateescape")  # noqa: SIM115
    except OSError as exc:
        print(f"{PROG}: cannot read {path}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    r = Replayer(rules, sys.stdout, explain)
    bad = 0
    last_t: float | None = None
    with stream:
        for lineno, raw in enumerate(_bounded_lines(stream), start=1):
            if raw is None:
                print(f"{PROG}: {name}:{lineno}: line longer than {MAX_LINE} bytes, skipped", file=sys.stderr)
                bad += 1
                continue
            if not raw.strip():
                continue
            try:
                obj = parse_line(raw, last_t)
            except BadLine as exc:
                print(f"{PROG}: {name}:{lineno}: {exc}", file=sys.stderr)
                bad += 1
                continue
            last_t = obj["t"]
            r.apply(obj)
    r.finish()
    return 1 if bad else 0


def _bounded_lines(stream: TextIO) -> Iterator[str | None]:
    """Lines of the stream, None for a line over MAX_LINE (its rest is skipped)."""
    while True:
        line = stream.readline(MAX_LINE + 1)
        if not line:
            return
        if len(line) > MAX_LINE and not line.endswith("\n"):
            while True:
                rest = stream.readline(MAX_LINE)
                if not rest or rest.endswith("\n"):
                    break
            yield None
            continue
        yield line


def _replay_raw(path: str, rules: RuleSet, process: str | None, explain: bool = False) -> int:
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        print(f"{PROG}: cannot read {path}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    r = Replayer(rules, sys.stdout, explain)
    obj: dict[str, Any] = {"t": 0.0, "output_b64": "", "_bytes": data}
    if process:
        obj["process"] = process
    r.apply(obj)
    r.finish()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    if (args.trace is None) == (args.raw is None):
        print(f"{PROG}: give a TRACE.jsonl or --raw FILE (try `{PROG} --help`)", file=sys.stderr)
        return 2
    if args.process and not args.raw:
        print(f"{PROG}: --process only goes with --raw (a trace says its process itself)", file=sys.stderr)
        return 2
    rules = _load(args.rules)
    try:
        if args.raw is not None:
            return _replay_raw(args.raw, rules, args.process, args.explain)
        return _replay_trace(args.trace, rules, args.explain)
    except BrokenPipeError:
        return 0
