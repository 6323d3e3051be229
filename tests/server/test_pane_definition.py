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
from typing import Any, get_args, get_origin, get_type_hints

import msgspec
import pytest
from msgspec import Meta
from paneboard_agent.uplink import PaneKey, PaneUpdate
from paneboard_protocol import pane as d
from paneboard_protocol.arbitration import Classification
from paneboard_protocol.events import AGENT_STATES, CLEAR, REPORT_WORDS
from paneboard_protocol.records import LIVE_STATES, RESULT_STATES, ROLLUP_ORDER
from paneboard_protocol.rules import RULE_STATES
from paneboard_protocol.views import LastKnown, PaneView
from paneboard_server.ledger import WAITING
from paneboard_server.notify.events import NOTIFY_STATES
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


@pytest.mark.proc
def test_a_misspelt_or_mistyped_field_fails_the_type_check(tmp_path: Path) -> None:
    src = tmp_path / "uses_panes.py"
    src.write_text(
        "from paneboard_agent.uplink.sink import PaneKey, PaneUpdate\n"
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
    p = Pane.heard_of(1, 2, "default", "%1", state="blocked", msg="ok?", rev=7)
    assert tuple(p.row()) == d.ROW_FIELDS
    view = p.view(Host(2, 9, "h", reachable=False, unreachable_since=5.0), "laptop", input=True)
    got = (view.id, view.tmux, view.pane, view.state, view.msg, view.rev)
    assert got == (1, "default", "%1", "blocked", "ok?", 7)
    assert (view.host, view.collector, view.reachable, view.stale, view.unreachable_since, view.input) == (
        "h",
        "laptop",
        False,
        True,
        5.0,
        True,
    )
    assert p.view(Host(2, 9, "h", unreachable_since=5.0)).unreachable_since is None  # reachable again
    assert reclassify.FIELDS == d.RECLASSIFY_FIELDS


ADDED = ["id", "tmux", "pane", "host", "collector", "reachable", "stale", "unreachable_since", "input"]


def test_the_view_shows_the_definitions_shown_fields_with_their_types() -> None:
    """`PaneView` (what clients get, and the OpenAPI document's pane) writes the shown
    fields out again: the same names in the same order, the same types and limits (None
    allowed where the column may hold NULL), then the row's identity and its host's."""
    assert [f.name for f in msgspec.structs.fields(PaneView)] == [*d.API_FIELDS, *ADDED]
    stored = get_type_hints(d.StoredPane, include_extras=True)
    shown = get_type_hints(PaneView, include_extras=True)
    for name in d.API_FIELDS:
        t, _, extras = d._unwrap(stored[name])
        u, view_nullable, view_extras = d._unwrap(shown[name])
        assert view_nullable == d.BY_NAME[name].nullable, name
        assert _limits(view_extras) == _limits(extras), name
        if name == "records":  # free-form JSON, described as any object (views.py says why)
            assert get_origin(u) is tuple and get_args(u) == (dict[str, Any], ...)
        else:
            assert u == t, name


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


def test_every_layers_states_are_the_definitions() -> None:
    """The subsets and orders other layers keep are made of `State`s and cover what they
    claim to: a state added to `State` must find its place in each (or fail here)."""
    assert (*d.STATES, CLEAR) == REPORT_WORDS and CLEAR not in d.STATES
    assert (*d.STATES, "unknown") == RULE_STATES
    assert set(AGENT_STATES) < set(d.STATES)
    assert sorted(d.BOARD_ORDER) == sorted(ROLLUP_ORDER) == sorted(d.STATES)
    assert LIVE_STATES.isdisjoint(RESULT_STATES) and set(d.STATES) == LIVE_STATES | RESULT_STATES
    assert set(NOTIFY_STATES) | set(WAITING) < set(d.STATES)


def test_the_page_knows_the_definitions_states() -> None:
    """web/js keeps its own list (each state's icon, word and rank): held to `STATES`, its
    ranks to `BOARD_ORDER`, and the page's notification set to the server's."""
    js = (ROOT / "web" / "js" / "model.js").read_text()
    block = js[js.index("export const STATES = {") : js.index("};", js.index("export const STATES"))]
    ranks = {k: int(r) for k, r in re.findall(r"^\s+(\w+):.*\brank: (\d+)", block, re.M)}
    assert set(re.findall(r"^\s+(\w+):", block, re.M)) == set(ranks) == {*d.STATES, "none"}
    assert sorted(d.STATES, key=ranks.__getitem__) == list(d.BOARD_ORDER)
    assert ranks["none"] == max(ranks.values())
    for path in sorted((ROOT / "web" / "js").glob("*.js")):
        for name, items in re.findall(r"const (\w*STATES) = new Set\(\[([^\]]*)\]\)", path.read_text()):
            said = set(re.findall(r'"(\w+)"', items))
            assert said and said <= set(d.STATES), (path.name, name, said)
            if name == "NOTIFY_STATES":
                assert said == NOTIFY_STATES, path.name


def _limits(extras: tuple[Any, ...]) -> set[tuple[Any, ...]]:
    """The bounds an annotation's `Meta`s set (not their descriptions)."""
    bounds = ("min_length", "max_length", "ge", "le", "gt", "lt")
    got = (tuple(getattr(m, k) for k in bounds) for m in extras if isinstance(m, Meta))
    return {b for b in got if any(v is not None for v in b)}


def test_the_page_reads_only_fields_the_view_has() -> None:
    """The page's pane model (web/js/model.js) names the fields it reads (`PANE_FIELDS`)
    and reads each as `p.NAME`, and `last_known`'s as `lk.NAME`: every one is a field of
    the view the server sends, so a renamed or removed field fails here, not on a board.
    (tests/web/test_board_people.py checks the same in a browser, against a live server.)"""
    js = (ROOT / "web" / "js" / "model.js").read_text()
    start = js.index("export const PANE_FIELDS = [")
    listed = js[start : js.index("];", start)]
    names = re.findall(r'"(\w+)"', listed)
    view = [f.name for f in msgspec.structs.fields(PaneView)]
    assert names and set(names) <= set(view), set(names) - set(view)
    body = js[js.index("export function normalise(p)") : js.index("export function possiblyWaiting")]
    read = set(re.findall(r"\bp\.(\w+)", body))
    assert {"id", "state", "last_known", "unreachable_since"} <= read  # the pattern finds what it should
    assert read <= set(view), read - set(view)
    # read by name: listed (`input` is read as sent, under its own name)
    assert read - {"input"} == set(names)
    known = set(re.findall(r"\blk\.(\w+)", body))
    assert known and known <= {f.name for f in msgspec.structs.fields(LastKnown)}, known
