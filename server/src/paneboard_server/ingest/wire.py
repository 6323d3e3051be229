"""The ingest wire protocol's messages (`WS /api/ingest`), validated with pydantic.

A collector's message is parsed and validated whole before anything is applied, so
a malformed one changes nothing: the connection is closed with a reason naming the
offending field. docs/wire.md is the prose description of the same protocol.
"""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING, Annotated, Any, Literal

from paneboard_protocol import pane as pane_def
from paneboard_protocol import wire as pwire
from paneboard_protocol.screen import clean_line
from paneboard_protocol.text import sanitize_text
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    create_model,
)

PROTOCOL = pwire.PROTOCOL

# --- what every backend can store ---------------------------------------------------------
# A message that passes validation must not fail at the database, or it fails the write
# batch it shares with other collectors' messages. BIGINT is signed 64-bit (SQLite's
# INTEGER too); PostgreSQL refuses NUL in text and NaN/Infinity in JSON; no backend can
# encode a lone surrogate as UTF-8.
MAX_INT = 2**63 - 1
MIN_INT = -(2**63)
MAX_JSON_DEPTH = 16  # nesting of the free-form parts (evidence, records)


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


# Every limit is the protocol's named constant, never a literal here: those constants are
# what the columns are sized by (`store/schema.py`), and a test holds the two together.
Name = Annotated[str, Field(min_length=1, max_length=pane_def.NAME_MAX), AfterValidator(_clean_name)]
# Free text shown to people: cleaned once, here, by the function the collector uses.
LongText = Annotated[str, Field(max_length=pane_def.TEXT_MAX), AfterValidator(sanitize_text)]
Time = Annotated[float, Field(ge=0, le=pane_def.TIME_MAX, allow_inf_nan=False)]
Seq = Annotated[int, Field(ge=0, le=MAX_INT)]
Evidence = Annotated[dict[str, Any], AfterValidator(storable_json)]
Record = Annotated[dict[str, Any], AfterValidator(_clean_record)]
STATES = Literal[pane_def.STATES]  # type: ignore[valid-type]  # a Literal of a runtime tuple


class _Msg(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class Key(_Msg):
    host: Name
    tmux: Name
    pane: Annotated[str, Field(min_length=1, max_length=pane_def.PANE_ID_MAX), AfterValidator(_clean_name)]


def _pane_in_field(f: pane_def.Field) -> tuple[Any, Any]:
    """A pane field's pydantic type and default, with its limits from the definition."""
    typ: Any
    if f.choices is not None:
        typ = Literal[f.choices]  # a Literal of a runtime tuple: `typ` is Any to the checker
    elif f.type == "list":  # records: display data, every string cleaned
        typ = Annotated[list[Record], Field(max_length=f.max_len)]
    elif f.type == "json":  # evidence: free-form, refused if a backend cannot store it
        typ = Evidence
    elif f.type == "str":  # free text shown to people: cleaned once, here
        typ = Annotated[str, Field(max_length=f.max_len), AfterValidator(sanitize_text)]
    elif f.type == "float":
        typ = Annotated[float, Field(ge=f.lo, le=f.hi, allow_inf_nan=False)]
    elif f.type == "int":
        lo = MIN_INT if f.lo is None else f.lo
        hi = MAX_INT if f.hi is None else f.hi
        typ = Annotated[int, Field(ge=lo, le=hi)]
    else:
        typ = {"bool": bool}[f.type]
    if f.default is None and not f.nullable:
        return (typ, ...)  # no default and never null: the collector must send it
    if f.default is None:
        typ = typ | None
    default = list(f.default) if isinstance(f.default, tuple) else f.default
    return (typ, default)


if TYPE_CHECKING:

    class PaneIn(_Msg, pane_def.PaneUpdate):
        """What a type checker sees of the model made below: the fields of the
        collector's `PaneUpdate` with their types (it validates exactly those; a test
        holds the two to `pane.FIELDS`), so a misspelt or mistyped field fails `mypy`
        here too. At run time it is a pydantic model, made below."""

else:
    #: `PaneUpdate.wire_json()` as the collector sends it, derived from `pane.FIELDS`.
    PaneIn = create_model(
        "PaneIn",
        __base__=_Msg,
        key=(Key, ...),
        **{f.name: _pane_in_field(f) for f in pane_def.FIELDS if f.update},
    )


#: a round trip the collector measured to a host, seconds (a link slower than this is down)
Rtt = Annotated[float, Field(ge=0, le=pwire.RTT_MAX, allow_inf_nan=False)]
Count = Annotated[int, Field(ge=0, le=MAX_INT)]


class HostIn(_Msg):
    reachable: bool
    error: LongText | None = None
    rtt: Rtt | None = None
    reconnects: Count = 0
    contact: Time | None = None


class Hello(_Msg):
    type: Literal["hello"]
    protocol: Annotated[int, Field(ge=0, le=MAX_INT)] = PROTOCOL
    version: Annotated[str, Field(max_length=pwire.VERSION_MAX), AfterValidator(sanitize_text)] = ""
    stream: Annotated[str, Field(min_length=1, max_length=pwire.STREAM_MAX), AfterValidator(_clean_name)]
    hosts: Annotated[list[Name], Field(max_length=pwire.HOSTS_MAX)] = []
    input: Annotated[list[Name], Field(max_length=pwire.HOSTS_MAX)] = []


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
    rtt: Rtt | None = None
    reconnects: Count = 0
    contact: Time | None = None
    t: Time


Op = Annotated[PaneOp | GoneOp | HostOp, Field(discriminator="op")]


class Snapshot(_Msg):
    type: Literal["snapshot"]
    seq: Seq
    t: Time
    hosts: Annotated[dict[Name, HostIn], Field(max_length=pwire.HOSTS_MAX)] = {}
    panes: list[PaneIn] = []


class Delta(_Msg):
    type: Literal["delta"]
    seq: Seq
    ops: Annotated[list[Op], Field(min_length=1)]


def _no_controls_but_sgr(v: str) -> str:
    """A screen line keeps its SGR colour escapes (`ESC [ ... m`) and nothing else that a
    terminal would act on: cleaned once, here, by the function the collector cleans with
    (a collector is not trusted to have done it)."""
    _storable_str(v)
    return clean_line(v)


ScreenLine = Annotated[str, Field(max_length=pwire.SCREEN_LINE_MAX), AfterValidator(_no_controls_but_sgr)]
Fingerprint = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
AnswerId = Annotated[str, Field(min_length=1, max_length=pwire.ANSWER_ID_MAX, pattern=r"^[a-z0-9_-]+$")]
RequestId = Annotated[str, Field(min_length=1, max_length=pwire.REQUEST_ID_MAX, pattern=r"^[A-Za-z0-9_-]+$")]


class AnswerChoice(_Msg):
    id: AnswerId
    label: Annotated[
        str, Field(min_length=1, max_length=pwire.ANSWER_LABEL_MAX), AfterValidator(sanitize_text)
    ]


class Screen(_Msg):
    type: Literal["screen"]
    key: Key
    t: Time
    lines: Annotated[list[ScreenLine], Field(max_length=pwire.SCREEN_LINES_MAX)]
    width: Annotated[int, Field(ge=0, le=10000)]
    height: Annotated[int, Field(ge=0, le=10000)]
    cursor: Annotated[list[Annotated[int, Field(ge=0, le=10000)]], Field(min_length=2, max_length=2)]
    fingerprint: Annotated[str, Field(pattern=r"^([0-9a-f]{64})?$")]
    state: STATES | None = None
    prompt: LongText | None = None
    answers: Annotated[list[AnswerChoice], Field(max_length=pwire.ANSWERS_MAX)] = []
    text: bool = False
    input: bool = False
    error: LongText | None = None


class Answered(_Msg):
    type: Literal["answered"]
    id: RequestId
    outcome: Literal[pwire.OUTCOMES]  # type: ignore[valid-type]  # a Literal of a runtime tuple
    prompt: LongText | None = None


ClientMsg = Annotated[Hello | Snapshot | Delta | Screen | Answered, Field(discriminator="type")]
_client = TypeAdapter(ClientMsg)


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


def parse(text: str | bytes, max_bytes: int, max_panes: int) -> Hello | Snapshot | Delta | Screen | Answered:
    if len(text) > max_bytes:
        raise WireError(f"message too large ({len(text)} bytes, limit {max_bytes})")
    try:
        msg = _client.validate_json(text)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"]) or "message"
        raise WireError(f"invalid message: {loc}: {err['msg']}", _seq_of(text), loc) from None
    n = len(msg.panes) if isinstance(msg, Snapshot) else len(msg.ops) if isinstance(msg, Delta) else 0
    if n > max_panes:
        raise WireError(f"message carries {n} panes, limit {max_panes}", getattr(msg, "seq", None))
    return msg


def reason(text: str) -> str:
    """A WebSocket close reason must fit in 123 bytes."""
    data = text.encode()[:120]
    return data.decode(errors="ignore")
