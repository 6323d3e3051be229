"""The uplink's messages are defined once (`paneboard_protocol.wire`): the server's
validation, the collector's builders and docs/wire.md are held to those definitions."""

from __future__ import annotations

import re
from pathlib import Path
from typing import get_type_hints

from paneboard_protocol import wire as w
from paneboard_server.ingest import wire as sw

ROOT = Path(__file__).resolve().parents[2]
SERVER_MODELS = {
    "hello": sw.Hello,
    "snapshot": sw.Snapshot,
    "delta": sw.Delta,
    "pane": sw.PaneOp,
    "gone": sw.GoneOp,
    "host": sw.HostOp,
    "screen": sw.Screen,
    "answered": sw.Answered,
}


def test_server_validation_has_the_definitions_fields() -> None:
    defs = {**w.COLLECTOR_MESSAGES, **w.OPS}
    assert set(defs) == set(SERVER_MODELS)
    for name, td in defs.items():
        assert set(SERVER_MODELS[name].model_fields) == set(get_type_hints(td)), name
    assert set(sw.Key.model_fields) == set(get_type_hints(w.Key))
    assert set(sw.HostIn.model_fields) == set(get_type_hints(w.HostState))
    assert sw.PROTOCOL == w.PROTOCOL


def test_what_the_builders_make_the_server_accepts() -> None:
    key = w.Key(host="h", tmux="default", pane="%1")
    update = {"key": key, "session": "s", "window": "w", "state": "idle", "t": 2.0}
    msgs = [
        w.hello("stream-1", "0.1", ["h"]),
        w.snapshot(1, 2.0, {"h": w.host_state(True, None)}, [update]),
        w.delta(2, [w.pane_op(update), w.gone_op(key, 3.0), w.host_op("h", False, "lost", 3.0)]),
        w.screen(
            key,
            2.0,
            ["\x1b[1mDo you want to proceed?\x1b[0m", " 1. Yes"],
            (80, 24),
            (0, 1),
            "a" * 64,
            state="blocked",
            prompt="Do you want to proceed?",
            answers=[{"id": "yes", "label": "Yes"}],
            input=True,
        ),
        w.screen(key, 2.0, [], (0, 0), (0, 0), "", error="screens are switched off for this host"),
        w.answered("r1", "typed", "Do you want to proceed?"),
    ]
    for m in msgs:
        parsed = sw.parse(w.encode(m), 1 << 20, 100)
        assert parsed.type == m["type"]


def test_server_messages_parse_and_unknown_ones_are_ignored() -> None:
    key = w.Key(host="h", tmux="default", pane="%1")
    for m in (
        w.welcome("0.1", None, True),
        w.ack(3),
        w.resync("gap"),
        w.seen(key, 1.0),
        w.watch(key, 100),
        w.unwatch(key),
        w.answer("r1", key, "a" * 64, 9.0, answer="yes"),
    ):
        assert w.parse_server(w.encode(m)) == m
    assert w.parse_server('{"type": "screen-please"}') is None
    assert w.parse_server("not json") is None


def test_the_server_refuses_what_screens_and_answers_may_not_carry() -> None:
    key = w.Key(host="h", tmux="default", pane="%1")
    good = w.screen(key, 2.0, ["x"], (80, 24), (0, 0), "b" * 64, answers=[{"id": "yes", "label": "Yes"}])
    bad = [
        {**good, "lines": ["x"] * (w.SCREEN_LINES_MAX + 1)},
        {**good, "lines": ["a\x00b"]},
        {**good, "fingerprint": "not-hex"},
        {**good, "answers": [{"id": "Yes Please!", "label": "x"}]},
        {**good, "cursor": [1]},
        {**w.answered("r1", "typed"), "outcome": "maybe"},
        {**w.answered("r 1", "typed")},
    ]
    for m in bad:
        try:
            sw.parse(w.encode(m), 1 << 20, 100)
        except sw.WireError:
            continue
        raise AssertionError(f"accepted {m!r}")


def test_screen_lines_keep_only_colours() -> None:
    key = w.Key(host="h", tmux="default", pane="%1")
    m = w.screen(
        key, 2.0, ["\x1b[31mred\x1b[0m\x1b]52;c;ZXZpbA==\x07\x1b[2J\x9b5n end"], (80, 24), (0, 0), "c" * 64
    )
    parsed = sw.parse(w.encode(m), 1 << 20, 100)
    assert parsed.lines == ["\x1b[31mred\x1b[0m end"]


def test_docs_show_every_message_with_its_fields() -> None:
    doc = (ROOT / "docs" / "wire.md").read_text()
    groups = [("type", w.COLLECTOR_MESSAGES), ("type", w.SERVER_MESSAGES), ("op", w.OPS)]
    for tag, defs in groups:
        for name, td in defs.items():
            m = re.search(re.escape(f'{{"{tag}": "{name}"') + "(.*)", doc)
            assert m, f"docs/wire.md has no example of {name!r}"
            example = m.group(1) + doc[m.end() : m.end() + 200]
            for field in get_type_hints(td):
                if field != tag:
                    assert f'"{field}"' in example, f"docs/wire.md's {name!r} lacks {field!r}"
