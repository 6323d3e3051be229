"""What the server says to a collector, decoded once into typed, checked messages.

The collector used to take the server's frames as dicts and check each field where it
was used, in three modules — `answer`, which types keys into a pane, included — with
`.get()` chains that a misspelt field name passed silently. Here every server message
is one frozen class, and `read_server` is the one place a frame becomes one: each
field's type and bound is checked (the limits are `wire`'s and `pane`'s), and a frame
that is not exactly a known message is None, so the collector acts on nothing it has
not read whole. A newer server's extra fields are ignored; an unknown `type` is too.

The JSON shapes themselves stay in `wire` (the TypedDicts the server builds frames
with, which docs/wire.md and the server's tests are held to); `tests/protocol/
test_server_messages.py` holds these classes to those shapes field by field.

Pure: only the standard library.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from paneboard_protocol.pane import NAME_MAX, PANE_ID_MAX, TEXT_MAX, TIME_MAX
from paneboard_protocol.wire import (
    ANSWER_ID_MAX,
    ANSWER_TEXT_MAX,
    FINGERPRINT_LEN,
    REQUEST_ID_MAX,
    SCREEN_LINES_MAX,
    VERSION_MAX,
)


class Malformed(ValueError):
    """A frame that names a known message but does not hold one (which field, why)."""


@dataclass(frozen=True, slots=True)
class PaneRef:
    """Which pane a command is about: the collector's host name, tmux label, pane id."""

    host: str
    tmux: str
    pane: str


@dataclass(frozen=True, slots=True)
class Welcome:
    server: str
    acked: int | None  # the last seq the server committed for this stream, if any
    snapshot: bool  # True: the server wants a snapshot, not a resend


@dataclass(frozen=True, slots=True)
class Ack:
    seq: int


@dataclass(frozen=True, slots=True)
class Resync:
    reason: str


@dataclass(frozen=True, slots=True)
class Refused:
    """What the server refused, just before a close (or alone, for one pane)."""

    seq: int | None
    at: str | None  # `panes.3.msg`, `ops.0.update.msg`: which item
    host: str | None  # a host name refused as a whole
    reason: str


@dataclass(frozen=True, slots=True)
class Seen:
    key: PaneRef
    t: float


@dataclass(frozen=True, slots=True)
class Watch:
    key: PaneRef
    scrollback: int


@dataclass(frozen=True, slots=True)
class Unwatch:
    key: PaneRef


@dataclass(frozen=True, slots=True)
class Answer:
    """Type this answer only if the pane is still blocked on the prompt `fingerprint`
    names: a declared answer's id, or free text (exactly one of the two)."""

    id: str
    key: PaneRef
    fingerprint: str
    answer: str | None
    text: str | None
    expires: float


PaneCommand = Watch | Unwatch | Answer
ServerMessage = Welcome | Ack | Resync | Refused | Seen | Watch | Unwatch | Answer


def read_server(raw: str | bytes | Mapping[str, Any]) -> ServerMessage | None:
    """A server frame (text, or already parsed) as its message; None for anything else.

    Never raises: the uplink drops what it cannot read rather than close over it."""
    try:
        return decode(raw)
    except Malformed:
        return None


def decode(raw: str | bytes | Mapping[str, Any]) -> ServerMessage | None:
    """As `read_server`, but a known message that is malformed raises `Malformed`
    (saying which field), for tests and logs; an unknown `type` is still None."""
    if isinstance(raw, str | bytes):
        try:
            msg = json.loads(raw)
        except ValueError:
            return None
    else:
        msg = raw
    if not isinstance(msg, Mapping):
        return None
    kind = msg.get("type")
    reader = _READERS.get(kind) if isinstance(kind, str) else None
    return reader(_Fields(msg)) if reader is not None else None


class _Fields:
    """Typed reads of one message's fields, each failing with the field's name."""

    def __init__(self, msg: Mapping[str, Any]) -> None:
        self.msg = msg

    def _get(self, name: str, optional: bool) -> Any:
        if name not in self.msg and not optional:
            raise Malformed(f"{name}: missing")
        return self.msg.get(name)

    def text(self, name: str, limit: int, optional: bool = False, cut: bool = False) -> str | None:
        """`cut`: words for people (a reason), shortened rather than refused."""
        v = self._get(name, optional)
        if v is None and optional:
            return None
        if not isinstance(v, str) or (len(v) > limit and not cut):
            raise Malformed(f"{name}: a string of at most {limit} characters")
        return v[:limit]

    def req_text(self, name: str, limit: int, cut: bool = False) -> str:
        v = self.text(name, limit, cut=cut)
        assert v is not None
        return v

    def integer(self, name: str, lo: int, hi: int, optional: bool = False) -> int | None:
        v = self._get(name, optional)
        if v is None and optional:
            return None
        if not isinstance(v, int) or isinstance(v, bool) or not lo <= v <= hi:
            raise Malformed(f"{name}: an integer from {lo} to {hi}")
        return v

    def number(self, name: str) -> float:
        v = self._get(name, False)
        if (
            not isinstance(v, int | float)
            or isinstance(v, bool)
            or not math.isfinite(v)
            or not 0 <= v <= TIME_MAX
        ):
            raise Malformed(f"{name}: a time in seconds since the epoch")
        return float(v)

    def flag(self, name: str) -> bool:
        v = self._get(name, False)
        if not isinstance(v, bool):
            raise Malformed(f"{name}: true or false")
        return v

    def key(self) -> PaneRef:
        k = self._get("key", False)
        if not isinstance(k, Mapping):
            raise Malformed("key: an object {host, tmux, pane}")
        inner = _Fields(k)
        try:
            return PaneRef(
                inner.req_text("host", NAME_MAX),
                inner.req_text("tmux", NAME_MAX),
                inner.req_text("pane", PANE_ID_MAX),
            )
        except Malformed as exc:
            raise Malformed(f"key.{exc}") from None


_SEQ_MAX = 2**63 - 1


def _answer(f: _Fields) -> Answer:
    answer, text = (
        f.text("answer", ANSWER_ID_MAX, optional=True),
        f.text("text", ANSWER_TEXT_MAX, optional=True),
    )
    if (answer is None) == (text is None):
        raise Malformed("answer, text: exactly one of the two")
    fingerprint = f.req_text("fingerprint", FINGERPRINT_LEN)
    return Answer(f.req_text("id", REQUEST_ID_MAX), f.key(), fingerprint, answer, text, f.number("expires"))


_READERS: dict[str, Any] = {
    "welcome": lambda f: Welcome(
        f.req_text("server", VERSION_MAX), f.integer("acked", 0, _SEQ_MAX, optional=True), f.flag("snapshot")
    ),
    "ack": lambda f: Ack(f.integer("seq", 0, _SEQ_MAX)),
    "resync": lambda f: Resync(f.req_text("reason", TEXT_MAX, cut=True)),
    "refused": lambda f: Refused(
        f.integer("seq", 0, _SEQ_MAX, optional=True),
        f.text("at", TEXT_MAX, optional=True, cut=True),
        f.text("host", NAME_MAX, optional=True),
        f.req_text("reason", TEXT_MAX, cut=True),
    ),
    "seen": lambda f: Seen(f.key(), f.number("t")),
    "watch": lambda f: Watch(f.key(), f.integer("scrollback", 0, SCREEN_LINES_MAX, optional=True) or 0),
    "unwatch": lambda f: Unwatch(f.key()),
    "answer": _answer,
}
