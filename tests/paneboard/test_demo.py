"""`paneboard demo` end to end: the real command, real tmux, server, collector and agents.

It checks what a newcomer sees: one line with the board's URL, every kind of demo
agent classified from its own kind of evidence, the ssh-hidden one losing its
identity when its report goes stale (TA-13), and Ctrl-C removing everything.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest
from support.wait import wait_for

pytestmark = pytest.mark.tmux


def _panes(url: str, token: str) -> list[dict]:
    request = urllib.request.Request(f"{url}/api/panes", headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.load(response)


def _get(url: str, token: str, path: str) -> dict:
    request = urllib.request.Request(f"{url}{path}", headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.load(response)


def _window(pane: dict) -> str:
    return pane["window"].split(":", 1)[-1]


def test_demo_shows_every_kind_of_agent_and_cleans_up(tmp_path: Path) -> None:
    env = dict(os.environ, PANEBOARD_DEMO_STALE_AFTER="20", HOME=str(tmp_path))
    proc = subprocess.Popen(
        [sys.executable, "-m", "paneboard.cli", "demo", "--no-browser"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    stderr_lines: list[str] = []
    reader = threading.Thread(target=lambda: stderr_lines.extend(proc.stderr), daemon=True)
    reader.start()
    try:
        board, login = None, None
        deadline = time.monotonic() + 240
        while board is None and time.monotonic() < deadline:
            line = proc.stdout.readline()
            assert line, f"demo exited early: {''.join(stderr_lines)}"
            if re.fullmatch(r"http://127\.0\.0\.1:\d+/\?token=\S+\n", line):
                board = line.strip()
            elif "with password" in line:
                assert board is None, "the operator's login comes first: it shows screens and answers"
                login = line
        assert board, "the demo never printed the board's URL on a line of its own"
        url, token = board.split("/?token=")
        m = re.search(rf"Sign in at {re.escape(url)}/login as 'demo' with password (\S+) ", login or "")
        assert m, login
        password = m.group(1)

        expected = {
            "claude": ("claude", "protocol"),  # OSC 7501 under paneboard run
            "thinkterm": ("my-agent", "protocol"),  # THINKTERM_AGENT only
            "codex": ("codex", "screen"),  # screen rules only
            "claude-native": ("claude", None),  # native signals and screen
        }
        seen: dict[str, set] = {name: set() for name in expected}
        remote_agents: list = []
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            for pane in _panes(url, token):
                name = _window(pane)
                if name in seen:
                    seen[name].add((pane["agent"], pane["source"], pane["state"]))
                if name == "remote":
                    assert pane["observable"] is False
                    remote_agents.append(pane["agent"])
            done = all(
                any(
                    agent == want_agent and (want_source is None or source == want_source)
                    for agent, source, _ in seen[name]
                )
                for name, (want_agent, want_source) in expected.items()
            )
            if done and "remote-agent" in remote_agents and remote_agents[-1] is None:
                break
            time.sleep(1)
        for name, (want_agent, want_source) in expected.items():
            assert any(
                a == want_agent and (want_source is None or s == want_source) for a, s, _ in seen[name]
            ), f"{name}: only saw {seen[name]}"
        assert "remote-agent" in remote_agents, f"the remote pane was never identified: {remote_agents}"
        assert remote_agents[-1] is None, "the stale remote report kept its identity (TA-13)"

        # The stats page has a labelled sample week, and the live agents' waits beside it.
        stats = _get(url, token, "/api/stats")
        assert stats["totals"]["count"] > 100 and len(stats["per_day"]["days"]) == 8
        assert {"sample-build1", "sample-gpu2", "sample-laptop"} <= set(stats["options"]["hosts"])
        assert all(p["session"] == "sample day" for p in stats["panes"] if p["host"].startswith("sample-"))

        def live_waits() -> list[dict]:
            blocks = _get(url, token, "/api/blocks?limit=10000")["blocks"]
            dones = _get(url, token, "/api/blocks?state=done&limit=10000")["blocks"]
            return [b for b in blocks + dones if not b["host"].startswith("sample-")]

        deadline = time.monotonic() + 120
        while not live_waits() and time.monotonic() < deadline:
            time.sleep(1)
        assert live_waits(), "the demo's own agents left no wait in the ledger"

        # the Claude-like asker is answered from the board, and goes on
        from support.webclient import WebClient

        demo = WebClient(url).login("demo", password)
        asker = next(p for p in _panes(url, token) if _window(p) == "approve")
        assert asker["input"] is True
        shot = wait_for(
            lambda: (s := demo.get(f"/api/panes/{asker['id']}/screen?wait=2"))["answers"] and s,
            timeout=60,
            what="the asker's answers",
        )
        status, body = demo.request(
            "POST", f"/api/panes/{asker['id']}/answer", {"fingerprint": shot["fingerprint"], "answer": "yes"}
        )
        assert (status, body["outcome"]) == (200, "typed")
        wait_for(
            lambda: any(
                "ANSWERED yes" in ln for ln in demo.get(f"/api/panes/{asker['id']}/screen?wait=2")["lines"]
            ),
            timeout=30,
            what="the asker continuing",
        )

        workdir = next(
            Path(m.group(1))
            for line in stderr_lines
            if (m := re.search(r"throw-away database in (\S+)", line))
        )
        assert workdir.exists()
    finally:
        proc.send_signal(signal.SIGINT)
        time.sleep(0.5)
        proc.send_signal(signal.SIGINT)  # impatient users press Ctrl-C twice
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise
    assert proc.returncode == 0, "".join(stderr_lines)
    assert not workdir.exists(), "Ctrl-C left the demo's directory behind"
    tmux_ls = subprocess.run(
        ["tmux", "-L", f"paneboard-demo-{proc.pid}", "ls"], capture_output=True, text=True
    )
    assert tmux_ls.returncode != 0, "Ctrl-C left the demo's tmux server running"
