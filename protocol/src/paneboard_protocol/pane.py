"""A pane's state, defined once: every field, where it travels, and its limits.

The server's panes/history tables, `GET /api/panes`, the live stream and the history
rows are derived from `FIELDS`; what is written out is held to
it by a test (`tests/server/test_pane_definition.py`): the pane's two typed classes —
`PaneUpdate` here (with its `PaneKey`), what the collector sends, and the server's
mutable `Pane` — the Alembic migrations and the page's JS. Adding a pane field is its
`Field` here, its line in the class(es) that carry it, and one storage migration.

Pure data: no I/O. A field's limit is written once, in `PaneUpdate`'s annotation of it
(`msgspec.Meta`): the server decodes a collector's message straight into `PaneUpdate`,
every bound checked while the JSON is parsed (`paneboard_server.ingest.wire`), and the
collector cuts its text to the same bounds (`WIRE_TEXT_MAX`, read from the annotations).
msgspec is the protocol package's one dependency.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeAlias, get_args, get_origin

import msgspec
from msgspec import Meta

#: The state names a pane can be in (None: nothing known). Order is the page's order.
State: TypeAlias = Literal["working", "blocked", "idle", "done", "error"]
STATES: tuple[str, ...] = get_args(State)
#: What a `blocked` pane waits for.
KINDS: tuple[str, ...] = ("permission", "question", "auth")
#: Which signal a classification came from.
Source: TypeAlias = Literal["protocol", "screen", "native"]
SOURCES: tuple[str, ...] = get_args(Source)

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
class Field:
    """One pane field and where it goes.

    `nullable`: the column may hold NULL (a wire value may be null only when its
    default is None). `type` is one of "str", "int", "float", "bool", "json" (a dict) or "list" (of dicts).
    `classification`: produced by the classifier (`Classification.to_json`).
    `update`: sent by the collector (`PaneUpdate`, the wire's pane object); with
    `required` it has no default in `PaneUpdate` (its positional block); its limits are
    in `PaneUpdate`'s annotations, and nowhere else (`WIRE_TEXT_MAX` reads them).
    `row`: a panes-table column the server writes. `api`: shown by `GET /api/panes` and
    the stream. `history`: copied into each history row. `sql_len` the column width
    (None: unbounded text); `sql_big` an integer column is 64-bit.
    """

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


_CLS: dict[str, Any] = {"classification": True, "update": True, "required": True, "row": True, "api": True}

#: The fields in `PaneUpdate`'s positional order (after its key).
FIELDS: tuple[Field, ...] = (
    Field("session", "str", "", update=True, required=True, row=True, api=True),
    Field("window", "str", "", update=True, required=True, row=True, api=True),
    Field("agent", "str", **_CLS, history=True),
    Field("state", "str", **_CLS, history=True, sql_len=STATE_MAX),
    Field("kind", "str", **_CLS, history=True, sql_len=KIND_MAX),
    Field("msg", "str", **_CLS, history=True),
    Field("source", "str", **_CLS, history=True, sql_len=STATE_MAX),
    Field("observable", "bool", True, nullable=False, **_CLS),
    Field("t", "float", update=True, required=True, nullable=False),
    Field("title", "str", classification=True, update=True, row=True, api=True),
    Field("progress", "int", classification=True, update=True, row=True, api=True),
    Field("since", "float", classification=True, update=True, row=True, api=True),
    Field("process", "str", update=True, row=True, api=True),
    Field("records", "list", (), nullable=False, classification=True, update=True, api=True),
    Field("evidence", "json", {}, update=True, row=True),
    Field("last_seen", "float", row=True, api=True),
    Field("rev", "int", 0, nullable=False, row=True, api=True, sql_big=True),
    Field("gone_at", "float", row=True),
    # What a pane that lost its state where it cannot be seen (behind ssh) was last:
    # {agent, state, kind, msg, since, at}; kept in memory (rebuilt from history on
    # start), shown only while the pane has no state and is not observable.
    Field("last_known", "json", api=True),
)

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


@dataclass(frozen=True, slots=True)
class PaneKey:
    """A pane's identity: tmux pane ids (`%3`) are unique per tmux server, not per host."""

    host: KeyName
    tmux: KeyName  # the tmux server: socket name (-L) or path (-S), "default" otherwise
    pane: PaneId  # tmux pane id, e.g. "%3"

    def __str__(self) -> str:
        return f"{self.host}/{self.tmux}/{self.pane}"


@dataclass(frozen=True, slots=True)
class PaneUpdate:
    """One pane's classification as the collector currently sees it.

    Its fields are the `update` fields of `FIELDS`, in the
    definition's order (the required ones positional), written out with their types so
    a type checker knows each one; `tests/server/test_pane_definition.py` holds the two
    together (names, order, types, defaults). The first fields are the `--stdout`
    contract (docs/collector.md); `evidence` is the classifier's JSON-serialisable
    evidence snapshot, from which the server re-derives the classification as its clock
    moves (TA-12/TA-13 staleness) with the same shared code.
    """

    key: PaneKey
    session: Name
    window: Text
    agent: Name | None
    state: State | None
    kind: KindName | None
    msg: Text | None
    source: Source | None
    observable: bool
    t: Time
    title: Text | None = None
    progress: Percent | None = None
    since: Time | None = None
    process: Text | None = None
    records: Annotated[tuple[dict[str, RecordValue], ...], Meta(max_length=RECORDS_MAX)] = ()
    evidence: dict[str, Json] = field(default_factory=dict)

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


def _text_limits() -> dict[str, int]:
    """Each free-text field of `PaneUpdate` (a bounded `str`, not a `Literal`) and its
    limit, read from the class's own annotations: the one place a limit is written.
    The annotations are read as written (`Text | None`), by name: evaluating them would
    build the nested JSON types, which is slow."""
    out: dict[str, int] = {}
    for f in fields(PaneUpdate):
        for part in str(f.type).split("|"):
            t = globals().get(part.strip())
            if get_origin(t) is Annotated and get_args(t)[0] is str:
                limit = next(m.max_length for m in get_args(t)[1:] if isinstance(m, Meta))
                if limit is not None:
                    out[f.name] = limit
    return out


#: free-text field -> the most characters the wire takes (what the collector cuts to)
WIRE_TEXT_MAX: dict[str, int] = _text_limits()
