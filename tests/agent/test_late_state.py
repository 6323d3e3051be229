"""State that outlives a late collector, through real tmux (issue 13, item 5).

A program reports, and only then does a collector attach (or re-attach): tmux kept
no raw history, so what the collector shows comes from the pane user options that
`paneboard emit` and `paneboard run` left (`@paneboard-7501`, `@paneboard-thinkterm`),
fed through the decoder and classifier like live output. Every collector here is the
real `paneboard agent --stdout`, started after the panes reported.
"""

from __future__ import annotations

import base64
import shlex
import sys
import time
from pathlib import Path

import pytest
from helpers import b64, osc7501, reporter, thinkterm
from support.agentproc import AgentProcess
from support.sshd import Sshd
from support.tmux import TmuxServer
from support.wait import wait_for

pytestmark = pytest.mark.tmux

PANEBOARD = str(Path(sys.executable).parent / "paneboard")
QUESTION = "Apply 3 to add, 1 to change?"


def option(tmux: TmuxServer, pane: str, name: str) -> str:
    return tmux.cmd("show-options", "-p", "-v", "-q", "-t", pane, name, check=False).strip()


def emit(*args: str) -> str:
    return shlex.join([PANEBOARD, "emit", *args])


def relayed(*steps: tuple[float, bytes]) -> str:
    """A reporter program behind `paneboard run`, then the pane's process stays in front."""
    return f"{shlex.quote(PANEBOARD)} run -- {reporter(*steps)}"


def states(proc: AgentProcess, pane: str) -> list[tuple]:
    return [
        (o["agent"], o["state"], o["kind"], o["msg"], o["source"])
        for o in proc.snapshot()
        if o["pane"] == pane
    ]


def collector(tmux: TmuxServer, *args: str) -> AgentProcess:
    return AgentProcess(*(args or ("--local",)), "--tmux-socket", tmux.name)


def test_blocked_before_the_collector_started_via_emit_and_via_the_relay(tmux_server: TmuxServer) -> None:
    tmux = tmux_server
    # emit typed at an interactive shell's prompt, as a hook or a script would run it
    tmux.send("%0", emit("blocked", "--kind", "permission", "--msg", QUESTION, "--app", "claude-code"))
    # a Claude Code-shaped program behind the relay: a root record and a blocked child
    child = f"state=blocked:app=claude-code:id=task_1:kind=question:msg={b64('Which file first?')}"
    relay = tmux.new_window(
        "main", "relay", relayed((0.0, osc7501("state=working:app=claude-code") + osc7501(child)))
    )
    wait_for(lambda: "kind=permission" in option(tmux, "%0", "@paneboard-7501"), what="emit's option")
    wait_for(lambda: "kind=question" in option(tmux, relay, "@paneboard-7501"), what="the relay's option")
    proc = collector(tmux)
    try:
        line = proc.wait_line(lambda o: o["pane"] == "%0" and o["state"] == "blocked", what="emit's blocked")
        assert (line["agent"], line["kind"], line["msg"], line["source"]) == (
            "claude",
            "permission",
            QUESTION,
            "protocol",
        )
        line = proc.wait_line(
            lambda o: o["pane"] == relay and o["state"] == "blocked", what="relay's blocked"
        )
        assert (line["agent"], line["kind"], line["msg"], line["source"]) == (
            "claude",
            "question",
            "Which file first?",
            "protocol",
        )
        # each pane went out once, as restored: never first as unclassified (which a server
        # would take for a change, and the restore then for a new `blocked`)
        assert [s[1] for s in states(proc, "%0")] == ["blocked"]
        assert [s[1] for s in states(proc, relay)] == ["blocked"]
    finally:
        proc.stop()


def test_an_ended_record_is_not_resurrected(tmux_server: TmuxServer) -> None:
    tmux = tmux_server
    # emit: blocked, then the turn ends (done); a child record blocked, then idle
    tmux.send(
        "%0",
        emit("blocked", "--kind", "permission", "--msg", QUESTION, "--app", "claude-code")
        + " && "
        + emit("blocked", "--id", "sub", "--kind", "question", "--msg", "Sure?")
        + " && "
        + emit("idle", "--id", "sub")
        + " && "
        + emit("done", "--app", "claude-code", "--msg", "All tests pass"),
    )
    # the relay: blocked, then answered (working again)
    answered = tmux.new_window(
        "main",
        "answered",
        relayed(
            (
                0.0,
                osc7501("state=blocked:app=claude-code:kind=permission")
                + osc7501("state=working:app=claude-code"),
            )
        ),
    )
    # the relay: blocked, then the program exits (P7501-8: its live records end with it)
    exited = tmux.new_window(
        "main",
        "exited",
        relayed((0.0, osc7501("state=blocked:app=claude-code:kind=permission"))).replace(
            "time.sleep(120)", "time.sleep(0.2)"
        )
        + "; exec sleep 3600",
    )
    # a control pane: blocked, so its line proves the stored state has been read
    control = tmux.new_window("main", "control", relayed((0.0, osc7501("state=blocked:app=probe:kind=auth"))))
    wait_for(
        lambda: option(tmux, "%0", "@paneboard-7501").endswith(b64("All tests pass")), what="emit's done"
    )
    wait_for(lambda: "state=working" in option(tmux, answered, "@paneboard-7501"), what="the answer stored")
    wait_for(
        lambda: tmux.cmd("display-message", "-p", "-t", exited, "#{pane_current_command}").strip() == "sleep",
        what="the relay's exit",
    )
    wait_for(lambda: "kind=auth" in option(tmux, control, "@paneboard-7501"), what="the control pane")
    assert option(tmux, exited, "@paneboard-7501") == ""  # nothing live is left to store
    proc = collector(tmux)
    try:
        proc.wait_line(lambda o: o["pane"] == control and o["kind"] == "auth", what="the stored state read")
        proc.wait_line(lambda o: o["pane"] == "%0" and o["state"] == "done", what="emit's done")
        assert proc.latest("%0")["msg"] == "All tests pass"
        proc.wait_line(lambda o: o["pane"] == answered and o["state"] == "working", what="answered: working")
        for pane in ("%0", answered, exited):
            assert not [s for s in states(proc, pane) if s[1] == "blocked"], pane
    finally:
        proc.stop()


def _contract_option(pg: int, ts: int) -> str:
    value = f"v1;agent=my-agent;state=blocked;ts={ts}"
    return f"v1 pg={pg} " + base64.b64encode(value.encode()).decode()


def test_a_stored_contract_goes_stale_as_a_live_one(tmux_server: TmuxServer) -> None:
    tmux = tmux_server
    old = int(time.time()) - 7 * 3600  # TA-12: older than six hours
    fresh = tmux.new_window("main", "fresh", "sleep 3600")
    stale = tmux.new_window("main", "stale", "sleep 3600")
    for pane, ts in ((fresh, int(time.time())), (stale, old)):
        pid = int(tmux.cmd("display-message", "-p", "-t", pane, "#{pane_pid}"))
        tmux.cmd("set-option", "-p", "-t", pane, "@paneboard-thinkterm", _contract_option(pid, ts))
    proc = collector(tmux)
    try:
        line = proc.wait_line(
            lambda o: o["pane"] == fresh and o["agent"] == "my-agent", what="fresh contract"
        )
        assert (line["state"], line["source"]) == ("blocked", "protocol")
        # the same query read both panes: the stale one never took the contract's state,
        # nor (RI-1: only a fresh contract establishes an identity) its agent ...
        assert [s for s in states(proc, stale) if s[0] or s[1]] == []
        # ... exactly as the same stale report written live, after the collector attached
        marker = osc7501("state=idle:id=marker")
        live = tmux.new_window(
            "main", "live", reporter((0.5, thinkterm("my-agent", "blocked", ts=old) + marker))
        )
        proc.wait_line(lambda o: o["pane"] == live and o["state"] == "idle", what="the live pane's marker")
        assert [s for s in states(proc, live) if s[0] == "my-agent" or s[1] == "blocked"] == []
    finally:
        proc.stop()


GARBAGE = [
    "v1 pg=1 " + "state=idle " * 800,  # over the size limit
    "v1 pg=1 state=blocked\x1b]7501;state=blocked\x07",  # raw escapes
    "v1 pg=1 state=idle:msg=!!!!",
    "v1 pg=1 state=future",
    "v1 pg=1 state=blocked:msg=" + b64("evil\x07"),
    "\u202ev1 pg=1 state=blocked",
]


def test_oversized_and_garbage_values_are_refused(tmux_server: TmuxServer) -> None:
    tmux = tmux_server
    control = tmux.new_window("main", "control", relayed((0.0, osc7501("state=blocked:app=probe:kind=auth"))))
    wait_for(lambda: "kind=auth" in option(tmux, control, "@paneboard-7501"), what="the control pane")
    panes = []
    for i, value in enumerate(GARBAGE):
        pane = tmux.new_window("main", f"g{i}", "sleep 3600")
        pid = tmux.cmd("display-message", "-p", "-t", pane, "#{pane_pid}").strip()
        tmux.cmd("set-option", "-p", "-t", pane, "@paneboard-7501", value.replace("pg=1", f"pg={pid}"))
        tmux.cmd("set-option", "-p", "-t", pane, "@paneboard-thinkterm", f"v1 pg={pid} " + "QUFB" * 1100)
        panes.append(pane)
    # a value that poses as the control pane's line, and as a later one of its own
    forger = tmux.new_window("main", "forger", "sleep 3600")
    forged = f"v1\tE\nP\t{control}\t1\tv1 pg=1 state=done:app=forged\t\tE"
    tmux.cmd("set-option", "-p", "-t", forger, "@paneboard-7501", forged)
    proc = collector(tmux)
    try:
        proc.wait_line(lambda o: o["pane"] == control and o["kind"] == "auth", what="the stored state read")
        for pane in panes:
            proc.wait_line(lambda o, p=pane: o["pane"] == p, what=f"pane {pane} listed")
        for pane in [*panes, forger]:
            assert not [s for s in states(proc, pane) if s[4] == "protocol"], pane
        assert not [s for s in states(proc, control) if s[0] == "forged"]
        # the collector still reads the panes live
        late = tmux.new_window("main", "late", reporter((0.5, osc7501("state=error:app=builder"))))
        proc.wait_line(lambda o: o["pane"] == late and o["state"] == "error", what="a live report")
    finally:
        proc.stop()


@pytest.mark.sshd
def test_blocked_while_the_collector_was_away_shows_after_it_reconnects(
    tmux_server: TmuxServer, sshd: Sshd, tmp_path: Path
) -> None:
    tmux = tmux_server
    gate = tmp_path / "gate"
    data = osc7501(f"state=blocked:app=claude-code:kind=question:msg={b64('Which file first?')}")
    script = tmp_path / "program.py"
    script.write_text(
        "import os, sys, time\n"
        f"while not os.path.exists({str(gate)!r}):\n    time.sleep(0.05)\n"
        f"os.write(1, bytes.fromhex({data.hex()!r}))\n"
        "time.sleep(120)\n"
    )
    program = shlex.join(["python3", str(script)])
    relay = tmux.new_window("main", "relay", f"{shlex.quote(PANEBOARD)} run -- {program}")
    proc = collector(tmux, *sshd.ssh_args())
    try:
        proc.wait_line(lambda o: o["pane"] == relay, what="the relay's pane")
        sshd.stop()  # the collector loses its link; while it is away, both panes report
        tmux.send("%0", emit("blocked", "--kind", "permission", "--msg", QUESTION, "--app", "claude-code"))
        gate.touch()
        wait_for(lambda: "kind=permission" in option(tmux, "%0", "@paneboard-7501"), what="emit's option")
        wait_for(lambda: "kind=question" in option(tmux, relay, "@paneboard-7501"), what="the relay's option")
        assert not [s for s in states(proc, "%0") + states(proc, relay) if s[1] == "blocked"]
        sshd.start()
        line = proc.wait_line(
            lambda o: o["pane"] == "%0" and o["state"] == "blocked", timeout=40, what="emit's"
        )
        assert (line["kind"], line["msg"], line["source"]) == ("permission", QUESTION, "protocol")
        line = proc.wait_line(
            lambda o: o["pane"] == relay and o["state"] == "blocked", timeout=40, what="relay's"
        )
        assert (line["kind"], line["msg"], line["source"]) == ("question", "Which file first?", "protocol")
    finally:
        proc.stop()


def test_emit_keeps_the_options_only_for_its_own_pane(tmux_server: TmuxServer, tmp_path: Path) -> None:
    tmux = tmux_server
    log = tmp_path / "reports.log"
    # a report sent to a file is none of this pane's state
    tmux.send(
        "%0", emit("blocked", "--kind", "auth", "--tty", str(log)) + "; touch " + shlex.quote(str(log) + ".1")
    )
    wait_for(lambda: Path(str(log) + ".1").exists(), what="the first emit")
    assert (
        log.read_bytes().startswith(b"\x1b]7501;state=blocked")
        and option(tmux, "%0", "@paneboard-7501") == ""
    )
    # the pane's own terminal named explicitly (what emit's error message advises) counts
    tmux.send("%0", "PANEBOARD_TTY=$(tty) " + emit("blocked", "--kind", "question", "--msg", "Sure?"))
    wait_for(lambda: "kind=question" in option(tmux, "%0", "@paneboard-7501"), what="the second emit")
    # behind the relay, emit leaves the options to the relay, which stores the report once
    behind = tmux.new_window("main", "behind", f"{shlex.quote(PANEBOARD)} run -- bash --noprofile --norc")
    tmux.send(behind, emit("working", "--app", "claude-code") + " && " + emit("idle", "--id", "t1"))
    wait_for(lambda: "id=t1" in option(tmux, behind, "@paneboard-7501"), what="the relay's copy")
    value = option(tmux, behind, "@paneboard-7501")
    assert value.split(" ")[2:] == ["state=working:app=claude-code", "state=idle:id=t1"]
    relay_pid = tmux.cmd("display-message", "-p", "-t", behind, "#{pane_pid}").strip()
    assert value.split(" ")[1] == f"pg={relay_pid}"  # the relay's group wrote it, not emit's


def test_ask_typed_at_the_prompt_is_restored_while_it_waits(tmux_server: TmuxServer) -> None:
    """`paneboard ask` typed at an interactive prompt leads its own process group and stays
    in front while it waits: its report is its own (not its shell's, as a one-shot emit's
    is), so a collector that attaches meanwhile shows the question, and once it is
    answered the pane is blocked neither live nor for the next collector."""
    tmux = tmux_server
    tmux.send("%0", shlex.join([PANEBOARD, "ask", "--app", "deploy-bot", "Deploy to prod?"]))
    wait_for(lambda: "kind=question" in option(tmux, "%0", "@paneboard-7501"), what="ask's option")
    proc = collector(tmux)
    try:
        line = proc.wait_line(lambda o: o["pane"] == "%0" and o["state"] == "blocked", what="ask's blocked")
        assert (line["kind"], line["msg"], line["source"]) == ("question", "Deploy to prod?", "protocol")
        tmux.send("%0", "yes")
        proc.wait_line(lambda o: o["pane"] == "%0" and o["state"] != "blocked", what="the answer")
    finally:
        proc.stop()
    wait_for(lambda: "blocked" not in option(tmux, "%0", "@paneboard-7501"), what="ask's state after")
    proc = collector(tmux)
    try:
        # a restored state comes with the pane's first line (see the first test)
        first = proc.wait_line(lambda o: o["pane"] == "%0", what="the pane")
        assert first["state"] != "blocked"
    finally:
        proc.stop()
