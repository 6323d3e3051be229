"""`paneboard run` inside real tmux panes: the probe, exit codes, signals, sizes, modes."""

from __future__ import annotations

import json
import os
import random
import secrets
import signal
import subprocess
import termios
import time
from pathlib import Path

import pytest
from paneboard_protocol import ClearReport, Decoder, StatusReport, Title
from paneboard_protocol.encode import encode_probe, encode_report, tmux_passthrough
from relay_tmux import PANEBOARD, PROBE, PYTHON, Tmux, q
from support.wait import wait_for

pytestmark = pytest.mark.tmux
CHILD = str(Path(__file__).parent / "pane_child.py")


def parent_of(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("PPid:"):
            return int(line.split()[1])
    raise AssertionError(f"no parent for {pid}")


def ready_pids(state: Path) -> tuple[int, int]:
    """Wait for pane_child.py to start; return its pid and its parent's (the relay's leader)."""
    text = wait_for(lambda: (state / "ready").exists() and (state / "ready").read_text(), what="the child")
    pid, parent = str(text).split()
    return int(pid), int(parent)


def read_json(path: Path) -> dict | None:
    return json.loads(path.read_text()) if path.exists() else None


def reports_of(result: dict) -> list[bytes]:
    return [b"\x1b]7501;" + body.encode() + b"\x1b\\" for body in result["reports"]]


@pytest.mark.parametrize("terminator", ["st", "bel"])
def test_probe_supported_under_relay(tmux: Tmux, tmp_path: Path, terminator: str) -> None:
    result_file = tmp_path / "result.json"
    pane = tmux.pane(q(PANEBOARD, "run", "--", PYTHON, PROBE, str(result_file), "--terminator", terminator))
    result = wait_for(lambda: read_json(result_file), what="the probe's verdict")
    assert result["verdict"] == "supported", result
    assert result["replies"].index("osc7501") < result["replies"].index("da1")
    assert result["replies"].count("osc7501") == 1  # exactly one answer per probe
    assert pane.dead_status() == 0
    # The reports reach tmux byte for byte, and the probe itself is passed on.
    expected = reports_of(result)
    assert len(expected) == 4
    wait_for(lambda: all(r in pane.output() for r in expected), what="the reports in the pane output")
    out = pane.output()
    assert encode_probe(terminator) in out
    positions = [out.index(r) for r in expected]
    assert positions == sorted(positions)
    # What a reader of the pane (the collector's decoder) makes of it:
    events = [e for e in Decoder().feed(out) if not isinstance(e, Title)]
    assert [type(e).__name__ for e in events] == [
        "Probe",
        "StatusReport",
        "StatusReport",
        "ClearReport",
        "StatusReport",
    ]
    probe, working, question, clear, done = events
    assert probe.terminator == terminator
    assert (working.state, working.app, working.progress, working.title) == (
        "working",
        "claude-code",
        40,
        "Refactoring ✳ parser",
    )
    assert (question.state, question.id, question.kind, question.msg) == (
        "blocked",
        "task_1.a",
        "question",
        "Which file first?",
    )
    assert clear.id == "task_1.a"
    assert (done.state, done.msg) == ("done", "All tests pass")


def test_probe_unsupported_without_relay(tmux: Tmux, tmp_path: Path) -> None:
    # The same program straight in the pane: tmux answers DA1 and never the probe
    # (P7501-13). This is what proves the test above tests the relay.
    result_file = tmp_path / "result.json"
    pane = tmux.pane(q(PYTHON, PROBE, str(result_file)))
    result = wait_for(lambda: read_json(result_file), what="the probe's verdict")
    assert result["verdict"] == "unsupported", result
    assert "osc7501" not in result["replies"]
    assert pane.dead_status() == 0
    assert b"\x1b]7501;state=" not in pane.output()


def test_wrap_sends_reports_in_passthrough(tmux: Tmux, tmp_path: Path) -> None:
    result_file = tmp_path / "result.json"
    pane = tmux.pane(q(PANEBOARD, "run", "--wrap", "--", PYTHON, PROBE, str(result_file)))
    result = wait_for(lambda: read_json(result_file), what="the probe's verdict")
    assert result["verdict"] == "supported"
    assert pane.dead_status() == 0
    expected = reports_of(result)
    wait_for(lambda: all(tmux_passthrough(r) in pane.output() for r in expected), what="wrapped reports")
    out = pane.output()
    for report in expected:
        plain = out.replace(tmux_passthrough(report), b"")
        assert report in plain  # the plain copy for tmux (and the collector) is still there
    assert tmux_passthrough(encode_probe("st")) not in out  # the probe is not a report


@pytest.mark.parametrize(
    ("command", "status"),
    [
        (["sh", "-c", "exit 7"], 7),
        (["true"], 0),
        (["sh", "-c", "kill -TERM $$"], 128 + 15),
        (["sh", "-c", "kill -KILL $$"], 128 + 9),
        (["/nonexistent/program"], 127),
    ],
)
def test_exit_status(tmux: Tmux, command: list[str], status: int) -> None:
    pane = tmux.pane(q(PANEBOARD, "run", "--", *command))
    assert pane.dead_status() == status


def _raw(tmux: Tmux, pane_id: str) -> bool:
    """Is the pane's terminal (the relay's outer side) in raw mode right now?"""
    tty = tmux.cmd("display-message", "-p", "-t", pane_id, "#{pane_tty}").strip()
    fd = os.open(tty, os.O_RDWR | os.O_NOCTTY)
    try:
        lflag = termios.tcgetattr(fd)[3]
    finally:
        os.close(fd)
    # (bash's readline, at its prompt, keeps ISIG but turns ICANON and ECHO off)
    return all(not lflag & f for f in (termios.ICANON, termios.ECHO, termios.ISIG))


def test_raw_while_running_and_restored_after(tmux: Tmux, tmp_path: Path) -> None:
    state = tmp_path / "state"
    script = (
        f"stty -g > {q(str(tmp_path / 'before'))}; "
        f"{q(PANEBOARD, 'run', '--', PYTHON, CHILD, 'sleep', str(state))}; "
        f"echo $? > {q(str(tmp_path / 'rc'))}; stty -g > {q(str(tmp_path / 'after'))}"
    )
    pane = tmux.pane(script)
    pid, _ = ready_pids(state)
    assert _raw(tmux, pane.id)
    os.kill(pid, signal.SIGKILL)  # the program dies hard; the relay must still restore
    wait_for(lambda: (tmp_path / "after").exists() and (tmp_path / "after").read_text())
    assert (tmp_path / "rc").read_text().strip() == str(128 + 9)
    assert (tmp_path / "before").read_text() == (tmp_path / "after").read_text()


def test_ctrl_c_reaches_the_program_as_sigint(tmux: Tmux, tmp_path: Path) -> None:
    state = tmp_path / "state"
    pane = tmux.pane(q(PANEBOARD, "run", "--", PYTHON, CHILD, "signals", str(state)))
    wait_for(lambda: (state / "ready").exists())
    pane.keys("C-c")
    assert pane.dead_status() == 40 + signal.SIGINT
    assert (state / "log").read_text() == "SIGINT\n"


def test_ctrl_c_kills_a_default_program(tmux: Tmux, tmp_path: Path) -> None:
    state = tmp_path / "state"
    pane = tmux.pane(q(PANEBOARD, "run", "--", PYTHON, CHILD, "sleep", str(state)))
    wait_for(lambda: (state / "ready").exists())
    # Python turns SIGINT into KeyboardInterrupt; exit status 1 then, or 130 if it re-raises.
    pane.keys("C-c")
    assert pane.dead_status() in (1, 130)
    ready = tmp_path / "sleeping"
    pane2 = tmux.pane(q(PANEBOARD, "run", "--", "sh", "-c", f"touch {q(str(ready))}; exec sleep 30"))
    wait_for(ready.exists, what="sleep to start")
    pane2.keys("C-c")
    assert pane2.dead_status() == 128 + signal.SIGINT


@pytest.mark.parametrize(("sig", "name"), [(signal.SIGTERM, "SIGTERM"), (signal.SIGHUP, "SIGHUP")])
def test_sigterm_and_sighup_are_forwarded(tmux: Tmux, tmp_path: Path, sig: int, name: str) -> None:
    state = tmp_path / "state"
    pane = tmux.pane(q(PANEBOARD, "run", "--", PYTHON, CHILD, "signals", str(state)))
    _, leader = ready_pids(state)
    relay_pid = parent_of(leader)
    # the relay (the program's parent) carries the program's command line as its name
    title = " ".join([PYTHON, CHILD, "signals", str(state)]).encode()
    assert Path(f"/proc/{relay_pid}/cmdline").read_bytes().split(b"\0")[0] == title
    os.kill(relay_pid, sig)
    assert pane.dead_status() == 40 + sig
    assert (state / "log").read_text() == f"{name}\n"


def test_sigwinch_copies_the_new_size(tmux: Tmux, tmp_path: Path) -> None:
    state = tmp_path / "state"
    pane = tmux.pane(q(PANEBOARD, "run", "--", PYTHON, CHILD, "winch", str(state)), width=100, height=30)
    wait_for(lambda: (state / "ready").exists())

    def pane_size() -> str:
        return tmux.cmd("display-message", "-p", "-t", pane.id, "#{pane_width}x#{pane_height}").strip()

    first = pane_size()
    assert (state / "log").read_text().splitlines()[0] == first
    tmux.cmd("resize-window", "-t", pane.session, "-x", "123", "-y", "41")
    new = pane_size()
    assert new != first and new.startswith("123x")
    wait_for(lambda: new in (state / "log").read_text().splitlines(), what=f"the child to see {new}")


def test_ctrl_z_stops_and_fg_resumes(tmux: Tmux, tmp_path: Path) -> None:
    # A real interactive bash with job control: Ctrl-Z on a program that has no job
    # control of its own stops it, the relay follows it into the stop and gives the
    # terminal back; `fg` resumes both, in raw mode again.
    state = tmp_path / "state"
    pane = tmux.pane("PS1='$ ' exec bash --norc --noprofile -i", gate=False)
    wait_for(lambda: "$" in pane.screen(), what="the bash prompt")
    pane.keys(f"stty -g > {q(str(tmp_path / 'before'))}", "Enter")
    pane.keys(q(PANEBOARD, "run", "--", PYTHON, CHILD, "echo", str(state)), "Enter")
    wait_for(lambda: (state / "ready").exists())
    pane.keys("C-z")
    wait_for(lambda: "Stopped" in pane.screen(), what="bash to report the job stopped")
    pane.keys(f"stty -g > {q(str(tmp_path / 'stopped'))}", "Enter")
    wait_for(lambda: (tmp_path / "stopped").exists() and (tmp_path / "stopped").read_text())
    assert (tmp_path / "stopped").read_text() == (tmp_path / "before").read_text()
    pane.keys("fg", "Enter")
    wait_for(lambda: _raw(tmux, pane.id), what="raw mode again after fg")
    pane.keys("hello", "Enter")
    wait_for(lambda: "got hello" in pane.screen(), what="the resumed program to answer")
    pane.keys("C-d")

    def prompt_back() -> bool:
        lines = [line for line in pane.screen().splitlines() if line.strip()]
        return lines[-1].strip() == "$" and "got hello" in lines[-2]

    wait_for(prompt_back, what="the prompt after the program ended")
    pane.keys(f"echo rc=$? > {q(str(tmp_path / 'rc'))}", "Enter")
    wait_for(lambda: (tmp_path / "rc").exists() and (tmp_path / "rc").read_text())
    assert (tmp_path / "rc").read_text().strip() == "rc=0"
    pane.keys(f"stty -g > {q(str(tmp_path / 'after'))}", "Enter")
    wait_for(lambda: (tmp_path / "after").exists() and (tmp_path / "after").read_text())
    assert (tmp_path / "after").read_text() == (tmp_path / "before").read_text()


def test_pipe_mode_without_a_terminal(tmp_path: Path) -> None:
    proc = subprocess.run(
        [PANEBOARD, "run", "--", "cat"],
        input=b"one\ntwo",
        capture_output=True,
        start_new_session=True,
        timeout=20,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == b"one\r\ntwo"
    proc = subprocess.run(
        [PANEBOARD, "run", "sh", "-c", "read x; exit $x"],
        input=b"5\n",
        capture_output=True,
        start_new_session=True,
        timeout=20,
    )
    assert proc.returncode == 5


def test_usage_errors() -> None:
    for args, needle in [([], "no command given"), (["--nope", "x"], "unknown option")]:
        proc = subprocess.run([PANEBOARD, "run", *args], capture_output=True, text=True, timeout=20)
        assert proc.returncode == 2
        assert needle in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    proc = subprocess.run([PANEBOARD, "run", "/nonexistent/x"], capture_output=True, text=True, timeout=20)
    assert proc.returncode == 127
    assert proc.stderr.strip() == "paneboard run: cannot run '/nonexistent/x': No such file or directory"


def test_echoed_reply_is_not_answered_again() -> None:
    # A program that probes with its pty still echoing (ECHO on, ECHOCTL off) gets our
    # reply echoed back into its output as a second "probe"; answering that would loop.
    script = "stty echo -echoctl -icanon; printf '\\033]7501;?\\007'; sleep 0.5"
    proc = subprocess.run(
        [PANEBOARD, "run", "sh", "-c", script],
        stdin=subprocess.PIPE,
        capture_output=True,
        start_new_session=True,
        timeout=20,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count(encode_probe("bel")) == 2  # the probe, and the one echo of our reply


def test_sigtstp_to_the_relay_stops_and_fg_resumes(tmux: Tmux, tmp_path: Path) -> None:
    # `kill -TSTP` on the relay (not Ctrl-Z): the program is stopped as the terminal
    # would stop it, the relay follows, and `fg` brings both back in raw mode.
    state = tmp_path / "state"
    pane = tmux.pane("PS1='$ ' exec bash --norc --noprofile -i", gate=False)
    wait_for(lambda: "$" in pane.screen(), what="the bash prompt")
    pane.keys(q(PANEBOARD, "run", "--", PYTHON, CHILD, "echo", str(state)), "Enter")
    _, leader = ready_pids(state)
    os.kill(parent_of(leader), signal.SIGTSTP)
    wait_for(lambda: "Stopped" in pane.screen(), what="bash to report the job stopped")
    assert not _raw(tmux, pane.id)
    pane.keys("fg", "Enter")
    wait_for(lambda: _raw(tmux, pane.id), what="raw mode again after fg")
    pane.keys("again", "Enter")
    wait_for(lambda: "got again" in pane.screen(), what="the resumed program to answer")
    pane.keys("C-d")


def _payload(seed: int, size: int = 200_000) -> bytes:
    rng = random.Random(seed)
    pieces = [
        encode_probe("st"),
        encode_probe("bel"),
        b"\x1b",
        b"\x1b]7501;",
        b"\x1bPtmux;",
        b"\x07",
        b"\x1b\\",
    ]
    out = bytearray()
    while len(out) < size:
        out += rng.choice(pieces) if rng.random() < 0.1 else rng.randbytes(rng.randint(1, 3000))
    return bytes(out)


@pytest.mark.parametrize("seed", [1, 2])
def test_bytes_pass_unchanged_both_ways(tmp_path: Path, seed: int) -> None:
    payload = _payload(seed)
    data = tmp_path / "payload"
    data.write_bytes(payload)
    # program -> outside: a raw-mode child writes arbitrary bytes, probes included
    proc = subprocess.run(
        [PANEBOARD, "run", "sh", "-c", f"stty raw -echo; cat {q(str(data))}"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        start_new_session=True,
        timeout=30,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == payload
    # outside -> program: arbitrary bytes (control characters too) reach a raw-mode child
    got = tmp_path / "got"
    child = f"stty raw -echo; echo READY; head -c {len(payload)} > {q(str(got))}"
    with subprocess.Popen(
        [PANEBOARD, "run", "sh", "-c", child],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        start_new_session=True,
    ) as p:
        assert p.stdout is not None and p.stdin is not None
        assert p.stdout.readline().startswith(b"READY")
        p.stdin.write(payload)
        p.stdin.flush()
        assert p.wait(timeout=30) == 0
        p.stdin.close()
    assert got.read_bytes() == payload


@pytest.mark.parametrize("wrap", [True, False])
def test_nested_tmux_wrap_reaches_the_outer_tmux(tmux: Tmux, tmp_path: Path, wrap: bool) -> None:
    # An inner tmux (allow-passthrough on) runs in a pane of the outer one; the program
    # runs under the relay in the inner pane. The probe is answered either way (the
    # relay answers from inside); with --wrap the reports also cross the inner tmux to
    # the outer pane, without it they stop at the inner tmux, which ignores them.
    inner = f"pb-relay-inner-{secrets.token_hex(3)}"
    conf = tmp_path / "inner.conf"
    conf.write_text("set -g allow-passthrough on\nset -g status off\n")
    go, result, marker = tmp_path / "go", tmp_path / "result.json", tmp_path / "marker"
    # Written after the program, straight into passthrough: once the outer pane has it,
    # everything the program wrote before it has been through the inner tmux.
    marker.write_bytes(tmux_passthrough(encode_report("idle", app="marker")))
    prog = q(PANEBOARD, "run", *(["--wrap"] if wrap else []), "--", PYTHON, PROBE, str(result))
    inner_cmd = f"while [ ! -e {q(str(go))} ]; do sleep 0.05; done; {prog}; cat {q(str(marker))}; sleep 30"
    start_inner = f"exec tmux -L {inner} -f {q(str(conf))} new-session -s in {q('sh -c ' + q(inner_cmd))}"
    try:
        pane = tmux.pane(start_inner, gate=False)

        # The inner client has finished starting: its terminal (the outer tmux) answered its
        # device-attribute queries, whose answers make it redraw. tmux 3.3a drops a
        # passthrough sequence that arrives while a client's redraw is pending (there is no
        # `allow-passthrough all` before 3.4), so a report written in that moment is lost
        # on the way out: a race of tmux's, not of the relay's.
        def started() -> bool:
            clients = ["tmux", "-L", inner, "list-clients", "-F", "#{client_termtype}"]
            got = subprocess.run(clients, env=tmux.env, capture_output=True, text=True)
            return got.returncode == 0 and got.stdout.strip() != ""

        wait_for(started, what="the inner tmux's client started")
        go.touch()
        assert wait_for(lambda: read_json(result), what="the verdict")["verdict"] == "supported"

        def reports() -> list:
            return [e for e in Decoder().feed(pane.output()) if isinstance(e, StatusReport | ClearReport)]

        wait_for(lambda: any(getattr(e, "app", None) == "marker" for e in reports()), what="the marker")
        got = [
            e.state if isinstance(e, StatusReport) else "clear"
            for e in reports()
            if getattr(e, "app", None) != "marker"
        ]
        assert got == (["working", "blocked", "clear", "done"] if wrap else [])
    finally:
        subprocess.run(["tmux", "-L", inner, "kill-server"], env=tmux.env, capture_output=True, timeout=10)


def test_bg_lets_the_program_run_and_fg_takes_it_back(tmux: Tmux, tmp_path: Path) -> None:
    # Ctrl-Z, then `bg`: the program goes on in the background (its output still shows)
    # while bash has the terminal; the relay does not touch the terminal meanwhile.
    ticks = tmp_path / "ticks"
    pane = tmux.pane("PS1='$ ' exec bash --norc --noprofile -i", gate=False)
    wait_for(lambda: "$" in pane.screen(), what="the bash prompt")
    loop = f"for i in $(seq 1 40); do echo tick$i >> {q(str(ticks))}; sleep 0.1; done"
    pane.keys(q(PANEBOARD, "run", "--", "sh", "-c", loop), "Enter")
    wait_for(lambda: ticks.exists() and "tick2" in ticks.read_text(), what="the loop to run")
    pane.keys("C-z")
    wait_for(lambda: "Stopped" in pane.screen(), what="bash to report the job stopped")
    stopped_at = len(ticks.read_text().splitlines())
    pane.keys("bg", "Enter")
    wait_for(
        lambda: len(ticks.read_text().splitlines()) > stopped_at + 3,
        what="the loop to go on in the background",
    )
    pane.keys(f"echo prompt-works > {q(str(tmp_path / 'fgcheck'))}", "Enter")
    wait_for(lambda: (tmp_path / "fgcheck").exists(), what="bash to run a command meanwhile")
    assert not _raw(tmux, pane.id)
    wait_for(lambda: "tick40" in ticks.read_text(), what="the loop to finish")

    def done() -> bool:
        pane.keys("Enter")  # bash reports finished jobs when it next prints a prompt
        time.sleep(0.2)
        return "Done" in pane.screen()

    wait_for(done, what="bash to report the job done")
