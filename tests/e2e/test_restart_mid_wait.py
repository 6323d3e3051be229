"""A wait is one wait (issue 24): the collector killed and started again while panes
wait on their user. Whole stack, for real: tmux behind sshd, the collector process,
the server.

Three kinds of waiting pane: one whose program reported `blocked` once over OSC 7501
under `paneboard run` (the state it kept in the pane's options, late_state.py), one
whose prompt is only on its screen (Claude Code's permission question, read by the
bundled screen rules), and one whose program reported over OSC 7501 with nothing
kept anywhere but the server (the new collector cannot know it; the same process
still in front keeps the stored wait). Across the restart each keeps its `since`, its
history has no state in between, and the ledger (`GET /api/blocks`) holds one open
wait for it, from the original start.
"""

from __future__ import annotations

import os
import shlex
import signal
import sys
import time

import pytest
from support.wait import wait_for

from .stack import HOST

pytestmark = [pytest.mark.tmux, pytest.mark.sshd]

REPORT_ONCE = """\
import sys, time
from paneboard_protocol.encode import encode_report
sys.stdout.buffer.write(encode_report("blocked", app="deployer", kind="permission", msg="Deploy to staging?"))
sys.stdout.flush()
print("Deploy to staging? [y/N]")
time.sleep(3600)
"""


def asker() -> str:
    path = shlex.quote(os.pathsep.join(p for p in sys.path if p))
    py = shlex.quote(sys.executable)
    return f"bash -c {shlex.quote(f'PYTHONPATH={path} exec -a claude {py} -m paneboard.demo_ask permission')}"


def test_collector_restarted_mid_wait_keeps_each_wait_whole(stack_factory) -> None:
    stack = stack_factory()
    script = stack.tmp / "report_once.py"
    script.write_text(REPORT_ONCE)
    py = shlex.quote(sys.executable)
    reported, rid = stack.new_pane("reported", f"{py} -m paneboard.cli run -- {py} {script}")
    screen, sid = stack.new_pane("screen", asker())
    raw, wid = stack.new_pane("raw", f"{py} {script}")
    ids = {rid: reported, sid: screen, wid: raw}

    def rows() -> dict[str, dict]:
        return {str(p["id"]): p for p in stack.panes() if p["host"] == HOST and str(p["id"]) in ids}

    before = wait_for(
        lambda: (r := rows()) and all(p["state"] == "blocked" for p in r.values()) and len(r) == 3 and r,
        timeout=30,
        what="the three panes blocked",
    )
    assert before[rid]["msg"] == before[wid]["msg"] == "Deploy to staging?"
    assert "Do you want to proceed?" in before[sid]["msg"]

    stack.kill_collector(signal.SIGKILL)
    restarted = time.time()
    stack.start_collector()
    # Every pane reported again by the new collector (each report moves `last_seen`).
    after = wait_for(
        lambda: (r := rows()) and all(p["last_seen"] > restarted for p in r.values()) and r,
        timeout=60,
        what=f"the new collector's reports\n{stack.log('collector2')}",
    )
    began = {}
    for pid, p in after.items():
        assert p["state"] == "blocked" and p["since"] == before[pid]["since"], (p, before[pid])
        assert p["msg"] == before[pid]["msg"]
        # One blocked row in its history, nothing in between (no "no agent", no idle, no gone).
        states = [(e["state"], e["reason"]) for e in reversed(stack.history(pid))]
        assert states[-1] == ("blocked", "report") and ("blocked", "report") not in states[:-1], states
        assert all(e["reason"] == "report" for e in stack.history(pid)), states
        began[pid] = stack.history(pid)[0]["t"]  # the row that opened the wait
    blocks = [b for b in stack.api("/api/blocks")["blocks"] if str(b["pane_id"]) in ids]
    assert sorted((str(b["pane_id"]), b["start_t"], b["end_t"]) for b in blocks) == sorted(
        (pid, began[pid], None) for pid in ids
    ), blocks
    assert all(b["ended"] is None for b in blocks), blocks
