"""The server's messages as the collector reads them: one typed class each, read whole.

Every frame the server builds (`wire`'s helpers) reads back as its class with every
field; the classes carry exactly the TypedDicts' fields (the JSON shapes docs/wire.md
shows); a known message with a field missing, of the wrong type or past its bound is
`Malformed` (None from `read_server`); and a misspelt field in code that uses these
classes fails the type check (mypy, run on a small file).
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path
from typing import get_type_hints

import pytest
from paneboard_protocol import server_messages as sm
from paneboard_protocol import wire as w

KEY = w.Key(host="h", tmux="default", pane="%1")
REF = sm.PaneRef("h", "default", "%1")


def test_every_server_frame_reads_back_whole() -> None:
    cases = [
        (w.welcome("0.1", None, True), sm.Welcome("0.1", None, True)),
        (w.welcome("0.1", 7, False), sm.Welcome("0.1", 7, False)),
        (w.ack(3), sm.Ack(3)),
        (w.resync("gap"), sm.Resync("gap")),
        (w.seen(KEY, 1.5), sm.Seen(REF, 1.5)),
        (w.refused(4, "panes.0.msg", None, "too long"), sm.Refused(4, "panes.0.msg", None, "too long")),
        (w.refused(None, None, "h", "not yours"), sm.Refused(None, None, "h", "not yours")),
        (w.watch(KEY, 100), sm.Watch(REF, 100)),
        (w.unwatch(KEY), sm.Unwatch(REF)),
        (w.answer("r1", KEY, "a" * 64, 9.0, answer="yes"), sm.Answer("r1", REF, "a" * 64, "yes", None, 9.0)),
        (
            w.answer("r2", KEY, "a" * 64, 9.0, text="git push;"),
            sm.Answer("r2", REF, "a" * 64, None, "git push;", 9.0),
        ),
    ]
    for frame, expected in cases:
        assert sm.read_server(w.encode(frame)) == expected
        assert sm.read_server(dict(frame)) == expected  # already parsed, as tests pass it


def test_the_classes_carry_exactly_the_wire_shapes() -> None:
    classes = {
        "welcome": sm.Welcome,
        "ack": sm.Ack,
        "resync": sm.Resync,
        "refused": sm.Refused,
        "seen": sm.Seen,
        "watch": sm.Watch,
        "unwatch": sm.Unwatch,
        "answer": sm.Answer,
    }
    assert set(classes) == set(w.SERVER_MESSAGES)
    for name, cls in classes.items():
        shape = set(get_type_hints(w.SERVER_MESSAGES[name])) - {"type", "protocol"}
        assert {f.name for f in dataclasses.fields(cls)} == shape, name


GOOD = dict(w.answer("r1", KEY, "a" * 64, 9.0, answer="yes"))


@pytest.mark.parametrize(
    ("frame", "why"),
    [
        ({k: v for k, v in GOOD.items() if k != "fingerprint"}, "fingerprint: missing"),
        ({**GOOD, "fingerprint": "a" * 65}, "fingerprint"),
        ({**GOOD, "answer": None, "text": None}, "exactly one"),
        ({**GOOD, "text": "both"}, "exactly one"),
        ({**GOOD, "text": "x" * (w.ANSWER_TEXT_MAX + 1), "answer": None}, "text"),
        ({**GOOD, "expires": "soon"}, "expires"),
        ({**GOOD, "expires": float("nan")}, "expires"),
        ({**GOOD, "key": {"host": "h", "tmux": "t"}}, "key.pane: missing"),
        ({**GOOD, "key": "h/t/%1"}, "key"),
        ({**GOOD, "id": 5}, "id"),
        ({**dict(w.watch(KEY)), "scrollback": True}, "scrollback"),
        ({**dict(w.watch(KEY)), "scrollback": w.SCREEN_LINES_MAX + 1}, "scrollback"),
        ({**dict(w.ack(1)), "seq": -1}, "seq"),
        ({**dict(w.welcome("v", None, False)), "snapshot": "no"}, "snapshot"),
    ],
)
def test_a_malformed_message_is_refused_whole(frame: dict, why: str) -> None:
    with pytest.raises(sm.Malformed, match=why):
        sm.decode(frame)
    assert sm.read_server(frame) is None


def test_unknown_and_unreadable_frames_are_nothing() -> None:
    assert sm.read_server('{"type": "screen-please"}') is None
    assert sm.read_server("not json") is None
    assert sm.read_server("[1, 2]") is None
    # a newer server's extra fields are ignored
    assert sm.read_server({**dict(w.ack(2)), "later": 1}) == sm.Ack(2)
    # words for people are cut, not refused
    long = sm.read_server(w.resync("x" * 10_000))
    assert isinstance(long, sm.Resync) and len(long.reason) == 4096


def test_a_misspelt_field_fails_the_type_check(tmp_path: Path) -> None:
    src = tmp_path / "uses_answer.py"
    src.write_text(
        "from paneboard_protocol import server_messages as sm\n"
        "def f(cmd: sm.Answer) -> str:\n"
        "    return cmd.fingerprnt\n"
        "def g(cmd: sm.Watch) -> int:\n"
        "    return cmd.scrollback + 'x'\n"
    )
    run = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-incremental", "--strict", "--no-error-summary", str(src)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert '"Answer" has no attribute "fingerprnt"' in run.stdout, run.stdout + run.stderr
    assert "Unsupported operand types" in run.stdout, run.stdout
