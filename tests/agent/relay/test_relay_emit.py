"""`paneboard emit` and `report()`: what is asked is exactly what a reader decodes."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest
from paneboard_agent.tools.report import ReportError, build, report
from paneboard_protocol import AgentReport, ClearReport, Decoder, StatusReport
from relay_tmux import PANEBOARD, PYTHON, Tmux, q
from support.clirun import CliResult, run_cli_text
from support.wait import wait_for


def decoded(data: bytes) -> list:
    return Decoder().feed(data)


def run_emit(*args: str, env: dict | None = None) -> CliResult[str]:
    """`paneboard emit` through its entry point, in-process: where it writes is a file
    (PANEBOARD_TTY, --tty), so no terminal or process of its own is under test."""
    return run_cli_text("emit", *args, env={**os.environ, **(env or {})})


@pytest.mark.tmux
def test_emit_in_a_pane_decodes_exactly(tmux: Tmux, tmp_path: Path) -> None:
    out, err = tmp_path / "stdout", tmp_path / "stderr"
    before = int(time.time())
    command = q(
        PANEBOARD,
        "emit",
        "blocked",
        "--kind",
        "permission",
        "--msg",
        "Run `rm -rf build`? ✳ (y/n)",
        "--title",
        "Claude: deploy",
        "--id",
        "task_1/a.b",
        "--app",
        "claude-code",
        "--progress",
        "40",
        "--protocol",
        "both",
        "--agent",
        "claude",
        "--session",
        "s-123",
    )
    pane = tmux.pane(f"{command} > {q(str(out))} 2> {q(str(err))}")
    assert pane.dead_status() == 0
    assert out.read_text() == "" and err.read_text() == ""  # nothing on stdout: hooks capture it

    def events() -> list:
        return [e for e in decoded(pane.output()) if isinstance(e, StatusReport | AgentReport)]

    status, agent = wait_for(lambda: len(events()) == 2 and events(), what="both reports")
    assert isinstance(status, StatusReport)
    assert (status.state, status.kind, status.id, status.app, status.progress) == (
        "blocked",
        "permission",
        "task_1/a.b",
        "claude-code",
        40,
    )
    assert status.msg == "Run `rm -rf build`? ✳ (y/n)"
    assert status.title == "Claude: deploy"
    assert isinstance(agent, AgentReport)
    assert (agent.agent, agent.state, agent.session, agent.ended) == ("claude", "blocked", "s-123", False)
    assert agent.ts is not None and before <= agent.ts <= int(time.time())


@pytest.mark.tmux
def test_emit_errors_in_a_pane_write_nothing(tmux: Tmux, tmp_path: Path) -> None:
    err = tmp_path / "stderr"
    pane = tmux.pane(f"{q(PANEBOARD, 'emit', 'working', '--kind', 'question')} 2> {q(str(err))}")
    assert pane.dead_status() == 2
    assert err.read_text() == "paneboard emit: kind counts only with state 'blocked', not 'working'\n"
    assert b"7501" not in pane.output()


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["sleeping"], "unknown state 'sleeping'"),
        (["idle", "--msg", "a\nb"], "one line"),
        (["idle", "--title", "x" * 193], "title is 193 bytes"),
        (["idle", "--id", "a b"], "id segment 'a b'"),
        (["working", "--progress", "x"], "whole number"),
        (["working", "--progress", "101"], "0-100"),
        (["error", "--protocol", "thinkterm", "--agent", "a"], "cannot be sent as THINKTERM_AGENT"),
        (["idle", "--protocol", "thinkterm"], "needs an agent name"),
        (["idle", "--protocol", "smoke"], "invalid choice"),
        ([], "required: STATE"),
    ],
)
def test_emit_invalid_values(args: list[str], needle: str, tmp_path: Path) -> None:
    sink = tmp_path / "tty"
    proc = run_emit(*args, env={"PANEBOARD_TTY": str(sink)})
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert needle in proc.stderr and len(proc.stderr.splitlines()) == 1
    assert proc.stderr.startswith("paneboard emit: ")
    assert not sink.exists()


#: Runs argv[1:] with no controlling terminal and no ancestor that has one: it forks, the
#: parent exits, and the orphan (re-parented to init or a subreaper) starts a session of
#: its own once its first parent has gone. Results go to files: nobody waits for it.
ORPHAN = """
import os, sys
out = sys.argv[1]
first = os.getpid()
if os.fork():
    os._exit(0)
os.setsid()
while os.getppid() == first:
    os.sched_yield()
fd = os.open(out + ".err", os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
os.dup2(fd, 2)
pid = os.fork()
if pid == 0:
    os.execv(sys.argv[2], sys.argv[2:])
_, status = os.waitpid(pid, 0)
with open(out + ".tmp", "w") as f:
    f.write(str(os.waitstatus_to_exitcode(status)))
os.rename(out + ".tmp", out + ".rc")
"""


@pytest.mark.proc
def test_emit_without_a_terminal(tmp_path: Path) -> None:
    """No controlling terminal, and none up the process tree: one line, exit status 1."""
    env = {k: v for k, v in os.environ.items() if k != "PANEBOARD_TTY"}
    out = tmp_path / "emit"
    subprocess.run(
        [PYTHON, "-c", ORPHAN, str(out), PANEBOARD, "emit", "idle"],
        env=env,
        timeout=20,
        start_new_session=True,
        stdin=subprocess.DEVNULL,
        check=True,
    )
    rc = Path(f"{out}.rc")
    wait_for(rc.exists, what="the orphaned emit to finish")
    assert rc.read_text() == "1"
    assert Path(f"{out}.err").read_text() == (
        "paneboard emit: no controlling terminal to write to (set PANEBOARD_TTY to the pane's tty)\n"
    )


@pytest.mark.tmux
def test_emit_in_a_session_of_its_own_reports_to_its_ancestors_terminal(tmux: Tmux) -> None:
    """What the real Claude Code 2.1.328 does with its hooks: starts them in a new session
    (no controlling terminal, sockets as stdin and stdout). The report still reaches the
    pane the agent runs in: the nearest ancestor's terminal."""
    command = f"setsid -w {q(PANEBOARD, 'emit', 'working', '--app', 'claude-code')} </dev/null >/dev/null"
    pane = tmux.pane(f"{command}; echo rc=$?")
    assert pane.dead_status() == 0
    assert "rc=0" in pane.screen()
    [status] = [e for e in decoded(pane.output()) if isinstance(e, StatusReport)]
    assert (status.state, status.app) == ("working", "claude-code")


def test_emit_to_paneboard_tty_file(tmp_path: Path) -> None:
    sink = tmp_path / "tty"
    assert run_emit("done", "--msg", "ok", env={"PANEBOARD_TTY": str(sink)}).returncode == 0
    assert run_emit("working", "--tty", str(sink)).returncode == 0
    assert sink.read_bytes() == b"\x1b]7501;state=done:msg=b2s=\x1b\\\x1b]7501;state=working\x1b\\"
    bad = run_emit("idle", env={"PANEBOARD_TTY": str(tmp_path / "no" / "such")})
    assert bad.returncode == 1 and "cannot open" in bad.stderr


def test_thinkterm_state_mapping() -> None:
    [done] = decoded(build("done", protocol="thinkterm", agent="aider", ts=7))
    assert isinstance(done, AgentReport) and done.state == "idle" and done.ts == 7
    error = decoded(build("error", protocol="both", app="codex", msg="boom", ts=7))
    assert [type(e) for e in error] == [StatusReport, AgentReport]
    assert error[0].state == "error" and error[1].state == "idle" and error[1].agent == "codex"
    # clear has no contract form: with both, only the 7501 clear is sent ...
    assert [type(e).__name__ for e in decoded(build("clear", protocol="both", agent="x"))] == ["ClearReport"]
    # ... unless the session is over: then the contract says so (ended=1, TA-15)
    clear, farewell = decoded(build("clear", protocol="both", agent="x", ended=True, ts=9))
    assert isinstance(clear, ClearReport)
    assert isinstance(farewell, AgentReport) and (farewell.state, farewell.ended) == ("idle", True)
    [working] = decoded(build("working", protocol="thinkterm", agent="x", ended=True))
    assert working.ended and working.state == "working"
    with pytest.raises(ValueError, match="--ended belongs to THINKTERM_AGENT"):
        build("idle", ended=True)


def test_report_api(tmp_path: Path) -> None:
    sink = tmp_path / "tty"
    data = report("working", app="my-tool", progress=5, tty=str(sink))
    assert sink.read_bytes() == data
    [event] = decoded(data)
    assert (event.state, event.app, event.progress) == ("working", "my-tool", 5)
    with pytest.raises(ValueError, match="unknown state"):
        report("bogus", tty=str(sink))
    with pytest.raises(ReportError, match="cannot open"):
        report("idle", tty=str(tmp_path / "missing" / "tty"))


@pytest.mark.proc
def test_python_api_from_a_subprocess_with_paneboard_tty(tmp_path: Path) -> None:
    sink = tmp_path / "tty"
    code = "from paneboard_agent.tools.report import report; report('done', msg='hi')"
    subprocess.run(
        [PYTHON, "-c", code], check=True, env={**os.environ, "PANEBOARD_TTY": str(sink)}, timeout=20
    )
    [event] = decoded(sink.read_bytes())
    assert (event.state, event.msg) == ("done", "hi")
