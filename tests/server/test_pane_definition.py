"""Everything that describes a pane agrees with `paneboard_protocol.pane`, its one definition.

Most of it is derived (so these tests pin the derivation); where derivation is not
sensible (the page's JS, the protocol's report vocabulary) the copy is compared here.
The Alembic migrations are held to the derived schema by `test_migrations_match_schema`.
"""

from __future__ import annotations

import dataclasses
import re
import subprocess
import sys
from pathlib import Path

import msgspec
from paneboard_agent.sink import PaneKey, PaneUpdate
from paneboard_protocol import pane as d
from paneboard_protocol.arbitration import Classification
from paneboard_protocol.events import BLOCKED_KINDS, REPORT_STATES
from paneboard_server.panes import reclassify
from paneboard_server.panes.model import Host, Pane
from paneboard_server.store import schema
from support.reports import pane_report

ROOT = Path(__file__).resolve().parents[2]


def test_classifier_produces_every_classification_field() -> None:
    names = {f.name for f in dataclasses.fields(Classification)}
    assert set(d.CLASSIFICATION_FIELDS) <= names
    assert set(Classification().to_json()) == set(d.CLASSIFICATION_FIELDS)


def test_update_carries_exactly_the_update_fields_in_order() -> None:
    shared = [f.name for f in msgspec.structs.fields(d.PaneFields)]
    assert [f.name for f in msgspec.structs.fields(PaneUpdate)] == [*shared, "key", "t"]
    assert (*shared, "t") == d.UPDATE_FIELDS
    u = pane_report("%1", "idle")
    assert set(u.wire_json()) == {"key", *d.UPDATE_FIELDS}
    assert msgspec.json.decode(msgspec.json.encode(u), type=PaneUpdate) == u  # the wire's own class


def test_both_ends_carry_the_one_definition() -> None:
    """The collector's report and the server's pane are the same written-out fields: both
    classes inherit `PaneFields`; the server's adds what only it keeps (`StoredPane`) and
    its row's identity. `FIELDS` is read from them, nowhere else."""
    shared = [f.name for f in msgspec.structs.fields(d.PaneFields)]
    kept = [f.name for f in msgspec.structs.fields(d.StoredPane)]
    assert kept[: len(shared)] == shared
    assert [f.name for f in msgspec.structs.fields(Pane)] == [*kept, "id", "host_id", "tmux", "pane"]
    assert [f.name for f in d.FIELDS] == [*shared, "t", *kept[len(shared) :]]
    assert issubclass(PaneUpdate, d.PaneFields) and issubclass(Pane, d.StoredPane)


def test_the_table_read_from_the_classes() -> None:
    """What `FIELDS` reads from the annotations: each flag at work somewhere."""
    f = d.BY_NAME
    # required on the wire, yet a pane only heard of has none: a nullable column
    assert f["session"].required and f["session"].nullable and f["session"].default == ""
    assert f["agent"].required and f["agent"].nullable and f["agent"].default is None
    assert f["observable"].required and not f["observable"].nullable and f["observable"].default is True
    assert f["t"].update and f["t"].required and not (f["t"].row or f["t"].api or f["t"].nullable)
    assert f["title"].update and not f["title"].required and f["title"].type == "str"
    assert f["progress"].type == "int" and f["since"].type == "float" and f["observable"].type == "bool"
    assert f["records"].type == "list" and f["records"].api and not f["records"].row
    assert f["records"].default == () and not f["records"].nullable
    assert f["evidence"].type == "json" and f["evidence"].row and not f["evidence"].api
    assert (f["state"].sql_len, f["kind"].sql_len, f["source"].sql_len) == (
        d.STATE_MAX,
        d.KIND_MAX,
        d.STATE_MAX,
    )
    assert f["rev"].sql_big and not f["rev"].update and f["rev"].default == 0
    assert f["last_known"].api and not f["last_known"].row and f["last_known"].nullable
    assert d.HISTORY_FIELDS == ("agent", "state", "kind", "msg", "source")
    assert not any(x.update for x in d.FIELDS if x.name in ("last_seen", "rev", "gone_at", "last_known"))


def test_a_pane_only_heard_of_knows_nothing() -> None:
    p = Pane.heard_of(1, 2, "default", "%1")
    assert (p.session, p.window, p.agent, p.state, p.observable, p.records, p.rev) == (
        None,
        None,
        None,
        None,
        True,
        (),
        0,
    )
    q = p.copy()
    q.state = "idle"
    assert p.state is None  # the batch's copy, not the mirror


def test_a_misspelt_or_mistyped_field_fails_the_type_check(tmp_path: Path) -> None:
    src = tmp_path / "uses_panes.py"
    src.write_text(
        "from paneboard_agent.sink import PaneKey, PaneUpdate\n"
        "from paneboard_protocol.wire import Delta\n"
        "from paneboard_server.panes.model import Pane\n"
        "def f(p: Pane, u: PaneUpdate, w: Delta) -> object:\n"
        "    a = p.stat_e\n"
        "    b = u.msg + 1\n"
        "    c = w.ops[0].update.prgress\n"
        "    return PaneUpdate(key=PaneKey('h', 't', '%1'), sesion='s')\n"
    )
    run = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-incremental", "--no-error-summary", str(src)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert '"Pane" has no attribute "stat_e"' in run.stdout, run.stdout + run.stderr
    assert 'Unsupported operand types for + ("str" and "int")' in run.stdout, run.stdout
    assert 'Unexpected keyword argument "sesion"' in run.stdout, run.stdout
    assert 'has no attribute "prgress"' in run.stdout, run.stdout


def test_the_limits_written_in_the_annotations_are_the_wire_s() -> None:
    """A pane's limits are written once, in `PaneUpdate`'s annotations: each bound is
    taken, one beyond it refused, while decoding; `WIRE_TEXT_MAX` (what the collector cuts
    to) reads the same bounds."""
    literals = {"state", "source"}  # names from a closed set: their limit is the set
    assert set(d.WIRE_TEXT_MAX) == {f.name for f in d.FIELDS if f.update and f.type == "str"} - literals
    assert set(d.WIRE_TEXT_MAX.values()) <= {d.NAME_MAX, d.TEXT_MAX, d.KIND_MAX}
    assert (d.WIRE_TEXT_MAX["session"], d.WIRE_TEXT_MAX["msg"]) == (d.NAME_MAX, d.TEXT_MAX)
    assert d.WIRE_TEXT_MAX["kind"] == d.KIND_MAX
    u = PaneUpdate(
        key=PaneKey("h", "t", "%1"),
        session="",
        window="",
        agent=None,
        state=None,
        kind=None,
        msg=None,
        source=None,
        observable=True,
        t=1.0,
    )
    base = msgspec.to_builtins(u)
    for name, limit in d.WIRE_TEXT_MAX.items():
        _decode({**base, name: "x" * limit})
        assert _rejected({**base, name: "x" * (limit + 1)}), name
    for name, hi in (("progress", 100), ("t", d.TIME_MAX), ("since", d.TIME_MAX)):
        _decode({**base, name: hi})
        assert _rejected({**base, name: hi * 2 + 1}) and _rejected({**base, name: -1}), name
    for name, values in (("state", d.STATES), ("source", d.SOURCES)):
        for c in values:
            _decode({**base, name: c})
        assert _rejected({**base, name: "nonsense"}), name
    _decode({**base, "records": [{}] * d.RECORDS_MAX})
    assert _rejected({**base, "records": [{}] * (d.RECORDS_MAX + 1)})


def _decode(data: dict) -> PaneUpdate:
    return msgspec.json.decode(msgspec.json.encode(data), type=PaneUpdate)


def _rejected(data: dict) -> bool:
    try:
        _decode(data)
    except msgspec.ValidationError:
        return True
    return False


def test_server_pane_stores_and_shows_the_definitions_fields() -> None:
    p = Pane.heard_of(1, 2, "default", "%1")
    assert tuple(p.row()) == d.ROW_FIELDS
    api = p.api(Host(2, 9, "h"))
    extra = ["reachable", "stale", "unreachable_since"]
    shown = ["id", "host", "collector", "tmux", "pane", *d.API_FIELDS, *extra]
    assert sorted(api) == sorted(shown)  # exactly these, in whatever order the dict has
    assert reclassify.FIELDS == d.RECLASSIFY_FIELDS


def test_tables_have_a_column_per_stored_field() -> None:
    panes = [c.name for c in schema.panes.c]
    assert panes == ["id", "host_id", "tmux", "pane", *d.ROW_FIELDS]
    history = [c.name for c in schema.history.c]
    assert history == ["id", "pane_id", "t", *d.HISTORY_FIELDS, "prev_state", "reason"]
    for name in ("state", "kind", "source"):
        width = d.BY_NAME[name].sql_len
        assert schema.panes.c[name].type.length == width
        longest = d.WIRE_TEXT_MAX.get(name) or max(
            len(c) for c in (d.STATES if name == "state" else d.SOURCES)
        )
        assert longest <= (width or 0), name


def test_report_vocabulary_and_the_page_know_the_same_states_and_kinds() -> None:
    assert set(d.STATES) == REPORT_STATES
    assert set(d.KINDS) == BLOCKED_KINDS
    js = (ROOT / "web" / "js" / "model.js").read_text()
    block = js[js.index("export const STATES = {") : js.index("};", js.index("export const STATES"))]
    assert set(re.findall(r"^\s+(\w+):", block, re.M)) == {*d.STATES, "none"}
