"""Seeing a pane's screen and answering it from the board, through the whole stack:
server, collector, real tmux and a real program that asks and waits
(paneboard.demo_ask). Every refusal types nothing; every attempt is audited."""

from __future__ import annotations

import os
import shlex
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from support.proctier import spawns
from support.stack import PASSWORD, USER, Paneboard
from support.tools import require_tool
from support.wait import wait_for
from support.webclient import WebClient


def asker(mode: str = "permission") -> str:
    path = shlex.quote(os.pathsep.join(p for p in sys.path if p))
    py = shlex.quote(sys.executable)
    argv0 = "-a claude " if mode == "permission" else ""
    return f"bash -c {shlex.quote(f'PYTHONPATH={path} exec {argv0}{py} -m paneboard.demo_ask {mode} --once')}"


@pytest.fixture
@spawns
def stack(tmp_path: Path, db_template: Path, request: pytest.FixtureRequest) -> Any:
    require_tool("tmux")
    pb = Paneboard(tmp_path, template=db_template)
    pb.start(collector=False)
    pb.tmux = __import__("support.tmux", fromlist=["TmuxServer"]).TmuxServer().start("work")
    pb.pane = pb.tmux.panes()[0]
    pb.start_collector(*getattr(request, "param", ("--allow-input",)))
    pb.cli("user", "add", "olga", "--operator", stdin=PASSWORD + "\n")
    pb.cli("user", "add", "otto", "--operator", stdin=PASSWORD + "\n")
    try:
        yield pb
    finally:
        pb.close()


def _row(pb: Paneboard, pane: str) -> dict[str, Any] | None:
    return next((p for p in pb.panes() if p["pane"] == pane), None)


def _new_pane(pb: Paneboard, command: str) -> tuple[str, str]:
    assert pb.tmux is not None
    pane = pb.tmux.new_window("work", "ask", command)
    row = wait_for(lambda: _row(pb, pane), timeout=20, what=f"pane {pane} on the server")
    return pane, str(row["id"])


def _screen_text(pb: Paneboard, pane: str) -> str:
    assert pb.tmux is not None
    return pb.tmux.cmd("capture-pane", "-p", "-t", pane)


def _blocked_screen(c: WebClient, pid: str) -> dict[str, Any]:
    return wait_for(
        lambda: (s := c.get(f"/api/panes/{pid}/screen?wait=2"))["answers"] and s, timeout=30, what="answers"
    )


def test_screen_and_answer_with_every_refusal(stack: Paneboard) -> None:
    pb = stack
    pane, pid = _new_pane(pb, asker())
    wait_for(lambda: (_row(pb, pane) or {}).get("state") == "blocked", timeout=30, what="blocked")
    assert _row(pb, pane)["input"] is True
    olga = WebClient(pb.url).login("olga", PASSWORD)
    otto = WebClient(pb.url).login("otto", PASSWORD)
    ann = WebClient(pb.url).login(USER, PASSWORD)  # a login without the operator role
    wall = WebClient(pb.url, bearer=pb.viewer_token)  # a viewer token made without --screens
    screens_token = pb.cli("token", "create", "wall2", "--viewer", "--screens")
    wall2 = WebClient(pb.url, bearer=screens_token)

    status, body = wall.request("GET", f"/api/panes/{pid}/screen")
    assert status == 403 and "--screens" in body["detail"]
    shot = _blocked_screen(olga, pid)
    assert [a["id"] for a in shot["answers"]] == ["yes", "always", "no"]
    assert shot["input"] is True and shot["operator"] is True and shot["state"] == "blocked"
    assert any("Do you want to proceed?" in ln for ln in shot["lines"])
    assert len(shot["fingerprint"]) == 64
    assert wall2.get(f"/api/panes/{pid}/screen")["operator"] is False
    fp = shot["fingerprint"]

    def post(c: WebClient, body: dict[str, Any]) -> tuple[int, Any]:
        return c.request("POST", f"/api/panes/{pid}/answer", body)

    # refusals, nothing typed
    assert post(olga, {"fingerprint": "0" * 64, "answer": "yes"}) == (200, {"outcome": "changed", "id": 1})
    assert post(ann, {"fingerprint": fp, "answer": "yes"})[0] == 403
    assert post(wall2, {"fingerprint": fp, "answer": "yes"})[0] == 403
    assert post(wall, {"fingerprint": fp, "answer": "yes"})[0] == 403
    assert (
        WebClient(pb.url)
        .login("olga", PASSWORD)
        .request(  # no CSRF token
            "POST", f"/api/panes/{pid}/answer", {"fingerprint": fp, "answer": "yes"}, {"X-CSRF-Token": "x"}
        )[0]
        == 403
    )
    bad_origin = olga.request(
        "POST",
        f"/api/panes/{pid}/answer",
        {"fingerprint": fp, "answer": "yes"},
        {"Origin": "http://evil.test"},
    )
    assert bad_origin[0] == 403
    assert post(olga, {"fingerprint": fp, "answer": "nope"})[1]["outcome"] == "refused"
    assert post(olga, {"fingerprint": fp, "text": "yes"})[1]["outcome"] == "refused"
    # a newline goes only into a follow-up: to a blocked prompt it is refused (and audited);
    # any other control character is no text at all
    assert post(olga, {"fingerprint": fp, "text": "a\nb"})[1]["outcome"] == "refused"
    assert post(olga, {"fingerprint": fp, "text": "a\x1bb"})[0] == 422
    assert "Do you want to proceed?" in _screen_text(pb, pane) and "ANSWERED" not in _screen_text(pb, pane)

    # two operators on one prompt: one is typed, the other is told
    results: dict[str, Any] = {}
    threads = [
        threading.Thread(
            target=lambda c=c, n=n: results.__setitem__(n, post(c, {"fingerprint": fp, "answer": "yes"}))
        )
        for n, c in (("olga", olga), ("otto", otto))
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    outcomes = [r[1]["outcome"] for r in results.values()]
    assert outcomes.count("typed") == 1, outcomes
    assert {o for o in outcomes if o != "typed"} <= {"used", "changed", "not-blocked"}, outcomes
    wait_for(lambda: "ANSWERED yes" in _screen_text(pb, pane), timeout=20, what="the program continues")
    # a replay of the typed answer
    assert post(olga, {"fingerprint": fp, "answer": "yes"})[1]["outcome"] in (
        "used",
        "changed",
        "not-blocked",
    )
    wait_for(lambda: (_row(pb, pane) or {}).get("state") != "blocked", timeout=20, what="moved on")
    later = olga.get(f"/api/panes/{pid}/screen?wait=5&after={fp}")
    assert later["fingerprint"] != fp and any("ANSWERED yes" in ln for ln in later["lines"])
    assert post(olga, {"fingerprint": later["fingerprint"], "answer": "yes"})[1]["outcome"] in (
        "not-blocked",
        "refused",
    )
    # nothing was typed twice: the program, idle now, would echo a stray key after its box
    wait_for(lambda: "Done (turn 1)" in _screen_text(pb, pane), timeout=20, what="the turn ends")
    tail = _screen_text(pb, pane).rstrip().split("\n")
    assert tail[-1].startswith("╰"), tail[-3:]

    audit = olga.get(f"/api/panes/{pid}/answers")["answers"]
    got = [(a["who"], a["outcome"]) for a in reversed(audit)]
    # every refused attempt is a row saying who and why, those refused for their
    # credentials (a viewer token, a wrong CSRF token, a cross-origin POST) included
    assert got[:9] == [
        ("olga", "changed"),
        ("ann", "forbidden"),
        ("wall2", "read-only"),
        ("wall", "read-only"),
        ("olga", "csrf"),
        ("olga", "cross-origin"),
        ("olga", "refused"),
        ("olga", "refused"),
        ("olga", "refused"),  # the two lines to a one-line question
    ], got
    assert sum(1 for a in audit if a["outcome"] == "typed") == 1
    typed = next(a for a in audit if a["outcome"] == "typed")
    assert typed["fingerprint"] == fp and typed["answer"] == "yes" and typed["label"] == "Yes"
    assert "Do you want to proceed?" in (typed["prompt"] or "")
    assert {a["who"] for a in audit} >= {"olga", "otto", "ann"}
    assert len(audit) == 13
    # the ledger's block names who answered it from paneboard
    blocks = olga.get("/api/blocks?limit=100")["blocks"]
    mine = [b for b in blocks if str(b["pane_id"]) == pid]
    assert mine and mine[0]["answered_by"] == typed["who"] and mine[0]["end_t"] is not None, mine
    # a token without --screens sees the audit, not the screen's text
    # (the prompt, the answers' labels and the text typed are all screen text)
    shown = wall.get(f"/api/panes/{pid}/answers")["answers"]
    assert all(a["prompt"] is None and a["label"] is None and a["text"] is None for a in shown)
    assert any(a["label"] == "Yes" for a in wall2.get(f"/api/panes/{pid}/answers")["answers"])


@pytest.mark.parametrize("stack", [()], indirect=True)
def test_without_allow_input_the_board_says_so_and_nothing_is_typed(stack: Paneboard) -> None:
    pb = stack
    pane, pid = _new_pane(pb, asker())
    wait_for(lambda: (_row(pb, pane) or {}).get("state") == "blocked", timeout=30, what="blocked")
    assert _row(pb, pane)["input"] is False
    olga = WebClient(pb.url).login("olga", PASSWORD)
    shot = _blocked_screen(olga, pid)
    assert shot["input"] is False
    status, body = olga.request(
        "POST", f"/api/panes/{pid}/answer", {"fingerprint": shot["fingerprint"], "answer": "yes"}
    )
    assert (status, body["outcome"]) == (200, "disabled")
    assert "ANSWERED" not in _screen_text(pb, pane)


def test_free_text_lookalikes_are_typed_literally(stack: Paneboard) -> None:
    pb = stack
    pane, pid = _new_pane(pb, asker("question"))
    wait_for(lambda: (_row(pb, pane) or {}).get("state") == "blocked", timeout=30, what="blocked")
    olga = WebClient(pb.url).login("olga", PASSWORD)
    shot = wait_for(lambda: (s := olga.get(f"/api/panes/{pid}/screen?wait=2"))["text"] and s, timeout=30)
    text = "Enter C-c Escape ; \\; -l -- $(touch x) `id` 'q' \"dq\" ~!"
    status, body = olga.request(
        "POST", f"/api/panes/{pid}/answer", {"fingerprint": shot["fingerprint"], "text": text}
    )
    assert (status, body["outcome"]) == (200, "typed")
    wait_for(lambda: "GOT " in _screen_text(pb, pane), timeout=20, what="the line read")
    got = _screen_text(pb, pane).split("GOT ", 1)[1].split("\n", 1)[0].strip()
    assert got == repr(text)
    audit = olga.get(f"/api/panes/{pid}/answers")["answers"]
    assert audit[0]["text"] == text and audit[0]["outcome"] == "typed"


def test_scrollback_on_demand_and_an_idle_pane_offers_nothing(stack: Paneboard) -> None:
    pb = stack
    assert pb.tmux is not None
    pb.tmux.send(pb.pane, "seq 1 120")
    wait_for(lambda: "120" in _screen_text(pb, pb.pane), timeout=20, what="seq printed")
    pid = str(_row(pb, pb.pane)["id"])
    olga = WebClient(pb.url).login("olga", PASSWORD)
    plain = olga.get(f"/api/panes/{pid}/screen?wait=3")
    assert plain["answers"] == [] and plain["text"] is False
    assert len(plain["lines"]) == plain["height"]
    more = wait_for(
        lambda: (
            (s := olga.get(f"/api/panes/{pid}/screen?scrollback=50&wait=5&since={plain['rev']}"))
            and len(s["lines"]) > s["height"]
            and s
        ),
        timeout=20,
        what="a screen with scroll-back",
    )
    assert len(more["lines"]) == more["height"] + 50
    assert more["fingerprint"] == plain["fingerprint"]  # the visible rows decide it
    status, body = olga.request(
        "POST", f"/api/panes/{pid}/answer", {"fingerprint": plain["fingerprint"], "text": "x"}
    )
    assert (status, body["outcome"]) == (200, "not-blocked")


@pytest.fixture
@spawns
def ssh_stack(tmp_path: Path, db_template: Path) -> Any:
    require_tool("tmux", "sshd")
    pb = Paneboard(tmp_path, template=db_template, ssh=True)
    pb.start(collector=False)  # over SSH: tmux and sshd, no collector yet
    pb.start_collector("--allow-input")
    pb.cli("user", "add", "olga", "--operator", stdin=PASSWORD + "\n")
    try:
        yield pb
    finally:
        pb.close()


def test_over_ssh_keys_and_shell_lookalikes_are_typed_literally(ssh_stack: Paneboard) -> None:
    """Through an SSH collector each tmux command goes through a remote shell: what the
    operator types must reach the pane byte for byte, never as shell or tmux syntax."""
    pb = ssh_stack
    pane, pid = _new_pane(pb, asker("question"))
    wait_for(lambda: (_row(pb, pane) or {}).get("state") == "blocked", timeout=30, what="blocked")
    olga = WebClient(pb.url).login("olga", PASSWORD)
    shot = wait_for(lambda: (s := olga.get(f"/api/panes/{pid}/screen?wait=2"))["text"] and s, timeout=30)
    text = "$(touch /tmp/pb-pwned) `id` ; \\; 'it''s' \"$HOME\" Enter C-c & | > x"
    status, body = olga.request(
        "POST", f"/api/panes/{pid}/answer", {"fingerprint": shot["fingerprint"], "text": text}
    )
    assert (status, body["outcome"]) == (200, "typed")
    wait_for(lambda: "GOT " in _screen_text(pb, pane), timeout=20, what="the line read")
    got = _screen_text(pb, pane).split("GOT ", 1)[1].split("\n", 1)[0].strip()
    assert got == repr(text)
    assert not Path("/tmp/pb-pwned").exists()
