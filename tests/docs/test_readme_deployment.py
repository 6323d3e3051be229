"""The README's "A real deployment, by hand", run as written.

The shell block is taken from README.md itself and run by bash, with only the port
changed (8765 may be taken on a shared machine) and a private HOME and tmux
directory, so `~` and the default tmux server are the test's own. `paneboard` is
found on the PATH the way the README's "Putting paneboard on your PATH" says: the
checkout's `.venv/bin`. A real tmux server carries a pane that reports blocked; the
test signs in as the login the block created and waits for the pane in the API.
"""

from __future__ import annotations

import base64
import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from support.sshd import free_port
from support.tmux import TmuxServer

pytestmark = pytest.mark.tmux

ROOT = Path(__file__).resolve().parents[2]
PASSWORD = "correct horse battery"


def readme_block(heading: str) -> str:
    """The first ```sh block under `heading` in README.md."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split(f"\n{heading}\n", 1)
    assert len(section) == 2, f"README.md has no {heading!r} section"
    m = re.search(r"^```sh\n(.*?)^```", section[1], re.S | re.M)
    assert m, f"no ```sh block under {heading!r}"
    return m.group(1)


def commands(block: str) -> list[str]:
    return [
        line.split("  #")[0].strip()
        for line in block.splitlines()
        if line.strip() and not line.startswith("#")
    ]


def test_the_block_is_the_deployment_we_check() -> None:
    """What the run below relies on: the steps are there, in this order."""
    steps = commands(readme_block("### A real deployment, by hand"))
    wanted = [
        "paneboard db upgrade",
        "paneboard token create",
        "paneboard user add",
        "paneboard serve",
        "paneboard agent",
    ]
    found = [w for s in steps for w in wanted if w in s]
    assert found == wanted, steps
    assert steps[0].startswith("export PANEBOARD_DB=~/")
    assert steps[-1].endswith("--local"), "the checked block watches this machine's tmux"
    # the token goes through the environment: a command line is public (`ps`, /proc/PID/cmdline)
    assert "--token" not in "\n".join(steps)
    assert "PANEBOARD_TOKEN=$(paneboard token create build1)" in steps
    assert "export PANEBOARD_TOKEN" in steps


def test_install_instructions_are_what_the_install_test_runs() -> None:
    """The README's install line is the one tests/paneboard/test_packages.py carries out."""
    block = readme_block("## Install")
    assert "uv tool install --find-links DIST paneboard" in block
    assert "uv build --all-packages -o DIST" in block
    test = (Path(__file__).parents[1] / "paneboard" / "test_packages.py").read_text()
    assert '"tool", "install", "--find-links", str(dist), "paneboard"' in test
    assert '"build", "--all-packages", "-o", str(out)' in test


def _in_session(sid: int, word: str) -> list[int]:
    """The live processes of session `sid` with `word` among their arguments."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_bytes()
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2 :].split()
        if int(fields[3]) == sid and fields[0] != b"Z" and word.encode() in argv:
            found.append(int(entry.name))
    return found


def _environ(pid: int) -> dict[str, str]:
    pairs = Path(f"/proc/{pid}/environ").read_bytes().decode("utf-8", "replace").split("\0")
    return dict(p.split("=", 1) for p in pairs if "=" in p)


def _api_panes(client: httpx.Client, base: str) -> list[dict]:
    r = client.get(base + "/api/panes", timeout=5)
    r.raise_for_status()
    return r.json()


def _wait(what: str, pred, timeout: float, log: Path, show=lambda: ""):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(httpx.HTTPError, OSError):
            got = pred()
            if got:
                return got
        time.sleep(0.2)
    output = "\n".join(line for line in log.read_text().splitlines() if '"GET /api/' not in line)
    raise AssertionError(f"timed out waiting for {what} {show()}; the block's output:\n{output[-4000:]}")


def test_readme_deployment_by_hand_works_as_written(tmp_path: Path) -> None:
    block = readme_block("### A real deployment, by hand")
    assert block.count("8765") == 2  # serve --port and the agent's --server: both get the test's port
    port = free_port()
    script = "set -e\n" + block.replace("8765", str(port))

    home, work, tmuxdir = tmp_path / "home", tmp_path / "work", tmp_path / "tmux"
    for d in (home, work, tmuxdir):
        d.mkdir()
    venv_bin = Path(sys.executable).parent
    env = {
        k: v for k, v in os.environ.items() if k not in {"TMUX", "TMUX_PANE", "PANEBOARD_DB", "XDG_DATA_HOME"}
    }
    env.update(HOME=str(home), TMUX_TMPDIR=str(tmuxdir), PATH=f"{venv_bin}{os.pathsep}{env.get('PATH', '')}")
    assert shutil.which("paneboard", path=env["PATH"]) == str(venv_bin / "paneboard")

    # This machine's tmux, on the default socket of the private TMUX_TMPDIR: what --local finds.
    tmux = TmuxServer(name="default")
    tmux.env["TMUX_TMPDIR"] = str(tmuxdir)
    tmux.start(session="work")
    log = tmp_path / "block.log"
    (tmp_path / "stdin").write_text(PASSWORD + "\n")  # `paneboard user add ana` reads it
    with open(tmp_path / "stdin") as stdin, open(log, "wb") as out:
        proc = subprocess.Popen(
            ["bash", "-c", script], cwd=work, env=env, stdin=stdin, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        _wait("the server", lambda: httpx.get(base + "/healthz", timeout=1).status_code == 200, 120, log)
        db = home / ".local" / "share" / "paneboard" / "paneboard.db"
        assert db.is_file()
        with httpx.Client() as client:
            r = client.post(base + "/api/login", json={"name": "ana", "password": PASSWORD}, timeout=10)
            assert r.status_code == 200, r.text
            _wait("the tmux pane in the API", lambda: [
                p for p in _api_panes(client, base) if p["session"] == "work"
            ], 120, log)  # fmt: skip
            # A program that reports it waits on a question, then waits (it stays in front).
            msg = base64.b64encode(b"Deploy to staging?").decode()
            reporter = tmp_path / "reporter.py"
            reporter.write_text(
                "import sys, time\n"
                f"sys.stdout.write('\\x1b]7501;state=blocked:kind=question:app=deploy:msg={msg}\\x1b\\\\')\n"
                "sys.stdout.flush()\n"
                "time.sleep(600)\n"
            )
            tmux.send("work", f"python3 {reporter}")

            def blocked() -> list[dict]:
                return [
                    p for p in _api_panes(client, base) if p["session"] == "work" and p["state"] == "blocked"
                ]

            (pane,) = _wait(
                "the pane to arrive blocked",
                blocked,
                60,
                log,
                lambda: (_api_panes(client, base), tmux.cmd("capture-pane", "-p", "-t", "work")),
            )
            assert (pane["msg"], pane["kind"], pane["reachable"]) == ("Deploy to staging?", "question", True)
        listing = subprocess.run(
            ["paneboard", "token", "list"],
            env={**env, "PANEBOARD_DB": str(db)},
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        ).stdout
        assert re.search(r"^build1\tcollector\tactive\tlast used \d{4}-", listing, re.M), listing
        assert proc.poll() is None, "the agent (the block's last command) should still be running"
        # it has run and connected (the pane arrived): its token came from the environment
        (agent,) = _in_session(proc.pid, "agent")
        token = _environ(agent).get("PANEBOARD_TOKEN", "")
        assert re.fullmatch(r"pbc_[A-Za-z0-9_-]{43}", token), "the agent has its token from the environment"
        assert token not in Path(f"/proc/{agent}/cmdline").read_text(), "the token is on a command line"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(5)
        tmux.kill()
