"""A program in a pane cannot rewrite the collector's pane listing (issue 40, finding 2).

tmux 3.3a puts the foreground process's argv[0] into `#{pane_current_command}` as it
is, tabs and newlines included: a program started as `exec -a $'sleep\\nP\\t...' sleep`
added whole lines to the collector's `list-panes` listing. Here that program runs as
`nobody` (it cannot reach the tmux server, whose socket is root's) in a real pane, and
names itself with three forged lines: a pane of an excluded session filed under an
included one, a blocked pane filed under the excluded session (so it would be made
`gone`), and `%sessions-changed` (inside a control-mode reply, a re-list without
pause). Locally and through a real sshd.
"""

from __future__ import annotations

import shlex
import subprocess
import time
from pathlib import Path

import pytest
from helpers import b64, osc7501, reporter
from paneboard_agent.tmux.control import quote
from support.agentproc import AgentProcess
from support.sshd import Sshd
from support.tmux import TmuxServer
from support.tools import require_tool
from support.wait import wait_for

pytestmark = [pytest.mark.tmux]

MSG = "Drop the table?"
#: seconds the tmux commands are counted over
WINDOW = 5
#: a collector polling once a second sends a listing and a round-trip probe a poll, and
#: the odd capture: far below this; re-listing on every reply it sends, it ran ~40
COMMANDS_PER_SECOND = 8


def _forged_name(tmux: TmuxServer, secret: str, blocked: str) -> str:
    """argv[0] that, unescaped, lists the secret pane under `main` and the blocked pane
    under the excluded session, each with its real pid and tty, then a notification."""

    def line(pane: str, session: str) -> str:
        pid, tty = tmux.cmd("display-message", "-p", "-t", pane, "#{pane_pid} #{pane_tty}").split()
        return "\t".join(["P", "$0", "@0", "0", pane, pid, "0", tty, session, "w", "x"])

    # no spaces: tmux keeps argv[0] up to the first one
    return "sleep\n" + line(secret, "main") + "\n" + line(blocked, "secret-vault") + "\n%sessions-changed\nx"


def _as_nobody(name: str) -> str:
    """A pane command: `exec -a NAME sleep` by a process of uid `nobody`, written with
    bash's $'...' quoting as a person would type it."""
    quoted = (
        "$'" + name.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n").replace("\t", "\\t") + "'"
    )
    inner = f"exec -a {quoted} sleep 1000"
    return f"exec setpriv --reuid=65534 --regid=65534 --clear-groups bash -c {shlex.quote(inner)}"


def _commands_run(tmux: TmuxServer) -> int:
    """How many commands the tmux server has run so far: the number of a control-mode
    reply (`%begin TIME NUMBER FLAGS`) counts every command any client sent it."""
    res = subprocess.run(
        [*tmux.base(), "-C", "attach-session", "-r", "-t", "=main"],
        input=b"display-message -p x\n",
        capture_output=True,
        env=tmux.env,
        timeout=10,
        check=True,
    )
    numbers = [int(line.split()[2]) for line in res.stdout.splitlines() if line.startswith(b"%begin ")]
    return max(numbers)


@pytest.fixture
def secret(tmux_server: TmuxServer) -> str:
    """A pane in a session the collector's `exclude` glob leaves out, with a secret on it."""
    require_tool("setpriv")
    pane = tmux_server.new_session("secret-vault")
    tmux_server.send(pane, "echo hunter2")
    return pane


def _config(tmp_path: Path, host: str) -> str:
    path = tmp_path / "collector.toml"
    path.write_text(f'poll_interval = 1.0\n\n[[hosts]]\n{host}exclude = ["secret*"]\n')
    return str(path)


def _attack(tmux: TmuxServer, proc: AgentProcess, secret: str) -> dict[str, str]:
    """A pane blocks on a question; then the forging program starts, in a session listed
    first, and the collector lists a window opened after it had its name (that listing
    carried the forged lines)."""
    proc.wait_line(lambda o: o["pane"] == "%0", what="the first pane listed")
    report = osc7501(f"state=blocked:kind=question:app=migrate:msg={b64(MSG)}")
    blocked = tmux.new_window("main", "mig", reporter((0.5, report), then_sleep=600))
    proc.wait_line(lambda o: o["pane"] == blocked and o["state"] == "blocked", what="blocked")
    attacker = tmux.new_session("aaa", _as_nobody(_forged_name(tmux, secret, blocked)))

    def named() -> bool:
        return "%sessions-changed" in tmux.cmd(
            "display-message", "-p", "-t", attacker, "#{pane_current_command}"
        )

    wait_for(named, what="the forging name in tmux's listing")
    owner = tmux.cmd("display-message", "-p", "-t", attacker, "#{pane_pid}").strip()
    uids = next(ln for ln in Path(f"/proc/{owner}/status").read_text().splitlines() if ln.startswith("Uid:"))
    assert uids.split()[1:] == ["65534"] * 4  # the forging program runs as nobody
    canary = tmux.new_window("main", "canary")
    proc.wait_line(lambda o: o["pane"] == canary, what="a listing after the forging name")
    proc.wait_line(lambda o: o["pane"] == attacker, what="the forging pane itself, listed")
    return {"secret": secret, "blocked": blocked}


def _no_forgery(proc: AgentProcess, scene: dict[str, str]) -> None:
    lines = proc.snapshot()
    assert [o for o in lines if o["pane"] == scene["secret"]] == []  # never filed anywhere
    assert [o for o in lines if o["pane"] == scene["blocked"] and o.get("gone")] == []
    latest = proc.latest(scene["blocked"])
    assert latest is not None and latest["state"] == "blocked" and latest["session"] == "main"


def test_a_pane_program_cannot_forge_the_listing_locally(
    tmux_server: TmuxServer, secret: str, tmp_path: Path
) -> None:
    host = f"local = true\ntmux_socket = {tmux_server.name!r}\n"
    proc = AgentProcess("--config", _config(tmp_path, host))
    try:
        _no_forgery(proc, _attack(tmux_server, proc, secret))
        # the forged `%sessions-changed` inside a listing's reply is no notification: the
        # collector does not re-list without pause. Counted in commands tmux ran while the
        # collector polled once a second for a while: load can only make the count smaller.
        before = _commands_run(tmux_server)
        time.sleep(WINDOW)
        ran = _commands_run(tmux_server) - before
        assert ran <= COMMANDS_PER_SECOND * WINDOW, f"{ran} tmux commands in {WINDOW} s"
    finally:
        proc.stop()


@pytest.mark.sshd
def test_a_pane_program_cannot_forge_the_listing_over_ssh(
    tmux_server: TmuxServer, secret: str, sshd: Sshd, tmp_path: Path
) -> None:
    host = (
        f'host = "127.0.0.1"\nport = {sshd.port}\nuser = "root"\nidentity = "{sshd.client_key}"\n'
        f'known_hosts = "{sshd.known_hosts}"\nssh_config = "none"\ntmux_socket = {tmux_server.name!r}\n'
    )
    proc = AgentProcess("--config", _config(tmp_path, host))
    try:
        _no_forgery(proc, _attack(tmux_server, proc, secret))
    finally:
        proc.stop()


def test_quote_carries_any_text_through_a_control_mode_command(tmux_server: TmuxServer) -> None:
    """`control.quote`: what the listing's format needs (control bytes, in one command
    line) and what would change it (`$`, `\\`, `"`) reach tmux as they were."""
    text = 'a$HOME\\b"c\td\x01e\x7ff'
    res = subprocess.run(
        [*tmux_server.base(), "-C", "attach-session", "-r", "-t", "=main"],
        input=f"display-message -p {quote(text)}\n".encode(),
        capture_output=True,
        env=tmux_server.env,
        timeout=10,
        check=True,
    )
    block = res.stdout.split(b"\n%begin ")[-1].split(b"\n")[1]
    assert block == text.encode()
