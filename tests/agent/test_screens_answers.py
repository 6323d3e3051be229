"""Screens and answers in the collector (screens.py), on real tmux with a real program
that asks and waits (paneboard.demo_ask): the screen of a watched pane is sent, an
answer is typed only when every check passes, and each refusal types nothing."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import sys
import time
from pathlib import Path
from typing import Any

import msgspec
import pytest
from paneboard_agent.collector import Collector, TmuxTarget
from paneboard_agent.transport import LocalTransport
from paneboard_protocol import wire
from paneboard_protocol.pane import PaneKey
from paneboard_protocol.rules import load_rules
from paneboard_protocol.server_messages import decode
from support.hang import within
from support.tmux import TmuxServer
from test_collector_inprocess import Recorder

pytestmark = pytest.mark.tmux


def asker(mode: str) -> str:
    """The prompt-and-wait program, named `claude` the way the demo names its agents."""
    path = shlex.quote(os.pathsep.join(p for p in sys.path if p))
    py = shlex.quote(sys.executable)
    argv0 = "-a claude " if mode == "permission" else ""
    inner = f"PYTHONPATH={path} exec {argv0}{py} -m paneboard.demo_ask {mode} --once"
    return f"bash -c {shlex.quote(inner)}"


async def _until(pred: Any, timeout: float = 20.0, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while not (value := pred()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.05)
    return value


class Side:
    def __init__(self) -> None:
        self.msgs: list[dict[str, Any]] = []

    def __call__(self, msg: wire.Screen | wire.Answered) -> None:
        self.msgs.append(msgspec.to_builtins(msg))  # as the server receives it

    def screens(self, pane: str) -> list[dict[str, Any]]:
        return [m for m in self.msgs if m["type"] == "screen" and m["key"]["pane"] == pane]

    def outcome(self, request: str) -> str | None:
        return next((m["outcome"] for m in self.msgs if m["type"] == "answered" and m["id"] == request), None)


def _read(msg: wire.ServerMessage) -> wire.ServerMessage:
    """A server message as the collector gets it: encoded, sent, decoded whole."""
    got = decode(wire.encode(msg))
    assert got == msg
    return got


def _run(tmux: TmuxServer, mode: str, scenario: Any, command: str | None = None, **target: Any) -> None:
    async def go() -> None:
        sink, side = Recorder(), Side()
        rules = load_rules(None)
        from paneboard_agent.collector import Options

        collector = Collector(
            [TmuxTarget(LocalTransport("here"), socket=tmux.name, **target)],
            sink,
            Options(rules=rules),
            side=side,
        )
        task = asyncio.create_task(collector.run())
        try:
            # A program reporting over OSC 7501 at once must start after the collector
            # reads the session's output: bytes written before that reach nobody (tmux
            # keeps no copy), and a question no screen rule reads would never be seen.
            await _until(lambda: sink.updates, what="the collector's first report")
            pane = tmux.new_window("main", "ask", command or asker(mode))
            key = PaneKey("here", tmux.name, pane)

            def latest() -> Any:
                found = [u for u in sink.updates if u.key.pane == pane]
                return found[-1] if found else None

            await _until(lambda: latest() is not None and latest().state == "blocked", what="blocked")
            await collector.command(_read(wire.watch(key)))
            await within(scenario(collector, side, key, pane, latest), 90, "the scenario")
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await within(task, 30, "the collector's stop")

    asyncio.run(go())


def _screen(tmux: TmuxServer, pane: str) -> str:
    return tmux.cmd("capture-pane", "-p", "-t", pane)


async def _asking(side: Side, pane: str, question: str) -> dict[str, Any]:
    """The latest screen taking text with the question drawn: the one the program waits
    on. (It writes its report, then its question: a screen between the two is `changed`
    by the time an answer sent on it arrives.)"""

    def shown(s: dict[str, Any]) -> bool:
        return bool(s["text"] and any(question in ln for ln in s["lines"]))

    return await _until(lambda: next((s for s in side.screens(pane)[::-1] if shown(s)), None), what=question)


def test_watched_screen_carries_answers_and_an_answer_is_typed(tmux_server: TmuxServer) -> None:
    async def scenario(collector: Collector, side: Side, key: Any, pane: str, latest: Any) -> None:
        shot = await _until(
            lambda: next((s for s in side.screens(pane) if s["answers"]), None), what="a screen with answers"
        )
        assert [a["id"] for a in shot["answers"]] == ["yes", "always", "no"]
        assert shot["input"] is True and shot["state"] == "blocked"
        assert any("\x1b[" in ln for ln in shot["lines"])  # colours travel
        assert any("Do you want to proceed?" in ln for ln in shot["lines"])
        # a stale fingerprint: refused, nothing typed
        stale = "0" * 64
        await collector.command(_read(wire.answer("r1", key, stale, time.time() + 60, answer="yes")))
        assert side.outcome("r1") == "changed"
        # an answer the prompt does not take
        fp = shot["fingerprint"]
        await collector.command(_read(wire.answer("r2", key, fp, time.time() + 60, answer="rm-rf")))
        assert side.outcome("r2") == "refused"
        # free text where the prompt takes none
        await collector.command(_read(wire.answer("r3", key, fp, time.time() + 60, text="yes")))
        assert side.outcome("r3") == "refused"
        # expired
        await collector.command(_read(wire.answer("r4", key, fp, time.time() - 1, answer="yes")))
        assert side.outcome("r4") == "expired"
        assert "Do you want to proceed?" in _screen(tmux_server, pane)  # nothing was typed
        # the real one
        await collector.command(_read(wire.answer("r5", key, fp, time.time() + 60, answer="yes")))
        assert side.outcome("r5") == "typed"
        await _until(lambda: "ANSWERED yes" in _screen(tmux_server, pane), what="the program continues")
        # a replay of the same answer: the prompt has moved on, nothing is typed again
        await collector.command(_read(wire.answer("r6", key, fp, time.time() + 60, answer="yes")))
        assert side.outcome("r6") in ("changed", "not-blocked", "used")
        await _until(lambda: latest().state != "blocked", what="no longer blocked")
        await collector.command(_read(wire.answer("r7", key, fp, time.time() + 60, answer="yes")))
        assert side.outcome("r7") == "not-blocked"
        # the page sees the new screen
        await _until(lambda: any("ANSWERED yes" in "".join(s["lines"]) for s in side.screens(pane)))

    _run(tmux_server, "permission", scenario, allow_input=True)


def test_without_allow_input_nothing_is_typed(tmux_server: TmuxServer) -> None:
    async def scenario(collector: Collector, side: Side, key: Any, pane: str, latest: Any) -> None:
        shot = await _until(lambda: next((s for s in side.screens(pane) if s["answers"]), None))
        assert shot["input"] is False
        await collector.command(
            _read(wire.answer("r1", key, shot["fingerprint"], time.time() + 60, answer="yes"))
        )
        assert side.outcome("r1") == "disabled"
        await asyncio.sleep(0.5)
        assert "Do you want to proceed?" in _screen(tmux_server, pane)
        assert "ANSWERED" not in _screen(tmux_server, pane)

    _run(tmux_server, "permission", scenario)


def test_no_screens_refuses_to_capture(tmux_server: TmuxServer) -> None:
    async def scenario(collector: Collector, side: Side, key: Any, pane: str, latest: Any) -> None:
        shot = await _until(lambda: next(iter(side.screens(pane)), None))
        assert shot["lines"] == [] and "switched off" in shot["error"]
        await collector.command(_read(wire.answer("r1", key, "0" * 64, time.time() + 60, answer="yes")))
        assert side.outcome("r1") == "disabled"

    _run(tmux_server, "permission", scenario, screens=False, allow_input=True)


def test_free_text_is_typed_literally(tmux_server: TmuxServer) -> None:
    text = "Enter C-c Escape ; \\; -l -- $(touch /tmp/x) 'q' \"dq\" ~!"

    async def scenario(collector: Collector, side: Side, key: Any, pane: str, latest: Any) -> None:
        shot = await _asking(side, pane, "Which branch should I push to?")
        assert shot["answers"] == [] and shot["input"]
        bad = "two\nlines"
        await collector.command(
            _read(wire.answer("r0", key, shot["fingerprint"], time.time() + 60, text=bad))
        )
        assert side.outcome("r0") == "refused"
        await collector.command(
            _read(wire.answer("r1", key, shot["fingerprint"], time.time() + 60, text=text))
        )
        assert side.outcome("r1") == "typed"
        await _until(lambda: "GOT " in _screen(tmux_server, pane), what="the program read the line")
        got = _screen(tmux_server, pane).split("GOT ", 1)[1].split("\n", 1)[0].strip()
        assert got == repr(text)

    _run(tmux_server, "question", scenario, allow_input=True)


def test_paneboard_ask_takes_an_answer_from_the_board(tmux_server: TmuxServer, tmp_path: Path) -> None:
    """A script's `paneboard ask` is a free-text question the board's operators can answer:
    the text is typed, the script gets it on its stdout, and the pane leaves blocked."""
    out = tmp_path / "answer"
    paneboard = str(Path(sys.executable).parent / "paneboard")
    ask = shlex.join([paneboard, "ask", "Deploy to prod?"])
    script = f'x=$({ask}); printf %s "$x" > {shlex.quote(str(out))}; exec sleep 600'
    text = "yes; but only eu-west-1"

    async def scenario(collector: Collector, side: Side, key: Any, pane: str, latest: Any) -> None:
        assert (latest().kind, latest().msg) == ("question", "Deploy to prod?")
        shot = await _asking(side, pane, "Deploy to prod?")
        assert shot["input"] and any("Deploy to prod?" in ln for ln in shot["lines"])
        await collector.command(
            _read(wire.answer("r1", key, shot["fingerprint"], time.time() + 60, text=text))
        )
        assert side.outcome("r1") == "typed"
        await _until(lambda: out.exists() and out.read_text() == text, what="the script's answer")
        await _until(lambda: latest().state == "idle", what="the pane to leave blocked")

    _run(tmux_server, "question", scenario, command=f"bash -c {shlex.quote(script)}", allow_input=True)


@pytest.mark.parametrize("text", ["git push;", "a\\;", ";", "x;;"])
def test_free_text_ending_in_a_semicolon_is_typed_byte_for_byte(tmux_server: TmuxServer, text: str) -> None:
    """tmux reads an argument ending in `;` as the end of a command (and `\\;` as `;`):
    `git push;` used to reach the pane as `git push`, a lone `;` as a bare Enter."""

    async def scenario(collector: Collector, side: Side, key: Any, pane: str, latest: Any) -> None:
        shot = await _asking(side, pane, "Which branch should I push to?")
        await collector.command(
            _read(wire.answer("r1", key, shot["fingerprint"], time.time() + 60, text=text))
        )
        assert side.outcome("r1") == "typed"
        await _until(lambda: "GOT " in _screen(tmux_server, pane), what="the program read the line")
        got = _screen(tmux_server, pane).split("GOT ", 1)[1].split("\n", 1)[0].strip()
        assert got == repr(text)

    _run(tmux_server, "question", scenario, allow_input=True)


def test_watch_of_an_excluded_or_unknown_pane_captures_nothing(tmux_server: TmuxServer) -> None:
    """A server may name any pane id: one in a session the collector's `exclude` globs
    match, or one it does not know, is neither captured nor typed into."""

    async def go() -> None:
        from paneboard_agent.collector import Options

        secret = tmux_server.new_session("secret-ops", asker("permission"))
        sink, side = Recorder(), Side()
        target = TmuxTarget(
            LocalTransport("here"), socket=tmux_server.name, exclude=["secret*"], allow_input=True
        )
        collector = Collector([target], sink, Options(rules=load_rules(None)), side=side)
        task = asyncio.create_task(collector.run())
        try:
            pane = tmux_server.new_window("main", "ask", asker("permission"))
            await _until(
                lambda: any(u.key.pane == pane and u.state == "blocked" for u in sink.updates), what="blocked"
            )
            await _until(
                lambda: "Do you want to proceed?" in _screen(tmux_server, secret), what="secret prompt"
            )
            assert not any(u.key.pane == secret for u in sink.updates)
            for target_pane in (secret, "%999"):
                key = PaneKey("here", tmux_server.name, target_pane)
                await collector.command(_read(wire.watch(key)))
                shot = await _until(
                    lambda p=target_pane: next(iter(side.screens(p)), None), what="the refusal"
                )
                assert shot["lines"] == [] and "does not watch that pane" in shot["error"]
                await collector.command(
                    _read(wire.answer("r-" + target_pane[1:], key, "0" * 64, time.time() + 60, answer="yes"))
                )
                assert side.outcome("r-" + target_pane[1:]) == "not-blocked"
            await asyncio.sleep(0.5)
            assert all(s["lines"] == [] for s in side.screens(secret))
            assert "ANSWERED" not in _screen(tmux_server, secret)
            # the tracked pane is still watched as before
            key = PaneKey("here", tmux_server.name, pane)
            await collector.command(_read(wire.watch(key)))
            await _until(lambda: any(s["answers"] for s in side.screens(pane)), what="a screen with answers")
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    asyncio.run(within(go(), 120, "the scenario"))
