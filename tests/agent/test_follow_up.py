"""Follow-ups and keys typed by the collector (screens.py), on real tmux: a program at an
idle input prompt drawn as Claude Code draws it (tests/support/idle_prompt.py, started as
`claude`, identified by its process) takes a follow-up only under the fingerprint of the
prompt the operator saw; text typed at the terminal in between makes it come back
`changed` with nothing typed; several lines go in as one bracketed paste; Escape only
while the process the operator saw is in front; a shell takes nothing."""

from __future__ import annotations

import asyncio
import contextlib
import json
import shlex
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from paneboard_agent.collector import Collector, Options, TmuxTarget
from paneboard_agent.transport.local import LocalTransport
from paneboard_protocol import wire
from paneboard_protocol.pane import PaneKey
from paneboard_protocol.rules import load_rules
from support.hang import within
from support.tmux import TmuxServer
from test_collector_inprocess import Recorder
from test_screens_answers import Side, _read, _until

pytestmark = pytest.mark.tmux

PROGRAM = Path(__file__).parent.parent / "support" / "idle_prompt.py"


def _records(path: Path) -> list[dict[str, str]]:
    if not path.exists():
        return []
    return [json.loads(ln) for ln in path.read_text(encoding="utf-8").splitlines()]


def _run(tmux: TmuxServer, tmp_path: Path, scenario: Any) -> None:
    record = tmp_path / "record.jsonl"

    async def go() -> None:
        sink, side = Recorder(), Side()
        target = TmuxTarget(LocalTransport("here"), socket=tmux.name, allow_input=True)
        collector = Collector([target], sink, Options(rules=load_rules(None)), side=side)
        task = asyncio.create_task(collector.run())
        try:
            await _until(lambda: sink.updates, what="the collector's first report")
            inner = f"exec -a claude {shlex.quote(sys.executable)} {shlex.quote(str(PROGRAM))} {record}"
            pane = tmux.new_window("main", "agent", f"bash -c {shlex.quote(inner)}")
            key = PaneKey("here", tmux.name, pane)

            def latest() -> Any:
                found = [u for u in sink.updates if u.key.pane == pane]
                return found[-1] if found else None

            await _until(lambda: latest() is not None and latest().state == "idle", what="idle")
            await collector.command(_read(wire.watch(key)))

            def shown() -> dict[str, Any] | None:
                got = side.screens(pane)
                return got[-1] if got and got[-1]["follow_up"] else None

            await within(scenario(collector, side, key, pane, shown, record), 90, "the scenario")
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await within(task, 30, "the collector's stop")

    asyncio.run(go())


def _ask(collector: Collector, side: Side, request: str, key: PaneKey, fp: str, **kind: Any) -> Any:
    async def go() -> str | None:
        await collector.command(_read(wire.answer(request, key, fp, time.time() + 60, **kind)))
        return side.outcome(request)

    return go()


def test_a_follow_up_is_typed_only_into_the_prompt_the_operator_saw(
    tmux_server: TmuxServer, tmp_path: Path
) -> None:
    async def scenario(
        collector: Collector, side: Side, key: PaneKey, pane: str, shown: Any, record: Path
    ) -> None:
        first = await _until(shown, what="an idle screen that takes a follow-up")
        assert first["state"] in ("idle", "done") and first["input"] is True
        assert first["process"] is not None and first["process"].isdigit()
        fp = first["fingerprint"]
        # a stale fingerprint, an escape inside the text: nothing typed
        assert await _ask(collector, side, "f1", key, "0" * 64, text="run the tests") == "changed"
        assert await _ask(collector, side, "f2", key, fp, text="a\x1b[201~b") == "refused"
        assert await _ask(collector, side, "f3", key, fp, answer="yes") == "not-blocked"
        assert _records(record) == []
        # the real one
        assert await _ask(collector, side, "f4", key, fp, text="run the tests;") == "typed"
        await _until(lambda: _records(record), what="the submission")
        assert _records(record) == [{"submitted": "run the tests;"}]
        # a replay of the same screen: nothing typed again
        assert await _ask(collector, side, "f5", key, fp, text="run the tests;") in ("changed", "used")

        # several lines: one submission, the newlines kept as text
        # (the screen after the submission: the text drawn in the box before its Enter is
        # a screen of its own, the collector waits for that before it presses Enter)
        def answered() -> dict[str, Any] | None:
            s = shown()
            return s if s and any("You said: run the tests;" in ln for ln in s["lines"]) else None

        second = await _until(answered, what="the next prompt")
        assert second["fingerprint"] != fp
        lines = "fix the parser\nthen run the tests"
        assert await _ask(collector, side, "f6", key, second["fingerprint"], text=lines) == "typed"
        await _until(lambda: len(_records(record)) == 2, what="the pasted submission")
        assert _records(record)[1] == {"submitted": lines}

    _run(tmux_server, tmp_path, scenario)


def test_text_typed_at_the_terminal_in_between_makes_it_changed(
    tmux_server: TmuxServer, tmp_path: Path
) -> None:
    async def scenario(
        collector: Collector, side: Side, key: PaneKey, pane: str, shown: Any, record: Path
    ) -> None:
        seen = await _until(shown, what="an idle screen that takes a follow-up")
        tmux_server.cmd("send-keys", "-t", pane, "-l", "git push --force")  # a person at the terminal
        await _until(lambda: "git push" in tmux_server.cmd("capture-pane", "-p", "-t", pane), what="the echo")
        assert await _ask(collector, side, "i1", key, seen["fingerprint"], text="deploy it") == "changed"
        await asyncio.sleep(0.5)  # what would have been typed would show by now
        assert _records(record) == []
        assert "deploy it" not in tmux_server.cmd("capture-pane", "-p", "-t", pane)

    _run(tmux_server, tmp_path, scenario)


def test_escape_only_while_the_process_seen_is_in_front(tmux_server: TmuxServer, tmp_path: Path) -> None:
    async def scenario(
        collector: Collector, side: Side, key: PaneKey, pane: str, shown: Any, record: Path
    ) -> None:
        seen = await _until(shown, what="an idle screen")
        fp, pid = seen["fingerprint"], seen["process"]
        other = str(int(pid) + 1)
        assert await _ask(collector, side, "k1", key, fp, press="Escape", process=other) == "changed"
        assert await _ask(collector, side, "k2", key, fp, press="Escape") == "changed"  # no process named
        assert _records(record) == []
        assert await _ask(collector, side, "k3", key, fp, press="Escape", process=pid) == "typed"
        await _until(lambda: _records(record), what="the Escape")
        assert _records(record) == [{"key": "Escape"}]
        # a key that can approve: only under the screen's fingerprint
        assert await _ask(collector, side, "k4", key, "0" * 64, press="Enter") == "changed"
        now = await _until(shown, what="the screen")
        assert await _ask(collector, side, "k5", key, now["fingerprint"], press="y") == "typed"
        assert await _ask(collector, side, "k6", key, now["fingerprint"], press="y") in ("changed", "used")
        await asyncio.sleep(0.5)
        assert "❯ y" in tmux_server.cmd("capture-pane", "-p", "-t", pane)  # typed once, not twice
        assert "❯ yy" not in tmux_server.cmd("capture-pane", "-p", "-t", pane)

    _run(tmux_server, tmp_path, scenario)


def test_a_shell_takes_no_follow_up_nor_key(tmux_server: TmuxServer) -> None:
    async def go() -> None:
        sink, side = Recorder(), Side()
        target = TmuxTarget(LocalTransport("here"), socket=tmux_server.name, allow_input=True)
        collector = Collector([target], sink, Options(rules=load_rules(None)), side=side)
        task = asyncio.create_task(collector.run())
        try:
            await _until(lambda: sink.updates, what="the collector's first report")
            pane = tmux_server.new_window("main", "shell")
            key = PaneKey("here", tmux_server.name, pane)
            await _until(lambda: any(u.key.pane == pane for u in sink.updates), what="the shell's pane")
            await collector.command(_read(wire.watch(key)))
            shot = await _until(lambda: side.screens(pane) and side.screens(pane)[-1], what="its screen")
            assert shot["follow_up"] is False and shot["process"] is None
            fp = shot["fingerprint"]
            for i, kind in enumerate(
                [{"text": "touch pwned"}, {"press": "Enter"}, {"press": "C-c", "process": "1"}]
            ):
                assert await _ask(collector, side, f"s{i}", key, fp, **kind) in (
                    "refused",
                    "not-blocked",
                    "changed",
                )
            await asyncio.sleep(0.5)
            assert "pwned" not in tmux_server.cmd("capture-pane", "-p", "-t", pane)
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await within(task, 30, "the collector's stop")

    asyncio.run(go())
