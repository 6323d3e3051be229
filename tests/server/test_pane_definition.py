"""Everything that describes a pane agrees with `paneboard_protocol.pane`, its one definition.

Most of it is derived (so these tests pin the derivation); where derivation is not
sensible (the page's JS, the protocol's report vocabulary) the copy is compared here.
The Alembic migrations are held to the derived schema by `test_migrations_match_schema`.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from paneboard_agent.sink import PaneKey, PaneUpdate
from paneboard_protocol import pane as d
from paneboard_protocol.arbitration import Classification
from paneboard_protocol.events import BLOCKED_KINDS, REPORT_STATES
from paneboard_server.ingest.wire import PaneIn
from paneboard_server.panes import reclassify
from paneboard_server.panes.model import Host, Pane
from paneboard_server.store import schema

ROOT = Path(__file__).resolve().parents[2]


def test_classifier_produces_every_classification_field() -> None:
    names = {f.name for f in dataclasses.fields(Classification)}
    assert set(d.CLASSIFICATION_FIELDS) <= names
    assert set(Classification().to_json()) == set(d.CLASSIFICATION_FIELDS)


def test_update_carries_exactly_the_update_fields_in_order() -> None:
    assert [f.name for f in dataclasses.fields(PaneUpdate)] == ["key", *d.UPDATE_FIELDS]
    u = PaneUpdate(PaneKey("h", "default", "%1"), "s", "w", None, "idle", None, None, None, True, 1.0)
    assert set(u.wire_json()) == {"key", *d.UPDATE_FIELDS}
    assert set(PaneIn.model_fields) == {"key", *d.UPDATE_FIELDS}
    PaneIn.model_validate(u.wire_json())  # what the collector sends, the server accepts


def test_wire_limits_come_from_the_definition() -> None:
    base = {"key": {"host": "h", "tmux": "t", "pane": "%1"}, "t": 1.0}
    for f in d.FIELDS:
        if not f.update:
            continue
        if f.max_len is not None and f.type == "str":
            PaneIn.model_validate({**base, f.name: "x" * f.max_len})
            assert _rejected({**base, f.name: "x" * (f.max_len + 1)}), f.name
        if f.hi is not None:
            assert _rejected({**base, f.name: f.hi * 2 + 1}), f.name
        if f.choices is not None:
            for c in f.choices:
                PaneIn.model_validate({**base, f.name: c})
            assert _rejected({**base, f.name: "nonsense"}), f.name
    assert _rejected({**base, "records": [{}] * (d.RECORDS_MAX + 1)})


def _rejected(data: dict) -> bool:
    try:
        PaneIn.model_validate(data)
    except ValueError:
        return True
    return False


def test_server_pane_stores_and_shows_the_definitions_fields() -> None:
    p = Pane(1, 2, "default", "%1")
    assert tuple(p.row()) == d.ROW_FIELDS
    api = p.api(Host(2, 9, "h"))
    extra = ["reachable", "stale", "unreachable_since"]
    assert list(api) == ["id", "host", "collector", "tmux", "pane", *d.API_FIELDS, *extra]
    assert reclassify.FIELDS == d.RECLASSIFY_FIELDS


def test_tables_have_a_column_per_stored_field() -> None:
    panes = [c.name for c in schema.panes.c]
    assert panes == ["id", "host_id", "tmux", "pane", *d.ROW_FIELDS]
    history = [c.name for c in schema.history.c]
    assert history == ["id", "pane_id", "t", *d.HISTORY_FIELDS, "prev_state", "reason"]
    for name in ("state", "kind", "source"):
        width = d.BY_NAME[name].sql_len
        assert schema.panes.c[name].type.length == width
        assert max(len(c) for c in d.BY_NAME[name].choices or ("",)) <= (width or 0)


def test_report_vocabulary_and_the_page_know_the_same_states_and_kinds() -> None:
    assert set(d.STATES) == REPORT_STATES
    assert set(d.KINDS) == BLOCKED_KINDS
    js = (ROOT / "web" / "js" / "model.js").read_text()
    block = js[js.index("export const STATES = {") : js.index("};", js.index("export const STATES"))]
    assert set(re.findall(r"^\s+(\w+):", block, re.M)) == {*d.STATES, "none"}
