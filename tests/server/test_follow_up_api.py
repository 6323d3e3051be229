"""Follow-ups and keys through the server (answers/desk.py, api/screens.py): a real
`paneboard serve`, a real collector with `--allow-input`, real tmux and a program at an
idle input prompt drawn as Claude Code draws it (tests/support/idle_prompt.py, started as
`claude`). Only an operator, with the CSRF token and the server's Origin, sends one;
every attempt is audited with who, what and the outcome; a screen is followed up once;
a key that stops a turn needs the process the screen showed in front."""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest
from pbserver import make_tokens
from support.forked import spawn
from support.tmux import TmuxServer
from support.tools import require_tool
from support.wait import wait_for
from support.webclient import WebClient

PASSWORD = "correct horse battery"
PROGRAM = Path(__file__).parent.parent / "support" / "idle_prompt.py"


async def _operator(db: str) -> None:
    from paneboard_server.auth import accounts
    from paneboard_server.store.database import create_engine, resolve_url

    engine = create_engine(resolve_url(db))
    try:
        await accounts.add_viewer(engine, "olga", PASSWORD, operator=True)
    finally:
        await engine.dispose()


def _records(path: Path) -> list[dict[str, str]]:
    if not path.exists():
        return []
    return [json.loads(ln) for ln in path.read_text(encoding="utf-8").splitlines()]


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_follow_up_from_the_board(db_url: str, server_factory: Any, tmp_path: Path) -> None:
    require_tool("tmux")
    tokens = asyncio.run(make_tokens(db_url, viewer_password=PASSWORD))
    asyncio.run(_operator(db_url))
    srv = server_factory(db_url)
    tmux = TmuxServer().start("work")
    record = tmp_path / "record.jsonl"
    env = {k: v for k, v in os.environ.items() if k != "TMUX"}
    args = ["agent", "--server", srv.url, "--token", tokens["collector"]]
    args += ["--tmux-socket", tmux.name, "--local", "--allow-input"]
    collector = spawn(args, log=tmp_path / "collector.log", env=env)
    wall = WebClient(srv.url, bearer=tokens["viewer"])
    try:
        wait_for(lambda: wall.get("/api/panes"), timeout=30, what="the collector's panes")
        inner = f"exec -a claude {shlex.quote(sys.executable)} {shlex.quote(str(PROGRAM))} {record}"
        pane = tmux.new_window("work", "agent", f"bash -c {shlex.quote(inner)}")
        row = wait_for(
            lambda: next(
                (p for p in wall.get("/api/panes") if p["pane"] == pane and p["state"] == "idle"), None
            ),
            timeout=30,
            what="the agent idle",
        )
        pid = str(row["id"])
        olga = WebClient(srv.url).login("olga", PASSWORD)
        ana = WebClient(srv.url).login("ana", PASSWORD)  # no operator role

        def shown(after: str | None = None, showing: str = "") -> dict[str, Any]:
            """A screen a person would send on: one that takes a follow-up and, after a send,
            shows the agent's answer to it (the screens between, the text drawn in the box
            before its Enter, are gone by the time the send arrives: `changed`)."""
            q = f"/api/panes/{pid}/screen?wait=2" + (f"&after={after}" if after else "")
            return wait_for(
                lambda: (
                    (s := olga.get(q))["follow_up"]
                    and s["fingerprint"] != after
                    and any(showing in ln for ln in s["lines"])
                    and s
                ),
                timeout=30,
                what="a screen that takes a follow-up",
            )

        def post(c: WebClient, body: dict[str, Any], **headers: str) -> tuple[int, Any]:
            return c.request("POST", f"/api/panes/{pid}/answer", body, headers=headers)

        shot = shown()
        assert shot["input"] is True and shot["state"] == "idle" and shot["process"]
        fp = shot["fingerprint"]
        follow = {"fingerprint": fp, "text": "run the tests"}
        # refused credentials: audited, nothing typed
        assert post(wall, follow)[0] == 403
        assert post(ana, follow)[0] == 403
        assert post(olga, follow, **{"X-CSRF-Token": "wrong"})[0] == 403
        assert post(olga, follow, Origin="https://evil.example")[0] == 403
        # malformed: no attempt
        assert post(olga, {"fingerprint": fp, "text": "a\x1bb"})[0] == 422
        assert post(olga, {"fingerprint": fp, "press": "Escape"})[0] == 422  # no process named
        assert post(olga, {"fingerprint": fp, "press": "C-z", "process": "1"})[0] == 422
        assert post(olga, {"fingerprint": fp, "text": "x", "press": "Enter"})[0] == 422
        # the checks
        assert post(olga, {**follow, "fingerprint": "0" * 64})[1]["outcome"] == "changed"
        assert post(olga, {"fingerprint": fp, "answer": "yes"})[1]["outcome"] == "not-blocked"
        assert _records(record) == []
        status, got = post(olga, follow)
        assert (status, got["outcome"]) == (200, "typed"), got
        wait_for(lambda: _records(record), timeout=20, what="the submission")
        assert _records(record) == [{"submitted": "run the tests"}]
        assert post(olga, follow)[1]["outcome"] in ("used", "changed")  # single use
        # several lines: one submission
        nxt = shown(after=fp, showing="You said: run the tests")
        lines = "first line\nsecond line"
        assert post(olga, {"fingerprint": nxt["fingerprint"], "text": lines})[1]["outcome"] == "typed"
        wait_for(lambda: len(_records(record)) == 2, timeout=20, what="the pasted submission")
        assert _records(record)[1] == {"submitted": lines}
        # Escape: only while the process the screen showed is in front
        now = shown(after=nxt["fingerprint"], showing="You said: first line / second line")
        wrong = str(int(now["process"]) + 1)
        esc = {"fingerprint": now["fingerprint"], "press": "Escape"}
        assert post(olga, {**esc, "process": wrong})[1]["outcome"] == "changed"
        assert post(olga, {**esc, "process": now["process"]})[1]["outcome"] == "typed"
        wait_for(lambda: len(_records(record)) == 3, timeout=20, what="the Escape")
        assert _records(record)[2] == {"key": "Escape"}

        audit = olga.get(f"/api/panes/{pid}/answers")["answers"]
        seen = [(r["who"], r["outcome"], r["text"], r["label"]) for r in reversed(audit)]
        assert seen[:4] == [
            ("wall", "read-only", "run the tests", None),
            ("ana", "forbidden", "run the tests", None),
            ("olga", "csrf", "run the tests", None),
            ("olga", "cross-origin", "run the tests", None),
        ], seen
        assert ("olga", "typed", "run the tests", None) in seen
        assert ("olga", "typed", lines, None) in seen
        assert ("olga", "typed", None, "key Escape") in seen
        assert [r["outcome"] for r in audit].count("typed") == 3
        assert {r["source"] for r in audit} == {"127.0.0.1"}  # from where
    finally:
        if collector.poll() is None:
            os.killpg(collector.pid, 15)
            collector.wait(20)
        tmux.kill()
