"""Validation of an evidence dict arriving from elsewhere (the server's side of the seam).

The collector builds evidence with `PaneClassifier.evidence()`; the server receives it
over the network and re-runs `classify_evidence` on it. On the server it is untrusted
input, so `check_evidence` verifies every field's type and bound and raises one
`EvidenceError` naming the field, instead of a KeyError deep inside arbitration.
"""

from __future__ import annotations

import math
from collections.abc import Collection
from typing import Any

from paneboard_protocol.events import AGENT_STATES
from paneboard_protocol.pane import KINDS, STATES
from paneboard_protocol.records import MAX_RECORDS

EVIDENCE_VERSION = 3
"""2: records carry their writer's `pid`, and `other_seq` (the answer rule) is kept.
3: what the board says of why (`paneboard_protocol.why`): records carry their writer's
name (`writer`), the process its nearest ancestor (`parent`), a screen reading the rows
its rule matched on (`lines`). None of them changes a classification, so versions 1 and
2 (older collectors) are still read, and classified as they were; an older server
refuses version 3 and keeps the collector's classification as sent."""
VERSIONS = frozenset({1, 2, EVIDENCE_VERSION})
MAX_ROWS = 10_000
"""Screen rows a reading's `lines` may name (tmux panes are far shorter)."""
MAX_TEXT = 4096
MAX_NAME = 256
MAX_ENTRIES = 1024


class EvidenceError(ValueError):
    """Evidence that cannot be classified; the message names the offending field."""


def _fail(path: str, why: str) -> EvidenceError:
    return EvidenceError(f"evidence {path}: {why}")


def _dict(value: Any, path: str, keys: frozenset[str]) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _fail(path, "must be an object")
    extra = set(value) - keys
    if extra:
        raise _fail(path, f"unknown key {sorted(extra)[0]!r}")
    return value


def _str(value: Any, path: str, limit: int = MAX_NAME, optional: bool = True) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, str) or len(value) > limit:
        raise _fail(
            path, f"must be a string of at most {limit} characters" + (" or null" if optional else "")
        )
    return value


def _int(
    value: Any, path: str, lo: int | None = None, hi: int | None = None, optional: bool = True
) -> int | None:
    if value is None and optional:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or (lo is not None and value < lo)
        or (hi is not None and value > hi)
    ):
        raise _fail(
            path, "must be an integer" + (f" in {lo}..{hi}" if lo is not None and hi is not None else "")
        )
    return value


def _num(value: Any, path: str, optional: bool = True) -> float | None:
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise _fail(path, "must be a finite number")
    return value


def _bool(value: Any, path: str) -> bool:
    if not isinstance(value, bool):
        raise _fail(path, "must be true or false")
    return value


def _choice(value: Any, path: str, allowed: Collection[str], optional: bool = False) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, str) or value not in allowed:
        raise _fail(path, f"must be one of {', '.join(sorted(allowed))}")
    return value


_PROCESS = frozenset({"name", "pid", "agent", "gen", "why", "parent"})
_CONTRACT = frozenset({"agent", "state", "session", "ts", "ended", "received", "leader_gen", "leader"})
_RECORD = frozenset(
    {
        "id",
        "state",
        "kind",
        "app",
        "msg",
        "title",
        "progress",
        "updated",
        "seq",
        "gen",
        "agent",
        "pid",
        "writer",
    }
)
_SCREEN = frozenset({"agent", "result", "question"})
_RESULT = frozenset({"state", "kind", "rule", "manifest", "native", "msg", "lines"})
_NATIVE = frozenset({"title", "progress"})
_PROGRESS = frozenset({"state", "percent"})
_TOP = frozenset(
    {
        "v",
        "process",
        "observable",
        "contract",
        "records",
        "screen",
        "native",
        "aliases",
        "manifests",
        "basis",
        "since",
        "other_seq",
    }
)


_SAFE_INT = 1 << 53  # ints math.isfinite takes without overflowing


def _opt_str(v: Any, limit: int) -> bool:
    return v is None or (type(v) is str and len(v) <= limit)


def _record_ok(r: Any) -> bool:
    """A quick yes for a well-formed record; False sends it through the field-by-field
    checks below (which then name the bad field). Stricter than they are, never looser:
    exact types only, so a str/int subclass or a huge int takes the slow path."""
    if type(r) is not dict or not _RECORD.issuperset(r):
        return False
    g = r.get
    rid, state, kind, progress, updated, seq, gen, pid = (
        g("id"),
        g("state"),
        g("kind"),
        g("progress"),
        g("updated"),
        g("seq"),
        g("gen"),
        g("pid"),
    )
    return (
        type(rid) is str
        and len(rid) <= 128
        and type(state) is str
        and state in STATES
        and (kind is None or (type(kind) is str and kind in KINDS))
        and _opt_str(g("app"), MAX_NAME)
        and _opt_str(g("msg"), MAX_TEXT)
        and _opt_str(g("title"), MAX_TEXT)
        and (progress is None or (type(progress) is int and 0 <= progress <= 100))
        and (
            (type(updated) is float and math.isfinite(updated))
            or (type(updated) is int and -_SAFE_INT < updated < _SAFE_INT)
        )
        and type(seq) is int
        and seq >= 0
        and type(gen) is int
        and gen >= 0
        and _opt_str(g("agent"), MAX_NAME)
        and (pid is None or (type(pid) is int and 0 <= pid < _SAFE_INT))
        and _opt_str(g("writer"), MAX_NAME)
    )


def check_evidence(evidence: Any) -> dict[str, Any]:
    """Return `evidence` unchanged if it is well-formed; raise EvidenceError otherwise."""
    ev = _dict(evidence, "", _TOP)
    if type(ev.get("v")) is not int or ev.get("v") not in VERSIONS:
        raise _fail("v", f"unsupported version {ev.get('v')!r} (this reader knows 1 to {EVIDENCE_VERSION})")
    p = _dict(ev.get("process"), "process", _PROCESS)
    _str(p.get("name"), "process.name", MAX_TEXT)
    _int(p.get("pid"), "process.pid", 0)
    _str(p.get("agent"), "process.agent")
    _int(p.get("gen"), "process.gen", 0, optional=False)
    _str(p.get("why"), "process.why", MAX_TEXT)
    _int(p.get("parent"), "process.parent", 0, _SAFE_INT - 1)
    _bool(ev.get("observable"), "observable")
    c = ev.get("contract")
    if c is not None:
        _dict(c, "contract", _CONTRACT)
        _str(c.get("agent"), "contract.agent", optional=False)
        _choice(c.get("state"), "contract.state", AGENT_STATES, optional=True)
        _str(c.get("session"), "contract.session")
        _int(c.get("ts"), "contract.ts")
        _bool(c.get("ended"), "contract.ended")
        _num(c.get("received"), "contract.received", optional=False)
        _int(c.get("leader_gen"), "contract.leader_gen", 0)
        _str(c.get("leader"), "contract.leader", MAX_TEXT)
    records = ev.get("records")
    if not isinstance(records, list) or len(records) > MAX_RECORDS:
        raise _fail("records", f"must be a list of at most {MAX_RECORDS} records")
    for i, r in enumerate(records):
        if _record_ok(r):
            continue  # the common case, without building eleven field paths per record
        where = f"records[{i}]"
        _dict(r, where, _RECORD)
        _str(r.get("id"), f"{where}.id", 128, optional=False)
        _choice(r.get("state"), f"{where}.state", STATES)
        _choice(r.get("kind"), f"{where}.kind", KINDS, optional=True)
        _str(r.get("app"), f"{where}.app")
        _str(r.get("msg"), f"{where}.msg", MAX_TEXT)
        _str(r.get("title"), f"{where}.title", MAX_TEXT)
        _int(r.get("progress"), f"{where}.progress", 0, 100)
        _num(r.get("updated"), f"{where}.updated", optional=False)
        _int(r.get("seq"), f"{where}.seq", 0, optional=False)
        _int(r.get("gen"), f"{where}.gen", 0, optional=False)
        _str(r.get("agent"), f"{where}.agent")
        _int(r.get("pid"), f"{where}.pid", 0, _SAFE_INT - 1)
        _str(r.get("writer"), f"{where}.writer")
    s = ev.get("screen")
    if s is not None:
        _dict(s, "screen", _SCREEN)
        _str(s.get("agent"), "screen.agent")
        _str(s.get("question"), "screen.question", MAX_TEXT)
        res = s.get("result")
        if res is not None:
            _dict(res, "screen.result", _RESULT)
            _choice(res.get("state"), "screen.result.state", STATES)
            _choice(res.get("kind"), "screen.result.kind", KINDS, optional=True)
            _str(res.get("rule"), "screen.result.rule")
            _str(res.get("manifest"), "screen.result.manifest")
            _bool(res.get("native"), "screen.result.native")
            _str(res.get("msg"), "screen.result.msg", MAX_TEXT)
            lines = res.get("lines")
            if lines is not None:
                ok = isinstance(lines, list) and len(lines) == 2
                first = _int(lines[0], "screen.result.lines[0]", 1, MAX_ROWS) if ok else None
                last = _int(lines[1], "screen.result.lines[1]", 1, MAX_ROWS) if ok else None
                if first is None or last is None or first > last:
                    raise _fail("screen.result.lines", "must be [first, last] rows, first <= last")
    n = _dict(ev.get("native"), "native", _NATIVE)
    _str(n.get("title"), "native.title", MAX_TEXT)
    prog = n.get("progress")
    if prog is not None:
        _dict(prog, "native.progress", _PROGRESS)
        _int(prog.get("state"), "native.progress.state", 0, 4, optional=False)
        _int(prog.get("percent"), "native.progress.percent", 0, 100)
    aliases = ev.get("aliases")
    if not isinstance(aliases, dict) or len(aliases) > MAX_ENTRIES:
        raise _fail("aliases", f"must be an object of at most {MAX_ENTRIES} entries")
    for k, v in aliases.items():
        _str(k, "aliases key", optional=False)
        _str(v, f"aliases[{k!r}]", optional=False)
    manifests = ev.get("manifests")
    if not isinstance(manifests, list) or len(manifests) > MAX_ENTRIES:
        raise _fail("manifests", f"must be a list of at most {MAX_ENTRIES} agent names")
    for i, m in enumerate(manifests):
        _str(m, f"manifests[{i}]", optional=False)
    basis = ev.get("basis")
    if basis is not None:
        if not isinstance(basis, list) or len(basis) != 2:
            raise _fail("basis", "must be [agent, state] or null")
        _str(basis[0], "basis[0]")
        _choice(basis[1], "basis[1]", STATES, optional=True)
    _num(ev.get("since"), "since")
    _int(ev.get("other_seq"), "other_seq", 0)
    return ev
