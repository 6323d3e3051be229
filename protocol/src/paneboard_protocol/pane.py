"""A pane's state, defined once: every field, where it travels, and its limits.

The fields are written out once, in typed classes: `PaneFields` (what a pane says),
`PaneUpdate` (the collector's report and the wire's pane: those fields, its `PaneKey`
and its time) and `StoredPane` (the pane as the server keeps it: those fields and what
the server adds; the server's `Pane` adds its row's identity). Adding a pane field is one
line in one of them and one storage migration. `FIELDS`, read from their annotations,
is what the server's panes/history tables, `GET /api/panes`, the live stream and the
history rows are derived from; `tests/server/test_pane_definition.py` holds the
migrations (through the schema) and the page's JS to it.

Pure data: no I/O. A field's limit is written once, in its annotation (`msgspec.Meta`):
the server decodes a collector's message straight into `PaneUpdate`, every bound checked
while the JSON is parsed (`paneboard_server.ingest.wire`), and the collector cuts its
text to the same bounds (`WIRE_TEXT_MAX`, read from the annotations). Where a field goes
besides the wire is its `Goes`. msgspec is the protocol package's one dependency.
"""

from __future__ import annotations

import types
from dataclasses import dataclass
from typing import (
    TYPE_CHECKING,
    Annotated,
    Any,
    Literal,
    TypeAlias,
    TypeGuard,
    Union,
    get_args,
    get_origin,
    get_type_hints,
)

import msgspec
from msgspec import Meta

#: The state names a pane can be in (None: nothing known), written here only: every layer
#: (reports, evidence, rules, the server's notifications and ledger) types a state as
#: `State` and checks one against `STATES`; the page's copy (web/js/model.js) is held to
#: it by tests/server/test_pane_definition.py.
State: TypeAlias = Literal["working", "blocked", "idle", "done", "error"]
STATES: tuple[State, ...] = get_args(State)
#: What a `blocked` pane waits for (P7501-17).
Kind: TypeAlias = Literal["permission", "question", "auth"]
KINDS: tuple[Kind, ...] = get_args(Kind)
#: The order the board and `paneboard status` list panes in: what waits on you first,
#: then what finished, then what runs (the page's ranks are held to it by a test).
BOARD_ORDER: tuple[State, ...] = ("blocked", "error", "done", "working", "idle")
#: Which signal a classification came from.
Source: TypeAlias = Literal["protocol", "screen", "native"]
SOURCES: tuple[Source, ...] = get_args(Source)


def is_state(value: object) -> TypeGuard[State]:
    """Whether an untrusted value (a report's word, a stored row, a config entry) names a
    state: the check every layer makes, so a caller gets the value typed `State`."""
    return type(value) is str and value in STATES


def is_kind(value: object) -> TypeGuard[Kind]:
    """Whether an untrusted value names what a blocked pane waits for."""
    return type(value) is str and value in KINDS


# Every limit here is the wire's (the server validates a collector's values against it)
# and never more than the width of any column the value is stored in, so a message that
# passes validation cannot fail at the database and with it the write batch it shares
# with other collectors' messages (tests/server/test_server_limits.py holds them to the
# schema). A name that is part of a unique index stays short: PostgreSQL refuses an index
# entry above ~2700 bytes, so a TEXT column would not lift the limit.
NAME_MAX = 255  # agent names, host and tmux names, tmux session names (`tmux_sessions.name`)
TEXT_MAX = 4096  # free text: window, msg, title, process, errors
STATE_MAX = 16  # the storage width of a state / source name
KIND_MAX = 32  # the storage width of a kind
PANE_ID_MAX = 64  # a tmux pane id such as "%3"
RECORDS_MAX = 64  # records carried per pane
TIME_MAX = 1e11  # seconds since the epoch; anything later is garbage
JSON_DEPTH = 8  # nesting of the free-form parts (evidence, records), counted from the pane
INT_MIN, INT_MAX = -(2**63), 2**63 - 1  # what every backend's integer and JSON columns hold

# --- the limits as types: a value that fits one fits every column it is stored in --------
KeyName = Annotated[str, Meta(min_length=1, max_length=NAME_MAX)]  # host, tmux server
PaneId = Annotated[str, Meta(min_length=1, max_length=PANE_ID_MAX)]
Name = Annotated[str, Meta(max_length=NAME_MAX)]
Text = Annotated[str, Meta(max_length=TEXT_MAX)]
KindName = Annotated[str, Meta(max_length=KIND_MAX)]
Time = Annotated[float, Meta(ge=0, le=TIME_MAX)]
Percent = Annotated[int, Meta(ge=0, le=100)]
Int64 = Annotated[int, Meta(ge=INT_MIN, le=INT_MAX)]


def _json_within(depth: int) -> Any:
    """A JSON value whose containers nest at most `depth` deep, with 64-bit integers: the
    decoder refuses anything deeper or wider while parsing, with no walk of our own."""
    scalar: Any = str | bool | Int64 | float | None
    value = scalar
    for _ in range(depth):
        value = scalar | list[value] | dict[str, value]  # type: ignore[valid-type]  # a type built at run time
    return value


if TYPE_CHECKING:
    Json: TypeAlias = Any
    RecordValue: TypeAlias = Any
else:
    # evidence (depth 0) holds values at depth 1 whose innermost items sit at JSON_DEPTH;
    # a record (depth 1, inside `records`) one level less
    Json = _json_within(JSON_DEPTH - 1)
    RecordValue = _json_within(JSON_DEPTH - 2)


@dataclass(frozen=True, slots=True)
class Goes:
    """Where a pane field goes besides the wire, written in the field's annotation
    (`Annotated[Text | None, Goes(row=True, api=True)]`); `FIELDS` is read from these.

    `row`: a panes-table column the server writes. `api`: shown by `GET /api/panes` and
    the stream. `history`: copied into each history row. `classification`: produced by
    the classifier (`Classification.to_json`). `sql_len`: the column width (None: text);
    `sql_big`: a 64-bit integer column. `nullable`: the column may hold NULL though the
    value is never None (a pane the server has only heard of has none yet). `blank`: the
    stand-in a refused pane is probed with, when the class gives the field no default.
    """

    row: bool = False
    api: bool = False
    history: bool = False
    classification: bool = False
    sql_len: int | None = None
    sql_big: bool = False
    nullable: bool = False
    blank: Any = None


SHOWN = Goes(row=True, api=True)  # stored and shown
#: what the classifier says of a pane, stored and shown
CLASSIFIED = Goes(row=True, api=True, classification=True)
#: ... and copied into every history row (a name of a state or kind: a narrow column)
TOLD = Goes(row=True, api=True, classification=True, history=True)
TOLD_STATE = Goes(row=True, api=True, classification=True, history=True, sql_len=STATE_MAX)
TOLD_KIND = Goes(row=True, api=True, classification=True, history=True, sql_len=KIND_MAX)


class PaneFields(msgspec.Struct, kw_only=True):
    """What a pane says: its place in tmux and its classification. Defined once, here: the
    collector reports these fields (`PaneUpdate`) and the server keeps them (`StoredPane`,
    its `Pane`), so a field added here reaches both ends, the tables (with its migration),
    the API and the stream. Each field's limits are its wire's (`msgspec.Meta`, checked
    while a collector's message is decoded), where it goes is its `Goes`.

    The first fields are the `--stdout` contract (docs/collector.md); `evidence` is the
    classifier's JSON evidence, from which the server re-derives the classification as its
    clock moves (TA-12/TA-13 staleness) with the same shared code.
    """

    session: Annotated[Name, Goes(row=True, api=True, nullable=True, blank="")]
    window: Annotated[Text, Goes(row=True, api=True, nullable=True, blank="")]
    agent: Annotated[Name | None, TOLD]
    state: Annotated[State | None, TOLD_STATE]
    kind: Annotated[KindName | None, TOLD_KIND]
    msg: Annotated[Text | None, TOLD]
    source: Annotated[Source | None, TOLD_STATE]
    observable: Annotated[bool, Goes(row=True, api=True, classification=True, blank=True)]
    title: Annotated[Text | None, CLASSIFIED] = None
    progress: Annotated[Percent | None, CLASSIFIED] = None
    since: Annotated[Time | None, CLASSIFIED] = None
    process: Annotated[Text | None, SHOWN] = None
    records: Annotated[
        tuple[dict[str, RecordValue], ...], Meta(max_length=RECORDS_MAX), Goes(api=True, classification=True)
    ] = ()
    evidence: Annotated[dict[str, Json], Goes(row=True, nullable=True)] = {}


@dataclass(frozen=True, slots=True)
class PaneKey:
    """A pane's identity: tmux pane ids (`%3`) are unique per tmux server, not per host."""

    host: KeyName
    tmux: KeyName  # the tmux server: socket name (-L) or path (-S), "default" otherwise
    pane: PaneId  # tmux pane id, e.g. "%3"

    def __str__(self) -> str:
        return f"{self.host}/{self.tmux}/{self.pane}"


# msgspec makes a frozen Struct over a mutable one (immutable: assigning a field raises);
# mypy applies the dataclass rule that forbids it
class PaneUpdate(PaneFields, frozen=True, kw_only=True):  # type: ignore[misc]
    """One pane as its collector currently sees it, at `t`: what goes on the wire (the
    server decodes a message straight into this class) and what `--stdout` prints."""

    key: PaneKey
    t: Time

    def stdout_json(self) -> dict[str, Any]:
        """The object `paneboard agent --stdout` prints, exactly the keys docs/collector.md lists."""
        return {
            "host": self.key.host,
            "session": self.session,
            "window": self.window,
            "pane": self.key.pane,
            "agent": self.agent,
            "state": self.state,
            "kind": self.kind,
            "msg": self.msg,
            "source": self.source,
            "observable": self.observable,
            "t": self.t,
        }

    def wire_json(self) -> dict[str, Any]:
        """The pane as plain JSON values, exactly as the uplink encodes it (the uplink sends
        the object itself; this is for a frame built by hand, as tests and benchmarks do)."""
        out: dict[str, Any] = msgspec.to_builtins(self)
        return out


class LastKnown(msgspec.Struct, kw_only=True):
    """What a pane that lost its state where it cannot be seen (behind ssh) was last, and
    why it lost it (`reason`, the history row's: `stale` when its report outlived its
    `ts`); the board keeps such a `blocked` pane among the waits, as possibly still
    waiting."""

    agent: Name | None
    state: State
    kind: KindName | None
    msg: Text | None
    since: Annotated[Time | None, Meta(description="when it entered that state")]
    at: Annotated[Time, Meta(description="when it lost it")]
    reason: Annotated[str | None, Meta(description="the history reason that took the state away")]


class StoredPane(PaneFields, kw_only=True):
    """A pane as the server keeps it: what its collector last said (or the server's own
    re-derivation of it), and what the server adds. Mutable: the writer changes its batch's
    copies. The server's `Pane` adds the row's identity."""

    last_seen: Annotated[float | None, SHOWN] = None
    rev: Annotated[int, Goes(row=True, api=True, sql_big=True)] = 0
    gone_at: Annotated[float | None, Goes(row=True)] = None
    # What a pane that lost its state where it cannot be seen (behind ssh) was last;
    # kept in memory (rebuilt from history on start), shown only while the pane has no
    # state and is not observable.
    last_known: Annotated[LastKnown | None, Goes(api=True)] = None


# --- the table of fields, read from the classes -------------------------------------------
@dataclass(frozen=True, slots=True)
class Field:
    """One pane field and where it goes, as read from its class (`FIELDS`).

    `type` is one of "str", "int", "float", "bool", "json" (a dict or a Struct) or "list" (of dicts).
    `nullable`: the column may hold NULL (the value may be None, or `Goes.nullable`). `update`: sent by the
    collector (a field of `PaneUpdate`), `required` there with no default. The rest is
    the field's `Goes`."""

    name: str
    type: str
    default: Any = None
    nullable: bool = True
    classification: bool = False
    update: bool = False
    required: bool = False
    row: bool = False
    api: bool = False
    history: bool = False
    sql_len: int | None = None
    sql_big: bool = False


def _unwrap(t: Any) -> tuple[Any, bool, tuple[Any, ...]]:
    """(the bare type, whether None is allowed, the Annotated metadata) of an annotation:
    `Annotated[Name | None, Goes(...)]` -> (str, True, (Meta(...), Goes(...)))."""
    extras: list[Any] = []

    def bare(t: Any) -> Any:
        while get_origin(t) is Annotated:
            extras.extend(t.__metadata__)
            t = get_args(t)[0]
        return t

    t = bare(t)
    nullable = False
    if get_origin(t) in (Union, types.UnionType):
        args = [a for a in get_args(t) if a is not type(None)]
        nullable = len(args) < len(get_args(t))
        t = bare(args[0]) if len(args) == 1 else t
    return t, nullable, tuple(extras)


def _kind(t: Any) -> str:
    origin = get_origin(t) or t
    if origin is Literal or origin is str:
        return "str"
    if origin is bool:
        return "bool"
    if origin is int:
        return "int"
    if origin is float:
        return "float"
    if origin in (tuple, list):
        return "list"
    if origin is dict or (isinstance(origin, type) and issubclass(origin, msgspec.Struct)):
        return "json"
    raise TypeError(f"a pane field of type {t!r}: add it to pane._kind")


def _describe() -> tuple[Field, ...]:
    """Every field of `PaneUpdate` (but its key) and of `StoredPane`, in that order."""
    out: dict[str, Field] = {}
    for cls in (PaneUpdate, StoredPane):
        hints = get_type_hints(cls, include_extras=True)
        for info in msgspec.structs.fields(cls):
            if info.name == "key" or info.name in out:
                continue
            t, nullable, extras = _unwrap(hints[info.name])
            goes = next((e for e in extras if isinstance(e, Goes)), Goes())
            if info.default_factory is not msgspec.NODEFAULT:
                value, has_default = info.default_factory(), True
            elif info.default is not msgspec.NODEFAULT:
                value, has_default = info.default, True
            else:
                value, has_default = goes.blank, False
            out[info.name] = Field(
                info.name,
                _kind(t),
                value,
                nullable=nullable or goes.nullable,
                classification=goes.classification,
                update=cls is PaneUpdate,
                required=cls is PaneUpdate and not has_default,
                row=goes.row,
                api=goes.api,
                history=goes.history,
                sql_len=goes.sql_len,
                sql_big=goes.sql_big,
            )
    return tuple(out.values())


#: Every pane field: `PaneUpdate`'s (what the collector sends), then what the server adds.
FIELDS: tuple[Field, ...] = _describe()
BY_NAME: dict[str, Field] = {f.name: f for f in FIELDS}


def names(**where: bool) -> tuple[str, ...]:
    """The names of the fields whose flags match, in definition order: `names(api=True)`."""
    return tuple(f.name for f in FIELDS if all(getattr(f, k) == v for k, v in where.items()))


CLASSIFICATION_FIELDS = names(classification=True)
UPDATE_FIELDS = names(update=True)
ROW_FIELDS = names(row=True)
API_FIELDS = names(api=True)
HISTORY_FIELDS = names(history=True)
#: What the server's re-derivation may overwrite (`since`/`records` are handled apart).
RECLASSIFY_FIELDS = tuple(n for n in CLASSIFICATION_FIELDS if n not in ("since", "records"))
#: What a change of makes the collector send an update (the clock fields `t`/`since` don't).
SIGNATURE_FIELDS = tuple(n for n in UPDATE_FIELDS if n not in ("t", "since"))


def clip_text(values: dict[str, Any]) -> dict[str, Any]:
    """`values` with every free-text field cut to its limit (`WIRE_TEXT_MAX`).

    The collector sends display text as tmux and programs give it; cut here, to the limits
    the server validates against, an overlong tmux session name costs the end of the name
    instead of the whole pane (the server would refuse the pane)."""
    out = dict(values)
    for name, v in values.items():
        limit = WIRE_TEXT_MAX.get(name)
        if limit is not None and isinstance(v, str):
            out[name] = v[:limit]
    return out


def default(f: Field) -> Any:
    """A fresh default (containers are copied so no two panes share one)."""
    if isinstance(f.default, dict):
        return dict(f.default)
    if isinstance(f.default, (list, tuple)) and f.type == "list":
        return type(f.default)(f.default)
    return f.default


def _text_limits() -> dict[str, int]:
    """Each free-text field of `PaneUpdate` (a bounded `str`, not a `Literal`) and its
    limit, read from the class's own annotations: the one place a limit is written."""
    out: dict[str, int] = {}
    hints = get_type_hints(PaneUpdate, include_extras=True)
    for f in FIELDS:
        if not f.update:
            continue
        t, _nullable, extras = _unwrap(hints[f.name])
        if t is str:
            limit = next((m.max_length for m in extras if isinstance(m, Meta) and m.max_length), None)
            if limit is not None:
                out[f.name] = limit
    return out


#: free-text field -> the most characters the wire takes (what the collector cuts to)
WIRE_TEXT_MAX: dict[str, int] = _text_limits()
