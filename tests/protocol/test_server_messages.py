"""The server's messages as the collector reads them: one typed class each, read whole.

Every frame the server builds (`wire`'s helpers) reads back as the very object it was;
the classes are `wire`'s own; a known message with a field missing, of the wrong type or past its bound is
`Malformed` (None from `read_server`); and a misspelt field in code that uses these
classes fails the type check (mypy, run on a small file).
"""

from __future__ import annotations

import subprocess
import sys
import typing
from pathlib import Path

import msgspec
import pytest
from paneboard_protocol import server_messages as sm
from paneboard_protocol import wire as w
from paneboard_protocol.pane import PaneKey

KEY = PaneKey("h", "default", "%1")


def test_every_server_frame_reads_back_whole() -> None:
    frames = [
        w.welcome("0.1", None, True),
        w.welcome("0.1", 7, False),
        w.ack(3),
        w.resync("gap"),
        w.seen(KEY, 1.5),
        w.refused(4, "panes.0.msg", None, "too long"),
        w.refused(None, None, "h", "not yours"),
        w.watch(KEY, 100),
        w.unwatch(KEY),
        w.answer("r1", KEY, "a" * 64, 9.0, answer="yes"),
        w.answer("r2", KEY, "a" * 64, 9.0, text="git push;"),
        w.answer("r3", KEY, "a" * 64, 9.0, text="two\nlines"),
        w.answer("r4", KEY, "a" * 64, 9.0, press="Escape", process="4242"),
        w.answer("r5", KEY, "a" * 64, 9.0, press="Down"),
    ]
    for frame in frames:
        assert sm.read_server(w.encode(frame)) == frame  # the very class the server sent
        assert sm.read_server(msgspec.to_builtins(frame)) == frame  # already parsed, as tests pass it


def test_the_collector_reads_the_classes_the_server_builds() -> None:
    """One definition: the messages the collector acts on are `wire`'s own classes."""
    assert set(typing.get_args(sm.ServerMessage)) == set(w.SERVER_MESSAGES.values())
    for name, cls in w.SERVER_MESSAGES.items():
        assert cls.__struct_config__.tag == name
        assert getattr(sm, cls.__name__) is cls


GOOD = msgspec.to_builtins(w.answer("r1", KEY, "a" * 64, 9.0, answer="yes"))


@pytest.mark.parametrize(
    ("frame", "why"),
    [
        ({k: v for k, v in GOOD.items() if k != "fingerprint"}, "fingerprint: missing"),
        ({**GOOD, "fingerprint": "a" * 65}, "fingerprint"),
        ({**GOOD, "answer": None, "text": None}, "exactly one"),
        ({**GOOD, "text": "both"}, "exactly one"),
        ({**GOOD, "press": "Enter"}, "exactly one"),
        ({**GOOD, "answer": None, "press": "C-x"}, "press"),  # only keys of the allow-list
        ({**GOOD, "answer": None, "press": "Escape", "process": "12; rm"}, "process"),
        ({**GOOD, "text": "x" * (w.ANSWER_TEXT_MAX + 1), "answer": None}, "text"),
        ({**GOOD, "expires": "soon"}, "expires"),
        ({**GOOD, "expires": -1.0}, "expires"),
        ({**GOOD, "key": {"host": "h", "tmux": "t"}}, "key.pane: missing"),
        ({**GOOD, "key": "h/t/%1"}, "key"),
        ({**GOOD, "id": 5}, "id"),
        ({**msgspec.to_builtins(w.watch(KEY)), "scrollback": True}, "scrollback"),
        ({**msgspec.to_builtins(w.watch(KEY)), "scrollback": w.SCREEN_LINES_MAX + 1}, "scrollback"),
        ({**msgspec.to_builtins(w.ack(1)), "seq": -1}, "seq"),
        ({**msgspec.to_builtins(w.welcome("v", None, False)), "snapshot": "no"}, "snapshot"),
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
    assert sm.read_server({**msgspec.to_builtins(w.ack(2)), "later": 1}) == sm.Ack(2)
    assert sm.read_server('{"ack": 2}') is None  # no type
    # words for people are read whatever their length (the frame itself is bounded)
    long = sm.read_server(w.encode(w.resync("x" * 10_000)))
    assert isinstance(long, sm.Resync) and len(long.reason) == 10_000


@pytest.mark.proc
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
