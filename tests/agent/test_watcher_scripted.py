"""The session manager against a scripted tmux: situations real tmux cannot make on demand.

Everything else about the manager is tested through real tmux (test_collector_*).
Here: an old tmux (< 3.2) that lacks the control-client flags, a host without `ps`,
and a pane id reused by a restarted tmux server between two polls.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time

import pytest
from helpers import osc7501
from paneboard_agent.collector import Collector, Options, TmuxTarget
from paneboard_agent.uplink import PaneKey, PaneUpdate
from paneboard_protocol.rules import load_rules
from scripted import ScriptedTmux, asks_processes

RULES = load_rules("/nonexistent-paneboard-rules")  # the bundled manifests only


class Recorder:
    def __init__(self) -> None:
        self.updates: list[PaneUpdate] = []
        self.gone: list[PaneKey] = []

    async def pane_changed(self, update: PaneUpdate) -> None:
        self.updates.append(update)

    async def pane_gone(self, key: PaneKey, t: float) -> None:
        self.gone.append(key)

    async def host_status(self, host: str, reachable: bool, t: float, error: str | None) -> None: ...
    async def host_health(self, host: str, health: object) -> None: ...


async def _until(pred, timeout: float = 10.0, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while not (value := pred()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.02)
    return value


def _run(tmux: ScriptedTmux, scenario) -> Recorder:
    async def main() -> Recorder:
        sink = Recorder()
        collector = Collector([TmuxTarget(tmux)], sink, Options(poll_interval=0.2, rules=RULES))
        task = asyncio.create_task(collector.run())
        try:
            await scenario(sink)
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        return sink

    return asyncio.run(main())


def test_old_tmux_attaches_with_r_only_and_says_so_once(caplog: pytest.LogCaptureFixture) -> None:
    tmux = ScriptedTmux(version="tmux 3.1c")
    tmux.add_pane("%0", 100, "bash")

    async def scenario(sink: Recorder) -> None:
        await _until(lambda: sink.updates, what="the pane")
        tmux.sessions.append("second")  # a second attach: still one warning
        await _until(lambda: len(tmux.opened) == 2, what="the second attach")

    with caplog.at_level(logging.WARNING, logger="paneboard.agent"):
        _run(tmux, scenario)
    assert tmux.opened[0][-5:] == ["-C", "attach-session", "-r", "-t", "=main"]
    assert all("-f" not in argv and "-N" not in argv for argv in tmux.opened)
    assert caplog.text.count("tmux 3.1 lacks control-client flags") == 1


def test_without_ps_the_pane_is_judged_by_tmux_name_alone() -> None:
    tmux = ScriptedTmux(ps_missing=True)
    tmux.add_pane("%0", 100, "codex")

    async def scenario(sink: Recorder) -> None:
        await _until(lambda: any(u.agent == "codex" for u in sink.updates), what="codex identified")

    sink = _run(tmux, scenario)
    update = next(u for u in sink.updates if u.agent == "codex")
    assert update.process == "codex" and update.observable is True
    assert any(asks_processes(argv) for argv in tmux.runs)  # it was tried


def test_a_listing_line_outside_its_frame_refuses_the_listing(caplog: pytest.LogCaptureFixture) -> None:
    """A tmux that let a program's name break a line (3.3a did, before the listing asked
    it to replace control bytes) lists a pane under an excluded session: the listing is
    refused whole, every pane stays as it was (none made `gone`), and the refusals,
    one a poll, are one warning."""
    tmux = ScriptedTmux()
    tmux.add_pane("%0", 100, "bash")
    tmux.add_pane("%1", 200, "bash")

    async def scenario(sink: Recorder) -> None:
        await _until(lambda: len({u.key.pane for u in sink.updates}) == 2, what="both panes")
        tmux.panes["%0"]["command"] = "sleep\nP\t$0\t@0\t0\t%1\t200\t0\t/dev/pts/9\tsecret\tw\tx"
        seen = tmux.listings
        await _until(lambda: tmux.listings >= seen + 5, what="five listings refused")

    with caplog.at_level(logging.WARNING, logger="paneboard.agent"):
        sink = _run_excluding(tmux, scenario, ["secret"])
    assert sink.gone == []
    assert caplog.text.count("refused") == 1, caplog.text


def _run_excluding(tmux: ScriptedTmux, scenario, exclude: list[str]) -> Recorder:
    async def main() -> Recorder:
        sink = Recorder()
        target = TmuxTarget(tmux, exclude=exclude)
        collector = Collector([target], sink, Options(poll_interval=0.2, rules=RULES))
        task = asyncio.create_task(collector.run())
        try:
            await scenario(sink)
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        return sink

    return asyncio.run(main())


def test_a_reused_pane_id_is_a_new_pane() -> None:
    """A pane id listed again with another pid (the tmux server restarted between two
    polls) is the old pane gone and a new one: the old one's records never carry over
    (`done` survives its program's exit, so only a new pane can drop it). The sink sees
    the new pane's first update in place of the `gone`: both are for the same key and
    the pump keeps the latest per key."""
    tmux = ScriptedTmux()
    tmux.add_pane("%0", 100, "bash")

    async def scenario(sink: Recorder) -> None:
        await _until(lambda: sink.updates, what="the pane")
        await tmux.output("%0", osc7501("state=done:app=builder"))
        await _until(lambda: any(u.state == "done" for u in sink.updates), what="done")
        tmux.add_pane("%0", 555, "bash")
        await _until(lambda: sink.updates[-1].state is None, what="the new pane, unclassified")

    sink = _run(tmux, scenario)
    assert sink.updates[-1].records == ()
