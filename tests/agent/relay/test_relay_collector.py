"""End to end: the real collector (`paneboard agent --stdout --local`) reads what the relay lets through.

A program of Claude Code's shape probes at start-up; under `paneboard run` it
concludes "supported" and reports, and the collector classifies the pane from those
reports. The same program without the relay reports nothing, and the collector never
sees a protocol state for its pane.
"""

from __future__ import annotations

import json
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from relay_tmux import PANEBOARD, PROBE, PYTHON, Tmux, q
from support.wait import wait_for

pytestmark = pytest.mark.tmux


class Collector:
    """`paneboard agent --stdout --local --tmux-socket NAME`, its JSON lines gathered by a thread."""

    def __init__(self, tmux: Tmux) -> None:
        self.lines: list[dict] = []
        self.proc = subprocess.Popen(
            [PANEBOARD, "agent", "--stdout", "--local", "--tmux-socket", tmux.socket],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=tmux.env,
        )
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(json.loads(line))

    def of(self, pane_id: str) -> list[dict]:
        return [x for x in list(self.lines) if x["pane"] == pane_id]

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.thread.join(timeout=5)


@pytest.fixture
def collector(tmux: Tmux) -> Iterator[Collector]:
    tmux.pane("sleep 3600", gate=False)  # the server must exist before the collector attaches
    c = Collector(tmux)
    try:
        yield c
    finally:
        c.stop()


def test_collector_reads_what_the_relay_enabled(tmux: Tmux, collector: Collector, tmp_path: Path) -> None:
    wait_for(lambda: collector.lines, what="the collector's first snapshot")
    result, steps = tmp_path / "result.json", tmp_path / "steps"
    steps.mkdir()
    # The program reports one state at a time, paced by the test, so what the collector
    # prints does not depend on how fast it polls.
    probe = q(PANEBOARD, "run", "--", PYTHON, PROBE, str(result), "--steps", str(steps))
    pane = tmux.pane(probe + "; sleep 30")

    def seen(state: tuple) -> bool:
        lines = [x for x in collector.of(pane.id) if x["source"] == "protocol"]
        return state in [(x["agent"], x["state"], x["kind"], x["msg"]) for x in lines]

    wait_for(lambda: seen(("claude", "working", None, None)), timeout=30, what="working")
    (steps / "step1").touch()
    wait_for(lambda: seen(("claude", "blocked", "question", "Which file first?")), timeout=30, what="blocked")
    (steps / "step2").touch()  # clear the child record ...
    (steps / "step3").touch()  # ... and finish
    wait_for(lambda: seen(("claude", "done", None, "All tests pass")), timeout=30, what="done")
    wait_for(result.exists, what="the probe's verdict")
    assert json.loads(result.read_text())["verdict"] == "supported"


def test_collector_sees_nothing_without_the_relay(tmux: Tmux, collector: Collector, tmp_path: Path) -> None:
    wait_for(lambda: collector.lines, what="the collector's first snapshot")
    result = tmp_path / "result.json"
    marker = tmp_path / "after"
    # After the probe gives up, a plain report proves the collector is watching this pane.
    late = "printf '\\033]7501;state=idle:app=probe-test\\033\\\\'"
    pane = tmux.pane(
        f"{q(PYTHON, PROBE, str(result))}; {late}; touch {q(str(marker))}; sleep 30", release=False
    )
    # Bytes written before the collector attaches to the pane's new session reach nobody
    # (only the relay's pane options outlive that), so the program starts once it is watched.
    wait_for(lambda: collector.of(pane.id), timeout=20, what="the collector to watch the new pane")
    pane.release()
    wait_for(marker.exists, what="the probe to finish")
    assert json.loads(result.read_text())["verdict"] == "unsupported"
    wait_for(
        lambda: any(x["state"] == "idle" for x in collector.of(pane.id)), timeout=20, what="the late report"
    )
    assert not any(x["state"] in ("working", "blocked", "done") for x in collector.of(pane.id))


def test_tmux_names_the_program_not_the_relay(tmux: Tmux, collector: Collector, tmp_path: Path) -> None:
    """Under `paneboard run` the relay leads the pane; tmux reads its command line, which
    now is the program's: `claude` for windows and #{pane_current_command}, for as long
    as the relay runs, and the collector names the agent from it (RI-1)."""
    wait_for(lambda: collector.lines, what="the collector's first snapshot")
    prog = tmp_path / "claude"  # a program named like the agent; it prints, then waits
    prog.write_text("#!/bin/sh\necho ready\nexec sleep 60\n")
    prog.chmod(0o755)
    pane = tmux.pane("exec " + q(PANEBOARD, "run", "--", str(prog), "--permission-mode", "default"))
    wait_for(lambda: b"ready" in pane.output(), timeout=20, what="the program's output")

    def names() -> list[str]:
        fmt = "#{pane_current_command} #{window_name}"
        return tmux.cmd("display-message", "-p", "-t", pane.id, fmt).split()

    wait_for(lambda: names() == ["claude", "claude"], timeout=10, what=f"tmux to say claude (says {names()})")
    pid = int(tmux.cmd("display-message", "-p", "-t", pane.id, "#{pane_pid}"))
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        assert f.read().split(b"\0")[0] == f"{prog} --permission-mode default".encode()
    with open(f"/proc/{pid}/comm") as f:
        assert f.read().strip() == "claude"
    wait_for(
        lambda: any(x["agent"] == "claude" and x["observable"] for x in collector.of(pane.id)),
        timeout=20,
        what="the collector to name claude",
    )


def test_without_setproctitle_the_relay_still_sets_its_comm() -> None:
    """The fallback (setproctitle missing): prctl PR_SET_NAME, what ps -o comm and top show."""
    code = (
        "import sys; sys.modules['setproctitle'] = None\n"
        "from paneboard_agent.tools.proctitle import set_title\n"
        "print(set_title(['/opt/x/claude', '--y']), open('/proc/self/comm').read().strip())"
    )
    out = subprocess.run([PYTHON, "-c", code], capture_output=True, text=True, timeout=30, check=True).stdout
    assert out.split() == ["False", "claude"]
