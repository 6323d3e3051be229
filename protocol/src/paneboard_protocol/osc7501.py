"""The OSC 7501 (Program Status Protocol) report grammar: P7501-1 … 6, 10, 15 … 20.

Input is the payload after `7501;` with C0 controls already removed by framing (F-1).
The output is one event: `StatusReport`, `ClearReport`, `Probe`, or `Rejected` with a
reason a person can act on. Every limit and alphabet here is section 1a of the spec;
the order of checks matters and is documented where the spec leaves it open:

* a pair is first trimmed and split at its first `=`; a key over 16 bytes rejects the
  report (even an unknown or malformed key); a key outside `[a-z]+`, a pair without
  `=`, or a value outside the value alphabet is skipped;
* limits (id, app, title, msg sizes) are checked on every pair as it is read, so a pair
  over a limit rejects the report even when a later duplicate would replace it;
* validity (id syntax, base64, UTF-8, control characters) is checked on the values that
  survive last-duplicate-wins.
"""

from __future__ import annotations

import re
from typing import Literal

from paneboard_protocol._quote import quote
from paneboard_protocol.b64 import Base64Error, strict_b64decode
from paneboard_protocol.events import (
    CLEAR,
    ClearReport,
    Event,
    Probe,
    Rejected,
    StatusReport,
)
from paneboard_protocol.pane import is_kind, is_state

PROTO = "osc7501"

MAX_KEY = 16
MAX_ID = 128
MAX_ID_LEVELS = 8
MAX_SEGMENT = 32
MAX_APP = 32
MAX_TITLE_ENCODED, MAX_TITLE_DECODED = 256, 192
MAX_MSG_ENCODED, MAX_MSG_DECODED = 2732, 2048

_KEY = re.compile(r"[a-z]+")
_VALUE = re.compile(r"[A-Za-z0-9_.,+/=\-]*")
_SEGMENT = re.compile(r"[A-Za-z0-9_.+\-]{1,32}")
_APP = re.compile(r"[A-Za-z0-9_.+\-]{1,32}")
_PROGRESS = re.compile(r"[0-9]+")
# A body made only of well-formed pairs, as every real emitter sends: parsed without the
# per-pair checks (the result is the same; `_parse_pairs` is the reference).
_CLEAN_BODY = re.compile(r"[a-z]{1,16}=[A-Za-z0-9_.,+/=\-]*(?::[a-z]{1,16}=[A-Za-z0-9_.,+/=\-]*)*")
_CLEAN_PAIR = re.compile(r"([a-z]+)=([^:]*)")
# C0, DEL and C1: "a control character after decoding rejects the report" (P7501-19).
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")

_TEXT_LIMITS = {"title": (MAX_TITLE_ENCODED, MAX_TITLE_DECODED), "msg": (MAX_MSG_ENCODED, MAX_MSG_DECODED)}


class _Reject(Exception):
    pass


def _limit_error(key: str, value: str) -> str | None:
    """The reason a pair is over a limit (which rejects the report), or None."""
    if key == "id":
        segments = value.split("/")
        if len(value) > MAX_ID:
            return f"id is longer than {MAX_ID} bytes"
        if len(segments) > MAX_ID_LEVELS:
            return f"id {quote(value)} has more than {MAX_ID_LEVELS} levels"
        if any(len(s) > MAX_SEGMENT for s in segments):
            return f"id {quote(value)} has a segment longer than {MAX_SEGMENT} bytes"
    elif key == "app":
        if len(value) > MAX_APP:
            return f"app {quote(value)} is longer than {MAX_APP} bytes"
    elif key in _TEXT_LIMITS:
        encoded, _ = _TEXT_LIMITS[key]
        if len(value) > encoded:
            return f"{key} is longer than {encoded} bytes of base64"
    return None


def _decode_text(key: str, value: str) -> str | None:
    """Decode `title`/`msg` (P7501-19); an empty value reads as absent."""
    if not value:
        return None
    try:
        raw = strict_b64decode(value.encode("ascii"))
    except Base64Error as exc:
        raise _Reject(f"{key} is not valid base64 (it {exc})") from None
    _, decoded_max = _TEXT_LIMITS[key]
    if len(raw) > decoded_max:
        raise _Reject(f"{key} decodes to more than {decoded_max} bytes")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise _Reject(f"{key} is not valid UTF-8 after base64 decoding") from None
    bad = _CONTROL.search(text)
    if bad:
        raise _Reject(f"{key} contains a control character (U+{ord(bad.group()):04X}) after decoding")
    return text


def _parse_pairs(body: str) -> dict[str, str]:
    if _CLEAN_BODY.fullmatch(body):
        pairs = _CLEAN_PAIR.findall(body)
        fields = dict(pairs)
        if len(fields) == len(pairs):  # no duplicates: checking final values is enough
            if (
                "id" in fields
                or len(fields.get("app", "")) > MAX_APP
                or len(fields.get("title", "")) > MAX_TITLE_ENCODED
                or len(fields.get("msg", "")) > MAX_MSG_ENCODED
            ):
                for key in ("id", "app", "title", "msg"):
                    if key in fields:
                        reason = _limit_error(key, fields[key])
                        if reason:
                            raise _Reject(reason)
            return fields
    return _parse_pairs_slow(body)


def _parse_pairs_slow(body: str) -> dict[str, str]:
    fields: dict[str, str] = {}
    for pair in body.split(":"):
        key, sep, value = pair.partition("=")
        key = key.strip(" ")
        if len(key) > MAX_KEY:
            raise _Reject(f"key {quote(key)} is longer than {MAX_KEY} bytes")
        if not sep or not _KEY.fullmatch(key):
            continue  # malformed pair: skipped (P7501-15)
        value = value.strip(" ")
        if not _VALUE.fullmatch(value):
            continue  # value outside the alphabet: pair skipped (P7501-15)
        reason = _limit_error(key, value)
        if reason:
            raise _Reject(reason)
        fields[key] = value
    return fields


def _check_id(value: str | None) -> str | None:
    if value is None:
        return None
    if not all(_SEGMENT.fullmatch(s) for s in value.split("/")):
        raise _Reject(f"id {quote(value)} is not a valid id (segments of [A-Za-z0-9_.+-] joined by '/')")
    return value


def parse_report(body: bytes, offset: int, terminator: Literal["bel", "st"]) -> Event:
    """Turn the payload after `7501;` into an event (or a `Rejected`)."""
    if body == b"?":
        return Probe(offset, terminator=terminator)
    text = body.decode("latin-1")
    try:
        if text.startswith("?"):
            raise _Reject(f"{quote(text)} is neither a probe (only the exact '?' is one) nor a report")
        if not text.strip(" "):
            raise _Reject("empty report (no key=value pairs)")
        fields = _parse_pairs(text)
        state = fields.get("state")
        if state is None:
            raise _Reject("report has no state")
        if state != CLEAR and not is_state(state):
            raise _Reject(f"unknown state {quote(state)}")
        rid = _check_id(fields.get("id"))
        # Text is validated even for `clear` (P7501-19).
        msg = _decode_text("msg", fields["msg"]) if "msg" in fields else None
        title = _decode_text("title", fields["title"]) if "title" in fields else None
    except _Reject as exc:
        return Rejected(offset, proto=PROTO, reason=str(exc))
    if not is_state(state):  # `clear`, the one other word a report's state= takes (checked above)
        return ClearReport(offset, id=rid)
    app = fields.get("app")
    if app is not None and not _APP.fullmatch(app):
        app = None  # an invalid app is dropped (P7501-18)
    raw_kind = fields.get("kind")
    kind = raw_kind if state == "blocked" and is_kind(raw_kind) else None
    progress: int | None = None
    raw_progress = fields.get("progress")
    if state in ("working", "blocked") and raw_progress and _PROGRESS.fullmatch(raw_progress):
        number = int(raw_progress)
        progress = number if number <= 100 else None
    return StatusReport(
        offset,
        id=rid,
        state=state,
        kind=kind,
        app=app,
        msg=msg,
        title=title,
        progress=progress,
        fields=fields,
    )
