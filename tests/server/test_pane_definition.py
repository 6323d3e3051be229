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
import types
import typing
from pathlib import Path

import msgspec
from paneboard_agent.sink import PaneKey, PaneUpdate
from paneboard_protocol import pane as d
from paneboard_protocol.arbitration import Classification
from paneboard_protocol.events import BLOCKED_KINDS, REPORT_STATES
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
    assert msgspec.json.decode(msgspec.json.encode(u), type=PaneUpdate) == u  # the wire's own class


_TYPES = {"str": str, "int": int, "float": float, "bool": bool, "json": dict, "list": (tuple, list)}


_LITERAL = {typing.Literal: str}  # every Literal of the pane is one of names


def _base_types(hint: object) -> set[object]:
    """`str | None` -> {str, None}; `tuple[dict, ...]` -> {tuple}."""
    args = typing.get_args(hint) if typing.get_origin(hint) in (typing.Union, types.UnionType) else (hint,)
    return {
        None if a is type(None) else _LITERAL.get(typing.get_origin(a), typing.get_origin(a) or a)
        for a in args
    }


def _held_to_the_definition(cls: type, identity: list[str], which: list[d.Field], server: bool) -> None:
    """A written-out pane class carries exactly these fields of the definition, in its
    order, each with the definition's type (None allowed where the definition allows it) and
    default (a server pane holds None where the wire would default)."""
    fields = dataclasses.fields(cls)
    assert [f.name for f in fields] == [*identity, *(f.name for f in which)]
    hints = typing.get_type_hints(cls)
    for spec in which:
        got = _base_types(hints[spec.name])
        want = _TYPES[spec.type]
        assert (got - {None}) <= set(want if isinstance(want, tuple) else (want,)) and got - {None}, spec.name
        # a stored value may be NULL where the column is nullable; a wire value only
        # where, besides, its default is None (pane.Field)
        may_be_none = spec.nullable and (server or spec.default is None)
        assert (None in got) == may_be_none, f"{spec.name}: None allowed is {may_be_none}"
        f = next(x for x in fields if x.name == spec.name)
        if f.default is not dataclasses.MISSING:
            value = f.default
        elif f.default_factory is not dataclasses.MISSING:
            value = f.default_factory()
        else:
            assert spec.required and not server, f"{spec.name} has no default"
            continue
        expected = (None if spec.nullable else spec.default) if server else spec.default
        if spec.type == "list":
            expected = list(spec.default) if server else tuple(spec.default)
        if spec.type == "json" and isinstance(spec.default, dict):
            expected = {}
        assert value == expected and type(value) is type(expected), (spec.name, value, expected)


def test_the_written_out_classes_are_the_definition() -> None:
    _held_to_the_definition(PaneUpdate, ["key"], [f for f in d.FIELDS if f.update], server=False)
    _held_to_the_definition(
        Pane, ["id", "host_id", "tmux", "pane"], [f for f in d.FIELDS if f.row or f.api], server=True
    )


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
        "    return PaneUpdate(PaneKey('h', 't', '%1'), sesion='s')\n"
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
    assert d.WIRE_TEXT_MAX == {
        "session": d.NAME_MAX,
        "window": d.TEXT_MAX,
        "agent": d.NAME_MAX,
        "kind": d.KIND_MAX,
        "msg": d.TEXT_MAX,
        "title": d.TEXT_MAX,
        "process": d.TEXT_MAX,
    }
    u = PaneUpdate(PaneKey("h", "t", "%1"), "", "", None, None, None, None, None, True, 1.0)
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
