"""Two `paneboard serve` processes on one PostgreSQL, a real collector connected to A,
real tmux and the prompt-and-wait program paneboard.demo_ask: a page served by B sees
the pane's screen and answers it (watch, screen and answer relayed through PostgreSQL,
replicas.py), and two operators on the two replicas answering one prompt get exactly
one answer typed."""

from __future__ import annotations

import asyncio
import os
import shlex
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from pbserver import make_tokens
from support.forked import spawn
from support.tmux import TmuxServer
from support.tools import require_tool
from support.wait import wait_for
from support.webclient import WebClient

pytestmark = pytest.mark.postgres
PASSWORD = "correct horse battery"


def asker(filler: int = 0) -> str:
    """demo_ask's permission prompt; `filler` long lines printed first (history)."""
    path = shlex.quote(os.pathsep.join(p for p in sys.path if p))
    py = shlex.quote(sys.executable)
    cmd = f"PYTHONPATH={path} exec -a claude {py} -m paneboard.demo_ask permission --once"
    if filler:
        cmd = f'for i in $(seq {filler}); do echo "filler-$i-{"x" * 60}"; done; {cmd}'
    return f"bash -c {shlex.quote(cmd)}"


async def _operators(db: str) -> None:
    from paneboard_server.auth import accounts
    from paneboard_server.store.database import create_engine, resolve_url

    engine = create_engine(resolve_url(db))
    try:
        await accounts.add_viewer(engine, "olga", PASSWORD, operator=True)
        await accounts.add_viewer(engine, "otto", PASSWORD, operator=True)
    finally:
        await engine.dispose()


@pytest.mark.parametrize("db_url", ["postgres"], indirect=True)
def test_screen_and_answers_through_the_replica_without_the_collector(
    db_url: str, server_factory: Any, tmp_path: Path
) -> None:
    require_tool("tmux")
    tokens = asyncio.run(make_tokens(db_url, viewer_password=PASSWORD))
    asyncio.run(_operators(db_url))
    a = server_factory(db_url)
    b = server_factory(db_url)
    tmux = TmuxServer().start("work")
    env = {k: v for k, v in os.environ.items() if k != "TMUX"}
    args = ["agent", "--server", a.url, "--token", tokens["collector"]]
    args += ["--tmux-socket", tmux.name, "--local", "--allow-input"]
    collector = spawn(args, log=tmp_path / "collector.log", env=env)
    wall = WebClient(b.url, bearer=tokens["viewer"])
    try:
        wait_for(lambda: wall.get("/api/panes"), timeout=30, what="the collector's panes on B")

        def blocked_pane(filler: int = 0) -> tuple[str, str]:
            pane = tmux.new_window("work", "ask", asker(filler))
            row = wait_for(
                lambda: next(
                    (p for p in wall.get("/api/panes") if p["pane"] == pane and p["state"] == "blocked"), None
                ),
                timeout=30,
                what=f"pane {pane} blocked, as B sees it",
            )
            assert row["input"] is True
            return pane, str(row["id"])

        def screen_of(c: WebClient, pid: str) -> dict[str, Any]:
            return wait_for(
                lambda: (s := c.get(f"/api/panes/{pid}/screen?wait=2"))["answers"] and s,
                timeout=30,
                what="a screen with answers",
            )

        def text(pane: str) -> str:
            return tmux.cmd("capture-pane", "-p", "-t", pane)

        olga_b = WebClient(b.url).login("olga", PASSWORD)
        otto_a = WebClient(a.url).login("otto", PASSWORD)
        ana_b = WebClient(b.url).login("ana", PASSWORD)  # no operator role

        # 1. seen and answered through B alone
        pane, pid = blocked_pane(filler=300)
        # with 300 lines of history the screen is ~25 KB of JSON: several NOTIFY chunks
        big = wait_for(
            lambda: (
                (s := olga_b.get(f"/api/panes/{pid}/screen?wait=2&scrollback=300"))["answers"]
                and any(ln.startswith("filler-150-") for ln in s["lines"])
                and s
            ),
            timeout=30,
            what="B's screen with the history asked for",
        )
        assert len("".join(big["lines"])) > 3 * 7000
        shot = screen_of(olga_b, pid)
        assert shot["online"] is True and shot["operator"] is True and shot["state"] == "blocked"
        assert [x["id"] for x in shot["answers"]] == ["yes", "always", "no"]
        assert any("Do you want to proceed?" in ln for ln in shot["lines"])
        fp = shot["fingerprint"]
        assert screen_of(otto_a, pid)["fingerprint"] == fp  # the same screen as A holds

        def post(c: WebClient, pid: str, body: dict[str, Any]) -> tuple[int, Any]:
            return c.request("POST", f"/api/panes/{pid}/answer", body)

        assert post(ana_b, pid, {"fingerprint": fp, "answer": "yes"})[0] == 403
        assert post(olga_b, pid, {"fingerprint": "0" * 64, "answer": "yes"})[1]["outcome"] == "changed"
        assert post(olga_b, pid, {"fingerprint": fp, "answer": "nope"})[1]["outcome"] == "refused"
        assert "ANSWERED" not in text(pane)
        status, got = post(olga_b, pid, {"fingerprint": fp, "answer": "yes"})
        assert (status, got["outcome"]) == (200, "typed"), got
        assert isinstance(got["id"], int)
        wait_for(lambda: "ANSWERED yes" in text(pane), timeout=20, what="the program continues")
        # B's long poll follows the pane after the answer
        after = f"/api/panes/{pid}/screen?wait=5&after={fp}"
        later = wait_for(
            lambda: (s := olga_b.get(after))["fingerprint"] != fp and s,
            timeout=30,
            what="B's long poll returning the new screen",
        )
        assert any("ANSWERED yes" in ln for ln in later["lines"])
        assert post(olga_b, pid, {"fingerprint": fp, "answer": "yes"})[1]["outcome"] in (
            "used",
            "changed",
            "not-blocked",
        )
        audit = olga_b.get(f"/api/panes/{pid}/answers")["answers"]
        outcomes = [r["outcome"] for r in audit]
        assert outcomes.count("typed") == 1 and "forbidden" in outcomes, outcomes
        assert next(r for r in audit if r["outcome"] == "typed")["who"] == "olga"

        # 2. two operators on two replicas, one prompt: exactly one typed
        pane2, pid2 = blocked_pane()
        fp2 = screen_of(olga_b, pid2)["fingerprint"]
        assert screen_of(otto_a, pid2)["fingerprint"] == fp2
        results: dict[str, Any] = {}
        body = {"fingerprint": fp2, "answer": "no"}
        threads = [
            threading.Thread(target=lambda c=c, n=n: results.__setitem__(n, post(c, pid2, body)))
            for n, c in (("olga", olga_b), ("otto", otto_a))
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(40)
        outcomes = [r[1]["outcome"] for r in results.values()]
        assert len(outcomes) == 2 and outcomes.count("typed") == 1, outcomes
        assert {o for o in outcomes if o != "typed"} <= {"used", "changed", "not-blocked"}, outcomes
        wait_for(lambda: "ANSWERED no" in text(pane2), timeout=20, what="the second program continues")
        assert text(pane2).count("ANSWERED") == 1
        audit2 = otto_a.get(f"/api/panes/{pid2}/answers")["answers"]
        assert [r["outcome"] for r in audit2].count("typed") == 1, audit2

        # 3. no replica holds the collector any more: B answers offline (no hang), audited
        pane3, pid3 = blocked_pane()
        fp3 = screen_of(olga_b, pid3)["fingerprint"]
        os.killpg(collector.pid, 15)
        collector.wait(20)
        assert post(olga_b, pid3, {"fingerprint": fp3, "answer": "yes"})[1]["outcome"] == "offline"
        assert "ANSWERED" not in text(pane3)
        audit3 = olga_b.get(f"/api/panes/{pid3}/answers")["answers"]
        assert [r["outcome"] for r in audit3] == ["offline"], audit3
    finally:
        if collector.poll() is None:
            os.killpg(collector.pid, 15)
            collector.wait(20)
        tmux.kill()
