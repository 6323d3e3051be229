"""JSON encoding on the hot paths: orjson, with the stdlib for what orjson refuses.

orjson writes the same JSON as `json.dumps(separators=(",", ":"), ensure_ascii=False)`
for what the server handles (validated data: str keys, finite floats, 64-bit ints),
many times faster per pane (bench/json_encoders.py). Anything it refuses (a non-str key, an
int beyond 64 bits) goes through the stdlib, so no value that encoded before fails now.
"""

from __future__ import annotations

import json
from typing import Any

import orjson


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
