"""The ingest wire protocol's messages (`WS /api/ingest`), validated with pydantic.

A collector's message is parsed and validated whole before anything is applied, so
a malformed one changes nothing: the connection is closed with a reason naming the
offending field. docs/wire.md is the prose description of the same protocol.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from paneboard_protocol import pane as pane_def
from paneboard_protocol import wire as pwire
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, create_model

PROTOCOL = pwire.PROTOCOL

Name = Annotated[str, Field(min_length=1, max_length=255)]
ShortText = Annotated[str, Field(max_length=255)]
LongText = Annotated[str, Field(max_length=4096)]
Time = Annotated[float, Field(ge=0, le=1e11)]
STATES = Literal[pane_def.STATES]  # type: ignore[valid-type]


class _Msg(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class Key(_Msg):
    host: Name
    tmux: Name
    pane: Annotated[str, Field(min_length=1, max_length=64)]


def _pane_in_field(f: pane_def.Field) -> tuple[Any, Any]:
    """A pane field's pydantic type and default, with its limits from the definition."""
    typ: Any
    if f.choices is not None:
        typ = Literal[f.choices]  # type: ignore[valid-type]  # Literal of a runtime tuple
    elif f.type == "list":
        typ = Annotated[list[dict[str, Any]], Field(max_length=f.max_len)]
    elif f.type == "json":
        typ = dict[str, Any]
    else:
        base = {"str": str, "int": int, "float": float, "bool": bool}[f.type]
        typ = Annotated[base, Field(max_length=f.max_len, ge=f.lo, le=f.hi)]
    if f.default is None and not f.nullable:
        return (typ, ...)  # no default and never null: the collector must send it
    if f.default is None:
        typ = typ | None
    default = list(f.default) if isinstance(f.default, tuple) else f.default
    return (typ, default)


#: `PaneUpdate.wire_json()` as the collector sends it, derived from `pane.FIELDS`.
PaneIn = create_model(  # type: ignore[call-overload]
    "PaneIn",
    __base__=_Msg,
    key=(Key, ...),
    **{f.name: _pane_in_field(f) for f in pane_def.FIELDS if f.update},
)


class HostIn(_Msg):
    reachable: bool
    error: LongText | None = None


class Hello(_Msg):
    type: Literal["hello"]
    protocol: int = PROTOCOL
    version: Annotated[str, Field(max_length=64)] = ""
    stream: Annotated[str, Field(min_length=1, max_length=64)]
    hosts: Annotated[list[Name], Field(max_length=1000)] = []


class PaneOp(_Msg):
    op: Literal["pane"]
    update: PaneIn


class GoneOp(_Msg):
    op: Literal["gone"]
    key: Key
    t: Time


class HostOp(_Msg):
    op: Literal["host"]
    host: Name
    reachable: bool
    error: LongText | None = None
    t: Time


Op = Annotated[PaneOp | GoneOp | HostOp, Field(discriminator="op")]


class Snapshot(_Msg):
    type: Literal["snapshot"]
    seq: Annotated[int, Field(ge=0)]
    t: Time
    hosts: Annotated[dict[Name, HostIn], Field(max_length=1000)] = {}
    panes: list[PaneIn] = []


class Delta(_Msg):
    type: Literal["delta"]
    seq: Annotated[int, Field(ge=0)]
    ops: Annotated[list[Op], Field(min_length=1)]


ClientMsg = Annotated[Hello | Snapshot | Delta, Field(discriminator="type")]
_client = TypeAdapter(ClientMsg)


class WireError(Exception):
    """A message the server will not apply; `str()` is the close reason."""


def parse(text: str | bytes, max_bytes: int, max_panes: int) -> Hello | Snapshot | Delta:
    if len(text) > max_bytes:
        raise WireError(f"message too large ({len(text)} bytes, limit {max_bytes})")
    try:
        msg = _client.validate_json(text)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"]) or "message"
        raise WireError(f"invalid message: {loc}: {err['msg']}") from None
    n = len(msg.panes) if isinstance(msg, Snapshot) else len(msg.ops) if isinstance(msg, Delta) else 0
    if n > max_panes:
        raise WireError(f"message carries {n} panes, limit {max_panes}")
    return msg


def reason(text: str) -> str:
    """A WebSocket close reason must fit in 123 bytes."""
    data = text.encode()[:120]
    return data.decode(errors="ignore")
