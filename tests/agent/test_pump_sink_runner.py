"""The sink pump (bounded, coalescing), the stdout sink, and the shell runner on a real sh."""

from __future__ import annotations

import asyncio
import io
import json

import pytest
from paneboard_agent.transport import LocalTransport
from paneboard_agent.transport.shell import ShellRunner
from paneboard_agent.uplink import PaneKey, PaneUpdate, Pump, StdoutSink
from support.reports import pane_report


def _update(pane: str, state: str | None, t: float = 1.0, window: str = "0:w") -> PaneUpdate:
    return pane_report(pane, state, t=t, window=window)


class _Recorder:
    def __init__(self, gate: asyncio.Event) -> None:
        self.gate = gate
        self.seen: list[tuple[str, str, object]] = []

    async def pane_changed(self, update: PaneUpdate) -> None:
        await self.gate.wait()
        self.seen.append(("changed", update.key.pane, update.state))

    async def pane_gone(self, key: PaneKey, t: float) -> None:
        self.seen.append(("gone", key.pane, t))

    async def host_status(self, host: str, reachable: bool, t: float, error: str | None) -> None:
        self.seen.append(("host", host, reachable))

    async def host_health(self, host: str, health: object) -> None:
        return None  # the link's health is not what this test reads


def test_pump_keeps_one_pending_item_per_pane_in_first_come_order() -> None:
    async def scenario() -> list[tuple[str, str, object]]:
        gate = asyncio.Event()
        sink = _Recorder(gate)
        pump = Pump(sink)
        task = asyncio.create_task(pump.run())
        pump.changed(_update("%1", "working"))
        await asyncio.sleep(0.01)  # %1 is now being delivered and blocks on the gate
        for i in range(1000):  # a slow sink: thousands of changes pile up as one per pane
            pump.changed(_update("%2", f"s{i}"))
            pump.changed(_update("%3", f"t{i}"))
        pump.host("h", False, 2.0, "down")
        pump.gone(PaneKey("h", "default", "%3"), 3.0)  # replaces %3's pending change
        assert pump.pending == 3
        gate.set()
        await asyncio.wait_for(pump.drained(), 5)
        task.cancel()
        return sink.seen

    assert asyncio.run(scenario()) == [
        ("changed", "%1", "working"),
        ("changed", "%2", "s999"),
        ("gone", "%3", 3.0),
        ("host", "h", False),
    ]


def test_stdout_sink_prints_only_visible_changes() -> None:
    out = io.StringIO()
    sink = StdoutSink(out)

    async def scenario() -> None:
        await sink.pane_changed(_update("%1", "working", t=1))
        await sink.pane_changed(_update("%1", "working", t=2))  # only t differs: not printed
        await sink.pane_changed(_update("%1", "idle", t=3))
        await sink.pane_gone(PaneKey("h", "default", "%1"), 4)
        await sink.pane_gone(PaneKey("h", "default", "%9"), 5)  # never printed: nothing to say

    asyncio.run(scenario())
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [(o["state"], o["t"], o.get("gone")) for o in lines] == [
        ("working", 1, None),
        ("idle", 3, None),
        (None, 4, True),
    ]
    assert lines[-1]["window"] == "0:w" and lines[-1]["session"] == "s"


@pytest.mark.proc
def test_shell_runner_on_a_real_sh_keeps_commands_apart() -> None:
    async def scenario() -> None:
        t = LocalTransport()
        chan = await t.open_process(["sh"])
        # the local channel drains stderr itself; give the runner a reader of its own
        proc_stderr = chan._proc.stderr  # type: ignore[attr-defined]
        chan._stderr_task.cancel()  # type: ignore[attr-defined]
        runner = ShellRunner(chan, proc_stderr)
        r = await runner.run(["printf", "a\nb"], 5, 1 << 20)
        assert (r.returncode, r.stdout, r.stderr) == (0, b"a\nb", b"")
        r = await runner.run(["sh", "-c", "echo oops >&2; exit 7"], 5, 1 << 20)
        assert (r.returncode, r.stdout, r.stderr) == (7, b"", b"oops\n")
        # output that imitates a marker cannot end a command early: the nonce is fresh
        r = await runner.run(["printf", "\\npb-0123 0\\nafter"], 5, 1 << 20)
        assert r.stdout == b"\npb-0123 0\nafter"
        r = await runner.run(["head", "-c", "300000", "/dev/zero"], 5, 1000)  # cut at the limit
        assert r.returncode == 0 and r.stdout == bytes(1000)
        r = await runner.run(["true"], 5, 1 << 20)
        assert r.returncode == 0 and r.stdout == b""
        await t.close()

    asyncio.run(scenario())
