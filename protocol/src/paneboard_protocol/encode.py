"""Build OSC 7501 reports and THINKTERM_AGENT contracts, checking every limit first.

This is the writing side of the decoder: `paneboard emit`, the Python `report()` API,
the relay's probe reply and the tests all build their bytes here, so whatever
paneboard writes is something a strict reader (P7501-15 to P7501-20, docs/spec.md) accepts.
The rule is "refuse rather than truncate": a value over a limit raises `ValueError`
with a message a person can act on, because a reader would reject the whole report
(P7501-15, P7501-19, P7501-20) and a silently shortened message would lie.

Pure: no I/O, no clock (callers pass `ts`).
"""

from __future__ import annotations

import base64
import re
import unicodedata
from collections.abc import Mapping

from paneboard_protocol.events import AGENT_STATES, CLEAR, REPORT_WORDS
from paneboard_protocol.pane import KINDS

ESC = b"\x1b"
BEL = b"\x07"
ST = b"\x1b\\"

OSC7501_PREFIX = b"\x1b]7501;"
MAX_SEQUENCE = 4096  # P7501-20: ESC ] through ST
MAX_KEY = 16  # P7501-15
MAX_TITLE_DECODED, MAX_TITLE_ENCODED = 192, 256  # P7501-19
MAX_MSG_DECODED, MAX_MSG_ENCODED = 2048, 2732  # P7501-19
MAX_ID_BYTES, MAX_ID_LEVELS, MAX_SEGMENT = 128, 8, 32  # P7501-16
MAX_APP = 32  # P7501-18

_KEY_RE = re.compile(r"[a-z]+")
_VALUE_RE = re.compile(r"[A-Za-z0-9_.,+/=-]*")
_SEGMENT_RE = re.compile(r"[A-Za-z0-9_.+-]{1,32}")
_APP_RE = re.compile(r"[A-Za-z0-9_.+-]{1,32}")

# Keys encode_report sets itself; `extra` may not smuggle a second copy of them.
_KNOWN_KEYS = frozenset({"state", "kind", "id", "app", "progress", "title", "msg"})

# THINKTERM_AGENT v1 (TA-7): values sit between `;` separators and after `=`, so
# they must hold neither; we allow a conservative identifier alphabet.
THINKTERM_VAR = "THINKTERM_AGENT"
_AGENT_RE = re.compile(r"[A-Za-z0-9_.+-]{1,64}")
_SESSION_RE = re.compile(r"[A-Za-z0-9_.:,+/@-]{0,128}")
_USERVAR_NAME_RE = re.compile(r"[A-Za-z0-9_]{1,64}")

Terminator = str  # "st" or "bel"


def _terminator(terminator: Terminator) -> bytes:
    if terminator == "st":
        return ST
    if terminator == "bel":
        return BEL
    raise ValueError(f"terminator must be 'st' or 'bel', not {terminator!r}")


def b64(text: str) -> str:
    """Standard base64 with padding of the UTF-8 text (P7501-2, P7501-19)."""
    return base64.b64encode(text.encode("utf-8")).decode("ascii")


def _check_text(name: str, text: str, max_decoded: int, max_encoded: int, one_line: bool) -> str:
    """Validate human text for `title`/`msg`; return its base64 form."""
    if not isinstance(text, str):
        raise ValueError(f"{name} must be text, not {type(text).__name__}")
    for ch in text:
        if one_line and (ch in "\r\n" or unicodedata.category(ch) in ("Zl", "Zp")):
            raise ValueError(f"{name} must be one line (it contains a line break)")
        if unicodedata.category(ch) == "Cc":
            raise ValueError(f"{name} contains the control character U+{ord(ch):04X}")
        if unicodedata.category(ch) == "Cs":
            raise ValueError(f"{name} contains a lone surrogate U+{ord(ch):04X} (not valid UTF-8)")
    raw = text.encode("utf-8")
    if len(raw) > max_decoded:
        raise ValueError(f"{name} is {len(raw)} bytes of UTF-8; the limit is {max_decoded}")
    encoded = b64(text)
    if len(encoded) > max_encoded:  # pragma: no cover - implied by the decoded limit
        raise ValueError(f"{name} is {len(encoded)} bytes of base64; the limit is {max_encoded}")
    return encoded


def check_id(value: str) -> str:
    """P7501-16: `seg/seg/...`, segments `[A-Za-z0-9_.+-]{1,32}`, <= 8 levels, <= 128 bytes."""
    if not isinstance(value, str) or not value:
        raise ValueError("id must not be empty")
    if len(value.encode("utf-8")) > MAX_ID_BYTES:
        raise ValueError(f"id is {len(value.encode('utf-8'))} bytes; the limit is {MAX_ID_BYTES}")
    segments = value.split("/")
    if len(segments) > MAX_ID_LEVELS:
        raise ValueError(f"id has {len(segments)} levels; the limit is {MAX_ID_LEVELS}")
    for seg in segments:
        if not _SEGMENT_RE.fullmatch(seg):
            raise ValueError(
                f"id segment {seg!r} is invalid: each '/'-separated part must be 1-{MAX_SEGMENT} "
                "characters of A-Z a-z 0-9 _ . + -"
            )
    return value


def check_app(value: str) -> str:
    """P7501-18: `[A-Za-z0-9_.+-]{1,32}`."""
    if not isinstance(value, str) or not value:
        raise ValueError("app must not be empty")
    if len(value.encode("utf-8")) > MAX_APP:
        raise ValueError(f"app is {len(value.encode('utf-8'))} bytes; the limit is {MAX_APP}")
    if not _APP_RE.fullmatch(value):
        raise ValueError(f"app {value!r} is invalid: use only A-Z a-z 0-9 _ . + -")
    return value


def check_pair(key: str, value: str) -> tuple[str, str]:
    """P7501-15: keys `[a-z]+` of at most 16 bytes, values `[A-Za-z0-9_.,+/=-]*`."""
    if not isinstance(key, str) or not _KEY_RE.fullmatch(key):
        raise ValueError(f"key {key!r} is invalid: keys are lowercase letters a-z only")
    if len(key) > MAX_KEY:
        raise ValueError(f"key {key!r} is {len(key)} bytes; the limit is {MAX_KEY}")
    if not isinstance(value, str) or not _VALUE_RE.fullmatch(value):
        raise ValueError(f"value of {key!r} is invalid: values use only A-Z a-z 0-9 _ . , + / = -")
    return key, value


def report_pairs(
    state: str,
    *,
    kind: str | None = None,
    msg: str | None = None,
    title: str | None = None,
    id: str | None = None,
    app: str | None = None,
    progress: int | None = None,
    extra: Mapping[str, str] | None = None,
) -> list[tuple[str, str]]:
    """The validated `key=value` pairs of one report, in wire order.

    Rejected rather than sent, because a reader would silently drop them and the
    report would not mean what the caller asked: `kind` with a state other than
    `blocked` or outside `permission|question|auth` (P7501-17), `progress` outside
    0-100 or with a state other than `working`/`blocked` (P7501-17). An empty `msg`
    or `title` is treated as not given, which is how a reader reads it (P7501-19).
    """
    if state not in REPORT_WORDS:
        raise ValueError(f"unknown state {state!r}: use one of {', '.join(sorted(REPORT_WORDS))}")
    pairs: list[tuple[str, str]] = [("state", state)]
    if id is not None:
        pairs.append(("id", check_id(id)))
    if state == CLEAR:
        given = [
            n
            for n, v in (("kind", kind), ("msg", msg), ("title", title), ("app", app), ("progress", progress))
            if v not in (None, "")
        ]
        if given or extra:
            raise ValueError(f"state 'clear' takes only an id, not {', '.join(given) or 'extra pairs'}")
        return pairs
    if kind is not None:
        if state != "blocked":
            raise ValueError(f"kind counts only with state 'blocked', not {state!r}")
        if kind not in KINDS:
            raise ValueError(f"unknown kind {kind!r}: use one of {', '.join(sorted(KINDS))}")
        pairs.append(("kind", kind))
    if app is not None:
        pairs.append(("app", check_app(app)))
    if progress is not None:
        if isinstance(progress, bool) or not isinstance(progress, int):
            raise ValueError(f"progress must be a whole number 0-100, not {progress!r}")
        if not 0 <= progress <= 100:
            raise ValueError(f"progress must be 0-100, not {progress}")
        if state not in ("working", "blocked"):
            raise ValueError(f"progress counts only with state 'working' or 'blocked', not {state!r}")
        pairs.append(("progress", str(progress)))
    if title:
        pairs.append(("title", _check_text("title", title, MAX_TITLE_DECODED, MAX_TITLE_ENCODED, True)))
    if msg:
        pairs.append(("msg", _check_text("msg", msg, MAX_MSG_DECODED, MAX_MSG_ENCODED, True)))
    for key, value in (extra or {}).items():
        check_pair(key, value)
        if key in _KNOWN_KEYS:
            raise ValueError(f"extra pair {key!r} is a known key: pass it as its own argument")
        pairs.append((key, value))
    return pairs


def encode_report(
    state: str,
    *,
    kind: str | None = None,
    msg: str | None = None,
    title: str | None = None,
    id: str | None = None,
    app: str | None = None,
    progress: int | None = None,
    extra: Mapping[str, str] | None = None,
    terminator: Terminator = "st",
) -> bytes:
    """One complete `OSC 7501 ; pairs ST` report, every section-1a limit checked."""
    pairs = report_pairs(
        state, kind=kind, msg=msg, title=title, id=id, app=app, progress=progress, extra=extra
    )
    body = ":".join(f"{k}={v}" for k, v in pairs).encode("ascii")
    seq = OSC7501_PREFIX + body + _terminator(terminator)
    if len(seq) > MAX_SEQUENCE:
        raise ValueError(f"the report is {len(seq)} bytes; the limit is {MAX_SEQUENCE} (P7501-20)")
    return seq


def encode_clear(id: str | None = None, *, terminator: Terminator = "st") -> bytes:
    """`state=clear`: drop record `id` and its subtree, or every record (P7501-16)."""
    return encode_report(CLEAR, id=id, terminator=terminator)


def encode_probe(terminator: Terminator = "st") -> bytes:
    """The feature-detection query `OSC 7501 ; ? ST` (P7501-10)."""
    return OSC7501_PREFIX + b"?" + _terminator(terminator)


def probe_reply(terminator: Terminator = "st") -> bytes:
    """The answer a supporting terminal gives: exactly the query, same terminator (P7501-10)."""
    return encode_probe(terminator)


def agent_value(
    agent: str,
    state: str,
    *,
    session: str | None = None,
    ts: int | None = None,
    pid: int | None = None,
    ended: bool = False,
) -> str:
    """The THINKTERM_AGENT v1 contract text (TA-7 … TA-11), before base64."""
    if not isinstance(agent, str) or not _AGENT_RE.fullmatch(agent):
        raise ValueError(f"agent {agent!r} is invalid: 1-64 characters of A-Z a-z 0-9 _ . + -")
    if state not in AGENT_STATES:
        raise ValueError(
            f"state {state!r} has no THINKTERM_AGENT form: use one of {', '.join(sorted(AGENT_STATES))}"
        )
    parts = ["v1", f"agent={agent}", f"state={state}"]
    if session is not None:
        if not isinstance(session, str) or not _SESSION_RE.fullmatch(session):
            raise ValueError(
                f"session {session!r} is invalid: up to 128 characters of A-Z a-z 0-9 _ . : , + / @ -"
            )
        parts.append(f"session={session}")
    if pid is not None:
        if isinstance(pid, bool) or not isinstance(pid, int) or pid < 0:
            raise ValueError(f"pid must be a non-negative whole number, not {pid!r}")
        parts.append(f"pid={pid}")
    if ts is not None:
        if isinstance(ts, bool) or not isinstance(ts, int) or ts < 0:
            raise ValueError(f"ts must be non-negative unix seconds, not {ts!r}")
        parts.append(f"ts={ts}")
    if ended:
        parts.append("ended=1")
    return ";".join(parts)


def encode_uservar(name: str, value: str) -> bytes:
    """`OSC 1337 ; SetUserVar=NAME=<base64(value)> BEL`, the form TA-6 shows."""
    if not _USERVAR_NAME_RE.fullmatch(name):
        raise ValueError(f"user variable name {name!r} is invalid: A-Z a-z 0-9 _ only")
    for ch in value:
        if unicodedata.category(ch) in ("Cc", "Cs"):
            raise ValueError(f"user variable value contains the character U+{ord(ch):04X}")
    seq = b"\x1b]1337;SetUserVar=" + name.encode("ascii") + b"=" + b64(value).encode("ascii") + BEL
    if len(seq) > MAX_SEQUENCE:
        raise ValueError(f"the user variable is {len(seq)} bytes; the limit is {MAX_SEQUENCE}")
    return seq


def encode_agent(
    agent: str,
    state: str,
    *,
    session: str | None = None,
    ts: int | None = None,
    pid: int | None = None,
    ended: bool = False,
) -> bytes:
    """A complete THINKTERM_AGENT report, ready to write to the terminal."""
    value = agent_value(agent, state, session=session, ts=ts, pid=pid, ended=ended)
    return encode_uservar(THINKTERM_VAR, value)


def tmux_passthrough(seq: bytes) -> bytes:
    """Wrap `seq` in tmux's passthrough envelope: `ESC P tmux; <ESC doubled> ESC \\`.

    tmux hands the inner bytes to the outer terminal when `allow-passthrough` is on
    (F-2 describes how a reader unwraps it).
    """
    return b"\x1bPtmux;" + seq.replace(ESC, ESC + ESC) + ST


__all__ = [
    "MAX_MSG_DECODED",
    "MAX_SEQUENCE",
    "MAX_TITLE_DECODED",
    "THINKTERM_VAR",
    "agent_value",
    "b64",
    "check_app",
    "check_id",
    "check_pair",
    "encode_agent",
    "encode_clear",
    "encode_probe",
    "encode_report",
    "encode_uservar",
    "probe_reply",
    "report_pairs",
    "tmux_passthrough",
]
