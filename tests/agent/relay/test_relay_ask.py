"""`paneboard ask` in a real tmux pane, read by the real collector (`paneboard agent --stdout`).

The script keeps running after `ask` returns (it sleeps), so the pane leaves `blocked`
because `ask` reported the state after, not because a process exited: `emit blocked`
before a `read` left the card blocked for good (issue 24), and so would an `ask` that
forgot its last report on Ctrl-C or end of input.
"""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest
from paneboard_protocol import Decoder, StatusReport
from relay_tmux import PANEBOARD, Pane, Tmux, q
from support.wait import wait_for
from test_relay_collector import Collector, collector

pytestmark = pytest.mark.tmux

__all__ = ["collector"]  # the fixture, used by name


def asking(tmux: Tmux, collector: Collector, tmp: Path, *ask: str) -> Pane:
    """A bash script in a pane that runs `x=$(paneboard ask ...)`, keeps its answer and
    exit status in files (the status last: once it is there, so is the answer), then goes
    on running; started once the collector watches the pane. Ctrl-C reaches the whole
    foreground group, so the script traps it to go on too."""
    script = tmp / "ask.sh"
    script.write_text(
        "trap : INT\n"
        f"answer=$({q(PANEBOARD, 'ask', *ask)})\n"
        "rc=$?\n"
        f"printf '%s' \"$answer\" > {q(str(tmp / 'answer'))}\n"
        f"echo $rc > {q(str(tmp / 'status'))}\n"
        "exec sleep 60\n"
    )
    pane = tmux.pane(q("bash", str(script)), release=False)
    wait_for(lambda: collector.of(pane.id), timeout=20, what="the collector to watch the new pane")
    pane.release()
    return pane


def states(collector: Collector, pane: Pane) -> list[tuple]:
    return [(x["state"], x["kind"], x["msg"], x["source"]) for x in collector.of(pane.id)]


def blocked(collector: Collector, pane: Pane, question: str) -> None:
    wait_for(
        lambda: ("blocked", "question", question, "protocol") in states(collector, pane),
        timeout=30,
        what=f"the pane to read blocked with the question (read {states(collector, pane)})",
    )


def left_blocked(collector: Collector, pane: Pane, state: str) -> None:
    """The pane's latest state is `state` from ask's own report, while the script runs on."""
    wait_for(
        lambda: states(collector, pane)[-1] == (state, None, None, "protocol"),
        timeout=30,
        what=f"the pane to leave blocked for {state} (read {states(collector, pane)})",
    )


def ask_pid(tmux: Tmux, pane: Pane) -> int:
    """The pid of the `paneboard ask` the pane's script runs (a descendant of the pane's process)."""
    top = int(tmux.cmd("display-message", "-p", "-t", pane.id, "#{pane_pid}"))
    rows = [
        line.split(None, 2)
        for line in subprocess.run(
            ["ps", "-ww", "-e", "-o", "pid=,ppid=,args="], capture_output=True, text=True, check=True
        ).stdout.splitlines()
    ]
    family, found = {top}, []
    for _ in range(8):  # sh -> bash -> the command substitution's subshell -> ask
        family |= {int(r[0]) for r in rows if int(r[1]) in family}
    found = [int(r[0]) for r in rows if int(r[0]) in family and len(r) == 3 and f"{PANEBOARD} ask" in r[2]]
    assert len(found) == 1, rows
    return found[0]


def status(tmp: Path) -> int:
    return int(
        wait_for(lambda: (tmp / "status").exists() and (tmp / "status").read_text().strip(), timeout=30)
    )


def test_answered_at_the_terminal(tmux: Tmux, collector: Collector, tmp_path: Path) -> None:
    wait_for(lambda: collector.lines, what="the collector's first snapshot")
    pane = asking(tmux, collector, tmp_path, "Deploy to prod?")
    blocked(collector, pane, "Deploy to prod?")
    # asked on the terminal, though stdout is captured; the report is written before the
    # question, so the board may show it a moment before the screen does
    wait_for(lambda: "Deploy to prod?" in pane.screen(), what="the question on the terminal")
    pane.keys("yes, but not on Friday; $(rm -rf x)", literal=True)
    pane.keys("Enter")
    assert status(tmp_path) == 0
    assert (tmp_path / "answer").read_text() == "yes, but not on Friday; $(rm -rf x)"  # the answer only
    left_blocked(collector, pane, "idle")


def test_after_names_the_state_and_id_the_record(tmux: Tmux, collector: Collector, tmp_path: Path) -> None:
    wait_for(lambda: collector.lines, what="the collector's first snapshot")
    pane = asking(tmux, collector, tmp_path, "--after", "working", "--id", "deploy/prod", "Which region?")
    blocked(collector, pane, "Which region?")
    pane.keys("eu-west-1", "Enter")
    assert status(tmp_path) == 0
    assert (tmp_path / "answer").read_text() == "eu-west-1"
    left_blocked(collector, pane, "working")


@pytest.mark.parametrize(("key", "code"), [("C-c", 130), ("C-d", 1)])
def test_no_answer_still_clears_the_block(
    tmux: Tmux, collector: Collector, tmp_path: Path, key: str, code: int
) -> None:
    """Ctrl-C and end of input (Ctrl-D on an empty line) end the wait without an answer:
    nothing on stdout, the exit status says which, and the pane is not left blocked."""
    wait_for(lambda: collector.lines, what="the collector's first snapshot")
    pane = asking(tmux, collector, tmp_path, "Deploy?")
    blocked(collector, pane, "Deploy?")
    pane.keys(key)
    assert status(tmp_path) == code
    assert (tmp_path / "answer").read_text() == ""
    left_blocked(collector, pane, "idle")


def test_sigterm_still_clears_the_block(tmux: Tmux, collector: Collector, tmp_path: Path) -> None:
    wait_for(lambda: collector.lines, what="the collector's first snapshot")
    pane = asking(tmux, collector, tmp_path, "--app", "deploy-bot", "Deploy?")
    blocked(collector, pane, "Deploy?")
    os.kill(ask_pid(tmux, pane), signal.SIGTERM)
    assert status(tmp_path) == 143
    left_blocked(collector, pane, "idle")


def test_bad_arguments_and_no_terminal(tmp_path: Path) -> None:
    """Refused before anything is written; without a terminal, one line and status 1."""
    run = lambda *a: subprocess.run(  # noqa: E731
        [PANEBOARD, "ask", *a], capture_output=True, text=True, timeout=30, start_new_session=True
    )
    bad = run("--id", "a b", "Deploy?")
    assert (bad.returncode, bad.stdout) == (2, "")
    assert bad.stderr.startswith("paneboard ask: ") and "id segment 'a b'" in bad.stderr
    empty = run(" \n ")
    assert (empty.returncode, empty.stderr) == (2, "paneboard ask: the question is empty\n")
    alone = run("Deploy?")  # a session of its own: no controlling terminal
    assert (alone.returncode, alone.stdout) == (1, "")
    assert alone.stderr == "paneboard ask: no terminal to ask on (ask reads the answer from the terminal)\n"


def test_a_question_cannot_write_its_own_report(tmux: Tmux, tmp_path: Path) -> None:
    """The question is untrusted (it may hold a file name): its control characters never
    reach the terminal, so an escape sequence in it cannot report `done` or anything else."""
    evil = "Delete \x1b]7501;state=done\x1b\\ build\x07?\nSure?"
    pane = tmux.pane(f"{q(PANEBOARD, 'ask', evil)} > {q(str(tmp_path / 'answer'))}")
    wait_for(lambda: "Sure?" in pane.screen(), what="the question")
    pane.keys("no", "Enter")
    assert pane.dead_status() == 0
    reports = [e for e in Decoder().feed(pane.output()) if isinstance(e, StatusReport)]
    assert [(r.state, r.kind, r.msg) for r in reports] == [
        ("blocked", "question", "Delete ]7501;state=done \\ build ? Sure?"),  # controls: spaces
        ("idle", None, None),
    ]
    assert "Delete ]7501;state=done\\ build?\nSure? no" in pane.screen()
    assert (tmp_path / "answer").read_text() == "no\n"
