"""The ingest wire protocol's messages (`WS /api/ingest`): decoded and admitted.

A collector's frame is decoded by msgspec straight into the protocol's typed classes
(`paneboard_protocol.wire`, `paneboard_protocol.pane`): every field's type and limit is
checked while the JSON is parsed, nesting and 64-bit integers included. What types cannot
say is checked after, in `_admit`: a name must be plain text, display text is cleaned by
the function the collector cleans with, and no string may hold NUL. Those can only come
from a backslash escape, a DEL or a non-ASCII character; a frame with none of them
(nearly every frame: the collector sends ASCII) is admitted as decoded. A malformed
message changes nothing: the connection is closed with a reason naming the offending
field. docs/wire.md is the prose description of the same protocol.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

import msgspec
from paneboard_protocol import pane as pane_def
from paneboard_protocol import wire as pwire
from paneboard_protocol.pane import PaneKey, PaneUpdate
from paneboard_protocol.screen import clean_line
from paneboard_protocol.text import sanitize_text
from paneboard_protocol.wire import (
    CollectorMessage,
    Delta,
    GoneOp,
    Hello,
    HostOp,
    HostState,
    PaneOp,
    Screen,
    Snapshot,
)

PROTOCOL = pwire.PROTOCOL

# --- what every backend can store ---------------------------------------------------------
# A message that passes validation must not fail at the database, or it fails the write
# batch it shares with other collectors' messages. BIGINT is signed 64-bit (SQLite's
# INTEGER too); PostgreSQL refuses NUL in text and NaN/Infinity in JSON; no backend can
# encode a lone surrogate as UTF-8. The decoder refuses all but NUL by type.
MAX_INT = pane_def.INT_MAX
MIN_INT = pane_def.INT_MIN
MAX_JSON_DEPTH = pane_def.JSON_DEPTH  # nesting of the free-form parts (evidence, records)


def _storable_str(v: str) -> str:
    if "\x00" in v:
        raise ValueError("NUL character not allowed")
    if not v.isascii() and any("\ud800" <= ch <= "\udfff" for ch in v):
        raise ValueError("lone surrogate not allowed")
    return v


def storable_json(v: Any, depth: int = 0) -> Any:
    """Refuse what a JSON column cannot hold on every backend (free-form evidence).

    Every report carries evidence of a few dozen values, so this walk is on the ingest
    hot path: containers are walked in a loop that checks the JSON scalar types inline
    (a function call per value was most of its cost) and falls back to `_storable_value`
    for anything else. The checks and their order, so the first error named, are those
    of `_storable_value` alone."""
    if depth > MAX_JSON_DEPTH:
        raise ValueError(f"nested deeper than {MAX_JSON_DEPTH}")
    t = type(v)
    if t is dict or t is list:
        _walk(v, depth)
        return v
    return _storable_value(v, depth)


def _walk(v: dict[str, Any] | list[Any], depth: int) -> None:
    child = depth + 1
    if type(v) is dict:
        items: Any = v.items()
    else:
        items = ((None, x) for x in v)
    for k, x in items:
        if k is not None:
            _storable_str(k)
        if child > MAX_JSON_DEPTH:
            raise ValueError(f"nested deeper than {MAX_JSON_DEPTH}")
        t = type(x)
        if t is str:
            if "\x00" in x or not x.isascii():
                _storable_str(x)
        elif t is float:
            if not math.isfinite(x):
                raise ValueError("NaN and Infinity not allowed")
        elif t is int:
            if not MIN_INT <= x <= MAX_INT:
                raise ValueError("integer outside the signed 64-bit range")
        elif t is dict or t is list:
            _walk(x, child)
        elif not (t is bool or x is None):
            _storable_value(x, child)


def _storable_value(v: Any, depth: int) -> Any:
    """The one-value check (any type, subclasses too), recursing through `storable_json`."""
    if isinstance(v, str):
        return _storable_str(v)
    if isinstance(v, bool) or v is None:
        return v
    if isinstance(v, int):
        if not MIN_INT <= v <= MAX_INT:
            raise ValueError("integer outside the signed 64-bit range")
        return v
    if isinstance(v, float):
        if not math.isfinite(v):
            raise ValueError("NaN and Infinity not allowed")
        return v
    if isinstance(v, list):
        for x in v:
            storable_json(x, depth + 1)
        return v
    if isinstance(v, dict):
        for k, x in v.items():
            _storable_str(k)
            storable_json(x, depth + 1)
        return v
    raise ValueError(f"unexpected {type(v).__name__}")


def clean_json(v: Any, depth: int = 0) -> Any:
    """Display data (records): every string, keys too, cleaned by `sanitize_text`."""
    if depth > MAX_JSON_DEPTH:
        raise ValueError(f"nested deeper than {MAX_JSON_DEPTH}")
    if isinstance(v, str):
        return sanitize_text(v)
    if isinstance(v, list):
        return [clean_json(x, depth + 1) for x in v]
    if isinstance(v, dict):
        return {sanitize_text(k): clean_json(x, depth + 1) for k, x in v.items()}
    return storable_json(v, depth)


def _clean_name(v: str) -> str:
    """An identity (host, tmux server, pane id, stream) is refused, not cleaned: cleaning
    could merge two names. It must be text the display cleaner leaves as it is."""
    _storable_str(v)
    if sanitize_text(v) != v:
        raise ValueError("control, format or line-break characters not allowed")
    return v


def _clean_record(v: dict[str, Any]) -> dict[str, Any]:
    return clean_json(v, 1)


def _screen_line(v: str) -> str:
    """A screen line keeps its SGR colour escapes (`ESC [ ... m`) and nothing else that a
    terminal would act on: cleaned once, here, by the function the collector cleans with
    (a collector is not trusted to have done it)."""
    _storable_str(v)
    return clean_line(v)


def _text(v: str | None) -> str | None:
    return None if v is None else sanitize_text(v)


class WireError(Exception):
    """A message the server will not apply; `str()` is the close reason.

    `seq` (when the message had a usable one) and `at` (the offending field's path, e.g.
    `panes.3.msg`) go to the collector in a `refused` message, so its uplink can drop
    that part instead of sending it again on every reconnect."""

    def __init__(self, text: str, seq: int | None = None, at: str | None = None) -> None:
        super().__init__(text)
        self.seq = seq
        self.at = at


def _seq_of(text: str | bytes) -> int | None:
    """The `seq` of a message that failed validation, if it has a valid one."""
    try:
        seq = json.loads(text).get("seq")
    except (ValueError, AttributeError, RecursionError):
        return None
    return seq if isinstance(seq, int) and not isinstance(seq, bool) and 0 <= seq <= MAX_INT else None


_decoder = msgspec.json.Decoder(CollectorMessage)
_PATH = re.compile(r"\[(\d+)\]|\[\.\.\.\]")


def _where(path: str) -> str:
    """msgspec's `$.ops[0].update.msg` as the protocol names it: `ops.0.update.msg`."""
    return _PATH.sub(lambda m: "." + (m.group(1) if m.group(1) is not None else "*"), path).lstrip("$.")


def parse(text: str | bytes, max_bytes: int, max_panes: int) -> CollectorMessage:
    if len(text) > max_bytes:
        raise WireError(f"message too large ({len(text)} bytes, limit {max_bytes})")
    try:
        msg = _decoder.decode(text)
    except msgspec.ValidationError as exc:
        why, _, path = str(exc).partition(" - at `")
        loc = _where(path.rstrip("`")) or "message"
        raise WireError(f"invalid message: {loc}: {why}", _seq_of(text), loc) from None
    except msgspec.DecodeError as exc:
        raise _malformed(text, exc) from None
    if not _plain(text):
        try:
            msg = _admit(msg)
        except _Refused as exc:
            seq = getattr(msg, "seq", None)
            raise WireError(f"invalid message: {exc.at}: {exc.why}", seq, exc.at) from None
    n = len(msg.panes) if isinstance(msg, Snapshot) else len(msg.ops) if isinstance(msg, Delta) else 0
    if n > max_panes:
        raise WireError(f"message carries {n} panes, limit {max_panes}", getattr(msg, "seq", None))
    return msg


def _malformed(text: str | bytes, exc: msgspec.DecodeError) -> WireError:
    """Not JSON to the decoder. Python's reader takes NaN, Infinity and lone surrogates,
    which no backend stores: if that is all it is, name where (the collector then drops
    that pane alone, not the whole message)."""
    try:
        whole = json.loads(text)
    except (ValueError, RecursionError):
        return WireError(f"invalid message: message: {exc}", None, "message")
    found = _unstorable_at(whole, "")
    if found is None:
        return WireError(f"invalid message: message: {exc}", _seq_of(text), "message")
    at, why = found
    return WireError(f"invalid message: {at}: {why}", _seq_of(text), at)


def _unstorable_at(v: Any, at: str) -> tuple[str, str] | None:
    """The path of the first value or key no backend can store, and why."""
    if isinstance(v, float) and not math.isfinite(v):
        return at, "NaN and Infinity not allowed"
    if isinstance(v, str) and any("\ud800" <= ch <= "\udfff" for ch in v):
        return at, "lone surrogate not allowed"
    items = v.items() if isinstance(v, dict) else enumerate(v) if isinstance(v, list) else ()
    for k, x in items:
        here = f"{at}.{k}" if at else str(k)
        if isinstance(k, str) and any("\ud800" <= ch <= "\udfff" for ch in k):
            return here, "lone surrogate not allowed"
        found = _unstorable_at(x, here)
        if found is not None:
            return found
    return None


def _plain(text: str | bytes) -> bool:
    """Every string in the frame is printable ASCII, as decoded: no escape (the only way
    JSON carries a control character, NUL included), no DEL, nothing beyond ASCII. Such
    strings are exactly what the cleaners and `_clean_name` leave as they are."""
    if isinstance(text, str):
        return text.isascii() and "\\" not in text and "\x7f" not in text
    return text.isascii() and b"\\" not in text and b"\x7f" not in text


class _Refused(Exception):
    def __init__(self, at: str, why: str) -> None:
        self.at, self.why = at, why


def _check(at: str, fn: Any, v: Any) -> Any:
    try:
        return fn(v)
    except ValueError as exc:
        raise _Refused(at, str(exc)) from None


def _admit(msg: CollectorMessage) -> CollectorMessage:
    """What the types cannot say: names plain, display text cleaned, no NUL. A frozen
    message is copied only where something was cleaned."""
    rep = msgspec.structs.replace
    if isinstance(msg, Hello):
        _check("stream", _clean_name, msg.stream)
        for i, h in enumerate(msg.hosts):
            _check(f"hosts.{i}", _clean_name, h)
        for i, h in enumerate(msg.input):
            _check(f"input.{i}", _clean_name, h)
        return rep(msg, version=sanitize_text(msg.version))
    if isinstance(msg, Snapshot):
        for h in msg.hosts:
            _check("hosts.*", _clean_name, h)
        hosts = {h: _host(s) for h, s in msg.hosts.items()}
        panes = [_pane(f"panes.{i}", u) for i, u in enumerate(msg.panes)]
        return rep(msg, hosts=hosts, panes=panes)
    if isinstance(msg, Delta):
        return rep(msg, ops=[_op(f"ops.{i}", o) for i, o in enumerate(msg.ops)])
    if isinstance(msg, Screen):
        _key("key", msg.key)
        return rep(
            msg,
            lines=[_check(f"lines.{i}", _screen_line, ln) for i, ln in enumerate(msg.lines)],
            prompt=_text(msg.prompt),
            error=_text(msg.error),
            answers=[rep(a, label=sanitize_text(a.label)) for a in msg.answers],
        )
    return rep(msg, prompt=_text(msg.prompt))


def _host(s: HostState) -> HostState:
    return s if s.error is None else msgspec.structs.replace(s, error=sanitize_text(s.error))


def _op(at: str, o: PaneOp | GoneOp | HostOp) -> PaneOp | GoneOp | HostOp:
    if isinstance(o, PaneOp):
        return PaneOp(_pane(f"{at}.update", o.update))
    if isinstance(o, GoneOp):
        _key(f"{at}.key", o.key)
        return o
    _check(f"{at}.host", _clean_name, o.host)
    return o if o.error is None else msgspec.structs.replace(o, error=sanitize_text(o.error))


def _key(at: str, k: PaneKey) -> None:
    for name in ("host", "tmux", "pane"):
        _check(f"{at}.{name}", _clean_name, getattr(k, name))


#: the pane's free-text fields (a Literal-typed one, such as `state`, is exact already)
_PANE_TEXT = tuple(pane_def.WIRE_TEXT_MAX)


def _pane(at: str, u: PaneUpdate) -> PaneUpdate:
    """One pane of a frame that is not plain ASCII (a title with a spinner glyph is
    enough): the free-form parts are walked only when their own encoding shows they need
    it, which costs a microsecond where the walk costs ten."""
    _key(f"{at}.key", u.key)
    changes: dict[str, Any] = {}
    for name in _PANE_TEXT:
        v = getattr(u, name)
        clean = v if v is None else sanitize_text(v)
        if clean != v:
            changes[name] = clean
    if b"\\u0000" in _encode(u.evidence):  # NUL, the one thing its type lets through
        _check(f"{at}.evidence", storable_json, u.evidence)
    if u.records and not _plain(_encode(u.records)):
        records = tuple(_check(f"{at}.records.{i}", _clean_record, r) for i, r in enumerate(u.records))
        if records != u.records:
            changes["records"] = records
    return msgspec.structs.replace(u, **changes) if changes else u


_encode = msgspec.json.Encoder().encode


def reason(text: str) -> str:
    """A WebSocket close reason must fit in 123 bytes."""
    data = text.encode()[:120]
    return data.decode(errors="ignore")
