"""Free text to a `paneboard ask` is typed only while the asker is in front of its pane
(screens.py `_asker_in_front`), on real tmux with an interactive shell (job control, so
`ask` is a job of its own and another program can take the terminal while it waits)."""

from __future__ import annotations

import asyncio
import contextlib
import shlex
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from paneboard_agent.collector import Collector, Options, TmuxTarget
from paneboard_agent.transport import LocalTransport
from paneboard_protocol import wire
from paneboard_protocol.pane import PaneKey
from paneboard_protocol.rules import load_rules
from support.hang import within
from support.tmux import TmuxServer
from test_collector_inprocess import Recorder
from test_screens_answers import Side, _read, _until

pytestmark = pytest.mark.tmux

ASK = shlex.join([str(Path(sys.executable).parent / "paneboard"), "ask", "Deploy to prod?"])
SHELL = "env PS1='$ ' bash --norc --noprofile -i"


def _screen(tmux: TmuxServer, pane: str) -> str:
    return tmux.cmd("capture-pane", "-p", "-t", pane)


def _run(tmux: TmuxServer, typed: str, scenario: Any) -> None:
    """An interactive shell in a new window, `typed` at its prompt, and the pane
    blocked and watched; then `scenario(collector, side, key, pane, latest)`."""

    async def go() -> None:
        sink, side = Recorder(), Side()
        target = TmuxTarget(LocalTransport("here"), socket=tmux.name, allow_input=True)
        collector = Collector([target], sink, Options(rules=load_rules(None)), side=side)
        task = asyncio.create_task(collector.run())
        try:
            await _until(lambda: sink.updates, what="the collector's first report")
            pane = tmux.new_window("main", "asks", SHELL)
            key = PaneKey("here", tmux.name, pane)

            def latest() -> Any:
                found = [u for u in sink.updates if u.key.pane == pane]
                return found[-1] if found else None

            await _until(lambda: _screen(tmux, pane).rstrip().endswith("$"), what="the shell's prompt")
            tmux.send(pane, typed)
            await _until(lambda: latest() is not None and latest().state == "blocked", what="blocked")
            assert (latest().kind, latest().msg) == ("question", "Deploy to prod?")
            await collector.command(_read(wire.watch(key)))
            await within(scenario(collector, side, key, pane, latest), 90, "the scenario")
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await within(task, 30, "the collector's stop")

    asyncio.run(go())


def _writer(update: Any) -> Any:
    """The pid the classifier filed the blocked report under (its evidence's record)."""
    return next(r["pid"] for r in update.evidence["records"] if r["state"] == "blocked")


def test_an_answer_is_typed_while_ask_is_in_front(tmux_server: TmuxServer) -> None:
    text = "yes, eu-west-1 only"

    async def scenario(collector: Collector, side: Side, key: Any, pane: str, latest: Any) -> None:
        def asking(s: dict[str, Any]) -> bool:
            """`ask` has drawn its question (a row of its own, under the command line): the
            screen it waits on. One drawn before that is `changed` at the answer."""
            return bool(s["text"] and any(ln.strip() == "Deploy to prod?" for ln in s["lines"]))

        shot = await _until(
            lambda: next((s for s in side.screens(pane)[::-1] if asking(s)), None), what="ask's question"
        )
        # `ask` leads its own job: the report is its own, not its shell's
        shell_pid = int(tmux_server.cmd("display-message", "-p", "-t", pane, "#{pane_pid}"))
        assert _writer(latest()) != shell_pid
        await collector.command(
            _read(wire.answer("r1", key, shot["fingerprint"], time.time() + 60, text=text))
        )
        assert side.outcome("r1") == "typed"
        await _until(lambda: "rc=0" in _screen(tmux_server, pane), what="ask to end")
        lines = _screen(tmux_server, pane).split("\n")
        assert lines.count(text) == 1  # ask printed the answer (the typed line is on the prompt's row)
        await _until(lambda: latest().state != "blocked", what="the pane to leave blocked")

    _run(tmux_server, f'{ASK}; echo "rc=$?"', scenario)


def test_nothing_is_typed_while_another_program_is_in_front(tmux_server: TmuxServer) -> None:
    """`ask` sent to the background waits, stopped, for the terminal; its report stands
    under the shell, and stays live while a command the shell runs (`cat`) is in front.
    Free text then would go to `cat`, not to the question: refused, nothing typed."""
    text = "rm -rf build"

    async def scenario(collector: Collector, side: Side, key: Any, pane: str, latest: Any) -> None:
        tmux_server.send(pane, "cat")
        await _until(
            lambda: latest().process == "cat" and latest().state == "blocked",
            what="cat in front, still blocked",
        )
        shot = await _until(
            lambda: next(
                (
                    s
                    for s in side.screens(pane)[-1:]
                    if s["text"] and any(ln.rstrip().endswith(" cat") for ln in s["lines"])
                ),
                None,
            ),
            what="the screen with cat in front, taking text",
        )
        await collector.command(
            _read(wire.answer("r1", key, shot["fingerprint"], time.time() + 60, text=text))
        )
        assert side.outcome("r1") == "not-in-front"
        # whatever is typed reaches cat before a later key: the marker echoed, the text never
        tmux_server.send(pane, "MARK")
        await _until(lambda: _screen(tmux_server, pane).count("MARK") == 2, what="cat's echo of the marker")
        assert text not in _screen(tmux_server, pane)
        assert latest().state == "blocked"

    _run(tmux_server, f"{ASK} &", scenario)


def test_nothing_is_typed_into_a_shell_that_reported_a_question(tmux_server: TmuxServer) -> None:
    """`paneboard emit blocked` typed at an interactive prompt: the shell wrote the
    report and is in front, but a shell reads the text as a command: refused."""
    emit = shlex.join(
        [
            str(Path(sys.executable).parent / "paneboard"),
            "emit",
            "blocked",
            "--kind",
            "question",
            "--msg",
            "Deploy to prod?",
        ]
    )
    text = "touch pb-shell-ran"

    async def scenario(collector: Collector, side: Side, key: Any, pane: str, latest: Any) -> None:
        def at_prompt(s: dict[str, Any]) -> bool:
            """The shell is back at its prompt: the screen stays as it is (an earlier one,
            the command still echoing, is `changed` by the time the answer arrives)."""
            rows = [ln.strip() for ln in s["lines"] if ln.strip()]
            return bool(s["text"] and rows and rows[-1] == "$")

        shot = await _until(
            lambda: next((s for s in side.screens(pane)[::-1] if at_prompt(s)), None), what="the prompt back"
        )
        shell_pid = int(tmux_server.cmd("display-message", "-p", "-t", pane, "#{pane_pid}"))
        assert _writer(latest()) == shell_pid  # the shell itself filed it
        await collector.command(
            _read(wire.answer("r1", key, shot["fingerprint"], time.time() + 60, text=text))
        )
        assert side.outcome("r1") == "not-in-front"
        tmux_server.send(pane, "echo MARK-$((40+2))")
        await _until(lambda: "MARK-42" in _screen(tmux_server, pane), what="the shell's echo of the marker")
        assert text not in _screen(tmux_server, pane)

    _run(tmux_server, emit, scenario)
