"""`paneboard decode` on a real `tmux pipe-pane` log: the use the docs recommend.

A program in a real tmux pane (private socket under a tmp dir) writes a report, a
passthrough-wrapped report and a THINKTERM_AGENT contract; pipe-pane records the raw
bytes; the real command decodes the log.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from decoder_helpers import agent_var, b64, r7501
from support.tools import require_tool
from support.wait import wait_for

pytestmark = [pytest.mark.tmux]


@pytest.fixture(autouse=True)
def _tmux_installed() -> None:
    require_tool("tmux")


def test_decode_a_real_pipe_pane_log(tmp_path):
    sock = tmp_path / "tmux.sock"
    log = tmp_path / "pane.log"
    ready = tmp_path / "ready"
    payload = tmp_path / "payload.bin"
    inner = r7501("state=working:app=wrapped", b"\x1b\\")
    payload.write_bytes(
        b"\x1b[1mhello\x1b[0m\r\n"
        + r7501("state=blocked:kind=permission:msg=" + b64("Allow rm?"))
        + b"\x1bPtmux;"
        + inner.replace(b"\x1b", b"\x1b\x1b")
        + b"\x1b\\"
        + agent_var("v1;agent=claude;state=blocked;ts=5")
        + b"done\r\n"
    )
    script = f"while [ ! -e {ready} ]; do sleep 0.05; done; cat {payload}; touch {ready}.sent; sleep 30"
    tmux = ["tmux", "-S", str(sock), "-f", "/dev/null"]
    subprocess.run(
        [*tmux, "new-session", "-d", "-x", "80", "-y", "24", "sh", "-c", script], check=True, timeout=30
    )
    try:
        subprocess.run([*tmux, "pipe-pane", "-o", f"cat >> {log}"], check=True, timeout=30)
        ready.touch()
        wait_for(
            lambda: log.exists() and b"done" in log.read_bytes(), what="pane output in the pipe-pane log"
        )
        result = subprocess.run(
            [sys.executable, "-m", "paneboard.cli", "decode", str(log)],
            capture_output=True,
            timeout=60,
            check=False,
        )
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True, timeout=30, check=False)
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(e["type"], e.get("state")) for e in events] == [
        ("status", "blocked"),
        ("status", "working"),
        ("agent", "blocked"),
    ]
    assert (
        events[0]["msg"] == "Allow rm?" and events[1]["app"] == "wrapped" and events[2]["agent"] == "claude"
    )
    raw = log.read_bytes()
    assert raw[events[1]["offset"] : events[1]["offset"] + 7] == b"\x1bPtmux;"
