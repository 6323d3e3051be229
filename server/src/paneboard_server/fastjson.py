"""JSON encoding on the hot paths: msgspec for the typed views clients get, orjson for
plain values (the database's JSON columns), with the stdlib for what orjson refuses.

`encode` writes a view (`paneboard_protocol.views`, the API's answers) and the plain
values in it as they are, with no validation on the way out: building a pane's view and
encoding it costs less than building its dict and encoding that with orjson
(bench/json_encoders.py), and far less than pydantic validating the dict per answer.
Its bytes are orjson's but for floats of 1e16 and beyond, written `1e16` (orjson and the
stdlib write `1e+16`), the same number to every JSON parser.

orjson writes the same JSON as `json.dumps(separators=(",", ":"), ensure_ascii=False)`
for what the server handles (validated data: str keys, finite floats, 64-bit ints),
many times faster per pane (bench/json_encoders.py). Anything it refuses (a non-str key, an
int beyond 64 bits) goes through the stdlib, so no value that encoded before fails now.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec
import orjson

_encoder = msgspec.json.Encoder()


def encode(view: Any) -> bytes:
    """UTF-8 JSON bytes of a view (a msgspec Struct, or dicts and lists holding them)."""
    return _encoder.encode(view)


def dumps(data: Any) -> bytes:
    """UTF-8 JSON bytes (an SSE frame's body)."""
    try:
        return orjson.dumps(data)
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        return json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode()


def dumps_text(data: Any) -> str:
    """JSON text, for SQLAlchemy's JSON columns (evidence and records on every pane
    row a batch writes: the stdlib encoder was a visible share of the server's time
    under load)."""
    return dumps(data).decode()
