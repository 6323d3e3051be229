"""The uplink's messages are defined once (`paneboard_protocol.wire`): the collector
builds and encodes those classes, the server decodes into the same ones, and docs/wire.md
is held to them."""

from __future__ import annotations

import json
import re
import typing
from pathlib import Path
from typing import get_type_hints

import msgspec
import pytest
from paneboard_protocol import pane as pane_def
from paneboard_protocol import wire as w
from paneboard_protocol.pane import PaneKey, PaneUpdate
from paneboard_server.ingest import wire as sw

ROOT = Path(__file__).resolve().parents[2]


def _builder_messages() -> list[w.CollectorMessage]:
    key = PaneKey("h", "default", "%1")
    update = PaneUpdate(
        key=key,
        session="s",
        window="w",
        agent=None,
        state="idle",
        kind=None,
        msg=None,
        source=None,
        observable=True,
        t=2.0,
    )
    return [
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
            answers=[w.AnswerChoice(id="yes", label="Yes")],
            input=True,
        ),
        w.screen(key, 2.0, [], (0, 0), (0, 0), "", error="screens are switched off for this host"),
        w.answered("r1", "typed", "Do you want to proceed?"),
    ]


def test_the_server_decodes_into_the_very_classes_the_collector_sends() -> None:
    """One definition, no copy: what the collector builds and encodes, the server's parse
    gives back as the same class with the same values."""
    for m in _builder_messages():
        parsed = sw.parse(w.encode(m), 1 << 20, 100)
        assert type(parsed) is type(m)
        assert parsed == m
    assert set(w.COLLECTOR_MESSAGES.values()) == set(typing.get_args(w.CollectorMessage))
    assert set(w.OPS.values()) == set(typing.get_args(w.Op))
    assert sw.PROTOCOL == w.PROTOCOL


def test_a_message_with_text_to_clean_is_cleaned_and_one_with_a_bad_name_refused() -> None:
    """The admission the types cannot do: display text cleaned as the collector cleans it,
    a name that is not plain refused (cleaning could merge two names), NUL refused."""
    upd = msgspec.to_builtins(_builder_messages()[2])
    upd["ops"][0]["update"]["msg"] = "ok\u202e?\tyes"
    parsed = sw.parse(json.dumps(upd), 1 << 20, 100)
    assert isinstance(parsed, w.Delta) and isinstance(parsed.ops[0], w.PaneOp)
    assert parsed.ops[0].update.msg == "ok? yes"
    for at, value in (
        ("key", {"host": "h\u200b", "tmux": "default", "pane": "%1"}),
        ("evidence", {"a": "\x00"}),
    ):
        bad = msgspec.to_builtins(_builder_messages()[2])
        bad["ops"][0]["update"][at] = value
        with pytest.raises(sw.WireError) as err:
            sw.parse(json.dumps(bad), 1 << 20, 100)
        assert err.value.at is not None and err.value.at.startswith(f"ops.0.update.{at}"), err.value.at
        assert err.value.seq == 2


def test_every_field_s_type_and_limit_is_checked_while_decoding() -> None:
    """A wrong type or a value beyond its limit is refused with the field's path."""
    snap = msgspec.to_builtins(_builder_messages()[1])
    cases = [
        (("panes", 0, "msg"), 3, "panes.0.msg"),
        (("panes", 0, "session"), "x" * (pane_def.NAME_MAX + 1), "panes.0.session"),
        (("panes", 0, "state"), "sleeping", "panes.0.state"),
        (("panes", 0, "progress"), 101, "panes.0.progress"),
        (("panes", 0, "evidence"), {"n": 2**63}, "panes.0.evidence"),
        (("panes", 0, "key", "pane"), "", "panes.0.key.pane"),
        (("seq",), -1, "seq"),
    ]
    for path, value, at in cases:
        bad = json.loads(json.dumps(snap))
        target = bad
        for part in path[:-1]:
            target = target[part]
        target[path[-1]] = value
        with pytest.raises(sw.WireError) as err:
            sw.parse(json.dumps(bad), 1 << 20, 100)
        assert err.value.at is not None and err.value.at.startswith(at), (path, err.value.at)
    deep: object = 1
    for _ in range(pane_def.JSON_DEPTH):
        deep = [deep]
    bad = json.loads(json.dumps(snap))
    bad["panes"][0]["evidence"] = {"deep": deep}
    with pytest.raises(sw.WireError):
        sw.parse(json.dumps(bad), 1 << 20, 100)
    bad["panes"][0]["evidence"] = {"deep": deep[0]}  # type: ignore[index]  # one level less
    sw.parse(json.dumps(bad), 1 << 20, 100)


def test_the_server_refuses_what_screens_and_answers_may_not_carry() -> None:
    good = msgspec.to_builtins(
        w.screen(
            PaneKey("h", "default", "%1"),
            2.0,
            ["x"],
            (80, 24),
            (0, 0),
            "b" * 64,
            answers=[w.AnswerChoice("yes", "Yes")],
        )
    )
    answered = msgspec.to_builtins(w.answered("r1", "typed"))
    bad = [
        {**good, "lines": ["x"] * (w.SCREEN_LINES_MAX + 1)},
        {**good, "lines": ["a\x00b"]},
        {**good, "fingerprint": "not-hex"},
        {**good, "answers": [{"id": "Yes Please!", "label": "x"}]},
        {**good, "cursor": [1]},
        {**answered, "outcome": "maybe"},
        {**answered, "id": "r 1"},
    ]
    for m in bad:
        try:
            sw.parse(w.encode(m), 1 << 20, 100)
        except sw.WireError:
            continue
        raise AssertionError(f"accepted {m!r}")


def test_screen_lines_keep_only_colours() -> None:
    key = PaneKey("h", "default", "%1")
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
            found = list(re.finditer(re.escape(f'{{"{tag}": "{name}"') + "(.*)", doc))
            assert found, f"docs/wire.md has no example of {name!r}"
            # each example runs to the next example or the end of its code block; a message
            # may be shown by several (an answer by id, with text, with a key)
            example = ""
            for m in found:
                rest = doc[m.end() :]
                end = min(i for i in (rest.find("\n{"), rest.find("```"), len(rest)) if i >= 0)
                example += m.group(1) + rest[:end]
            for field in getattr(td, "__struct_fields__", None) or get_type_hints(td):
                if field != tag:
                    assert f'"{field}"' in example, f"docs/wire.md's {name!r} lacks {field!r}"
