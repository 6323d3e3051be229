"""What the server says to a collector, decoded once into the protocol's typed messages.

The messages are `wire`'s classes (`Welcome` … `Answer`), the very objects the server
builds and encodes. `read_server` is the one place a frame becomes one: msgspec checks
every field's type and bound while it decodes, and a frame that is not exactly a known
message is None, so the collector acts on nothing it has not read whole — the `answer`
that types keys into a pane included. A newer server's extra fields are ignored; an
unknown `type` is too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from paneboard_protocol.wire import (
    Ack,
    Answer,
    PaneCommand,
    Refused,
    Resync,
    Seen,
    ServerMessage,
    Unwatch,
    Watch,
    Welcome,
)

__all__ = [
    "Ack",
    "Answer",
    "Malformed",
    "PaneCommand",
    "Refused",
    "Resync",
    "Seen",
    "ServerMessage",
    "Unwatch",
    "Watch",
    "Welcome",
    "decode",
    "read_server",
]


class Malformed(ValueError):
    """A frame that names a known message but does not hold one (which field, why)."""


_decoder = msgspec.json.Decoder(ServerMessage)


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
    try:
        if isinstance(raw, str | bytes):
            return _decoder.decode(raw)
        msg: ServerMessage = msgspec.convert(raw, ServerMessage)
        return msg
    except msgspec.ValidationError as exc:  # (a DecodeError too: caught first)
        why, _, path = str(exc).partition(" - at `")
        where = path.rstrip("`").removeprefix("$").removeprefix(".")
        missing = why.removeprefix("Object missing required field `").rstrip("`")
        if missing != why:  # name the field: `key.pane: missing`
            where, why = ".".join(filter(None, (where, missing))), "missing"
        if where == "type" or why.startswith("Expected `object`"):
            return None  # not an object, or no message this collector knows
        raise Malformed(f"{where or 'message'}: {why}") from None
    except msgspec.DecodeError:
        return None  # not JSON
