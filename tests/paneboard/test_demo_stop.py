"""How `paneboard demo` stops, and refuses to start: the real command, real tmux, server,
collector and agents.

Closing the demo's terminal (the kernel's hang-up, SIGHUP) must end it as Ctrl-C does:
every process it started gone — the tmux server daemonises and its panes' programs are
not the demo's children, so they are found by a marker in their environment — the
tmux socket file and the directory removed, and a last line saying so. A busy --port is
one line before anything starts; a child that dies early is reported in its own words
(its log goes with the demo's directory). The collector's token is never on a command
line, where every local user can read it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import pty
import re
import select
import signal
import socket
import subprocess
import sys
import termios
import threading
import time
import uuid
from pathlib import Path

import pytest

pytestmark = pytest.mark.tmux

DEMO = [sys.executable, "-m", "paneboard.cli", "demo", "--no-browser"]
MARK = "PANEBOARD_DEMO_TEST_MARK"


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in {"TMUX", "TMUX_PANE", "PANEBOARD_CONFIG"}}
    env.update(HOME=str(tmp_path / "home"), TMPDIR=str(tmp_path / "tmp"), **extra)
    (tmp_path / "home").mkdir(exist_ok=True)
    (tmp_path / "tmp").mkdir(exist_ok=True)
    return env


def _marked(mark: str) -> dict[int, list[str]]:
    """Every live process whose environment carries `MARK=mark`: pid -> its argv."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes().split(b"\0")
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if f"{MARK}={mark}".encode() in environ:
            found[int(entry.name)] = [a.decode("utf-8", "replace") for a in argv if a]
    return found


def _ppid(pid: int) -> int | None:
    try:  # the fields after the command's name, which is in parentheses and may hold spaces
        return int((Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2]).split()[1])
    except (OSError, ValueError, IndexError):
        return None


def _environ(pid: int) -> dict[str, str]:
    pairs = (Path(f"/proc/{pid}/environ").read_bytes().decode("utf-8", "replace")).split("\0")
    return dict(p.split("=", 1) for p in pairs if "=" in p)


def test_closing_the_terminal_stops_everything_and_says_so(tmp_path: Path) -> None:
    mark = uuid.uuid4().hex
    env = _env(tmp_path, **{MARK: mark})
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        DEMO,
        stdin=slave,
        stdout=slave,
        stderr=subprocess.PIPE,
        env=env,
        start_new_session=True,
        preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0),  # the pty is its terminal
    )
    os.close(slave)
    stderr: list[str] = []
    reader = threading.Thread(target=lambda: stderr.extend(ln.decode() for ln in proc.stderr), daemon=True)
    reader.start()
    hung_up = False
    try:
        seen = ""
        deadline = time.monotonic() + 240
        while "to stop and remove everything" not in seen:
            ready, _, _ = select.select([master], [], [], max(0.0, deadline - time.monotonic()))
            assert ready, f"the demo did not finish starting: {seen!r} {''.join(stderr)}"
            chunk = os.read(master, 4096).decode("utf-8", "replace")
            assert chunk, f"the demo's terminal closed: {''.join(stderr)}"
            seen += chunk
        tmux_name = re.search(r"tmux -L (\S+) attach", seen).group(1)
        socket_path = Path(
            subprocess.run(
                ["tmux", "-L", tmux_name, "display-message", "-p", "#{socket_path}"],
                capture_output=True, text=True, env=env, check=True, timeout=30,
            ).stdout.strip()
        )  # fmt: skip
        assert socket_path.is_socket()
        workdir = Path(re.search(r"throw-away database in (\S+)", "".join(stderr)).group(1))
        assert workdir.is_dir()

        running = _marked(mark)
        # the server, the collector, the tmux server, its seven panes (and what they run)
        assert len(running) >= 10, running
        # the demo's own child: a fork the collector makes (to run tmux, ps) carries the same
        # command line until it execs
        (collector,) = [
            p
            for p, argv in running.items()
            if "agent" in argv and "--server" in argv and _ppid(p) == proc.pid
        ]
        token = _environ(collector).get("PANEBOARD_TOKEN", "")
        assert token.startswith("pbc_"), "the collector gets its token through PANEBOARD_TOKEN"
        assert "--token" not in running[collector]
        leaking = [argv for argv in running.values() if any(token in a for a in argv)]
        assert leaking == [], "a command line shows the collector's token to every local user"

        os.close(master)  # the terminal goes away: the kernel hangs up the demo's session
        hung_up = True
        proc.wait(timeout=120)
        reader.join(timeout=30)
    finally:
        if not hung_up:
            os.close(master)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    said = "".join(stderr)
    assert proc.returncode == 0, said
    assert _marked(mark) == {}, "processes the demo started outlived it"
    assert not socket_path.exists(), "the tmux socket file was left behind"
    assert not workdir.exists()
    last = said.rstrip("\n").splitlines()[-1]
    stopped = "paneboard demo: stopped: the server, the collector, the tmux server and its"
    assert last.startswith(f"{stopped} 7 panes;"), last
    assert str(workdir) in last and str(socket_path) in last and last.endswith("Nothing is left running.")


def test_a_busy_port_is_one_line_before_anything_starts(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        r = subprocess.run(
            [*DEMO, "--port", str(port)], env=_env(tmp_path), capture_output=True, text=True, timeout=120
        )
    assert r.returncode == 1
    assert r.stderr == (
        f"paneboard demo: port {port} on 127.0.0.1 is not free (Address already in use): "
        "choose another with --port, or leave --port out for a free one\n"
    )
    assert list((tmp_path / "tmp").iterdir()) == [], "something was made before the port was checked"


def test_a_child_that_dies_early_is_reported_in_its_own_words(tmp_path: Path) -> None:
    # `serve` reads PANEBOARD_CONFIG (the demo's other commands do not): a file that is not
    # there stops the server, and only the server, at start-up.
    env = _env(tmp_path, PANEBOARD_CONFIG=str(tmp_path / "no-such.toml"))
    r = subprocess.run(DEMO, env=env, capture_output=True, text=True, timeout=240)
    assert r.returncode == 1, r.stderr
    lines = r.stderr.splitlines()
    (died,) = [ln for ln in lines if "exited with status" in ln]
    assert died.startswith("paneboard demo: `paneboard serve` exited with status 1: paneboard serve: ")
    assert "no-such.toml" in died, died
    assert lines[-1].startswith("paneboard demo: stopped: the server; removed ")
    assert lines[-1].endswith("Nothing is left running.")
    assert list((tmp_path / "tmp").iterdir()) == [], "the demo's directory was left behind"


def test_sigterm_in_the_middle_of_starting_leaves_nothing(tmp_path: Path) -> None:
    """A stop while the demo is still starting (here: its tmux server is up, its collector starting)."""
    mark = uuid.uuid4().hex
    env = _env(tmp_path, **{MARK: mark})
    proc = subprocess.Popen(
        DEMO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    stderr: list[str] = []
    try:
        for line in proc.stderr:
            stderr.append(line)
            if "starting the collector" in line:
                break
        else:
            raise AssertionError("".join(stderr))
        # the line comes just before the collector is spawned: stop once it runs, so the
        # closing line has a collector to name (a stop before it would rightly not name one)
        deadline = time.monotonic() + 30
        while not any("agent" in argv and "--allow-input" in argv for argv in _marked(mark).values()):
            assert time.monotonic() < deadline, "the demo's collector never started"
            time.sleep(0.02)
        proc.send_signal(signal.SIGTERM)
        stderr.extend(proc.stderr)
        proc.wait(timeout=120)
    finally:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
    assert proc.returncode == 0, "".join(stderr)
    assert _marked(mark) == {}
    assert list((tmp_path / "tmp").iterdir()) == []
    stopped = "paneboard demo: stopped: the server, the collector, the tmux server and its"
    # 1 pane, or more if the demo agents' windows were opened just before the stop
    assert re.match(rf"{stopped} \d+ panes?;", stderr[-1]), stderr[-1]
    assert stderr[-1].rstrip().endswith("Nothing is left running.")
