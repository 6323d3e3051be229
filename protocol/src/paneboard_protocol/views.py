"""What the server shows of a pane: `GET /api/panes`, `GET /api/panes/{id}` and the live
stream's frames (docs/wire.md), as typed classes.

`PaneView` is the pane as clients get it: the fields of the pane definition shown to
them (those whose `Goes` has `api`, written in `pane.py`, in that order), then its row's
identity and what the server adds from its host. The fields are written out here so that
code and type checkers read them by name, and so that the server's OpenAPI document
describes a pane field by field (`msgspec.json.schema_components`);
tests/server/test_pane_definition.py holds them to `pane.API_FIELDS` (same names, order,
types and limits). The server builds these objects for every changed pane of every
batch and encodes them as they are: no validation on the way out, since every value was
checked when it came in.

A record's values, free-form, are described as any JSON here: their limits are the
wire's (`pane.RECORDS_MAX`, `pane.JSON_DEPTH`), and a schema spelling out the depth
limit would be tens of kilobytes.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from msgspec import Meta

from .pane import (
    RECORDS_MAX,
    KeyName,
    KindName,
    LastKnown,
    Name,
    PaneId,
    Percent,
    Source,
    State,
    Text,
    Time,
)
from .why import Why

__all__ = ["LastKnown", "PaneDetail", "PaneView", "StreamChange", "StreamEnd", "StreamSnapshot"]

Record = dict[str, Any]


class PaneView(msgspec.Struct):
    """A live pane, as `GET /api/panes` and the live stream show it: what its agent is
    doing (`state`, `kind`, `msg`), where it is (`host`, `tmux`, `session`, `window`,
    `pane`) and how fresh that is (`reachable`, `stale`, `last_seen`)."""

    # the pane definition's shown fields (`pane.API_FIELDS`), in its order
    session: Name | None
    window: Text | None
    agent: Name | None
    state: State | None
    kind: KindName | None
    msg: Text | None
    source: Source | None
    observable: bool
    title: Text | None
    progress: Percent | None
    since: Annotated[
        Time | None, Meta(description="when the pane entered its state (seconds since the epoch)")
    ]
    process: Text | None
    records: Annotated[
        tuple[Record, ...],
        Meta(max_length=RECORDS_MAX, description="the records the pane's agents reported (OSC 7501)"),
    ]
    last_seen: Annotated[float | None, Meta(description="when its collector last reported it")]
    rev: Annotated[int, Meta(description="the revision of the pane's last change (the stream's `id`)")]
    last_known: Annotated[
        LastKnown | None,
        Meta(description="what the pane was before it lost its state where it cannot be seen (behind ssh); "
             "null while it has a state or is observable"),
    ]  # fmt: skip
    # its row's identity, and what the server adds from its host
    id: int
    tmux: KeyName
    pane: PaneId
    host: Name | None
    collector: Annotated[Name | None, Meta(description="the name of the collector token it came from")]
    reachable: Annotated[bool, Meta(description="false while its collector or the link to its host is away")]
    stale: Annotated[bool, Meta(description="its state is the last known one: its host is unreachable")]
    unreachable_since: Annotated[
        float | None, Meta(description="while its host is unreachable, since when; else null")
    ]
    input: Annotated[bool, Meta(description="its collector types answers from the board")]


class PaneDetail(PaneView, kw_only=True):
    """One pane, as `GET /api/panes/{id}` shows it: the `PaneView` and what decided its
    state (`why`: names, pids, rule ids and screen rows, never the rows' text; null
    without evidence the server reads). The list and the stream go without it."""

    why: Why | None = None


class StreamSnapshot(msgspec.Struct):
    """The stream's `snapshot` event: every live pane at revision `rev`."""

    rev: int
    panes: list[PaneView]


class StreamChange(msgspec.Struct, kw_only=True, omit_defaults=True):
    """The stream's `change` event: the panes changed up to revision `rev` (whole, as in
    `GET /api/panes`) and the ids of those that went. `resumed`: the first event of a
    stream resumed with `Last-Event-ID`, in place of a snapshot (absent otherwise)."""

    rev: int
    resumed: bool = False
    panes: list[PaneView]
    gone: list[int]


class StreamEnd(msgspec.Struct):
    """The stream's `reset` and `revoked` events: why it ends."""

    reason: str
