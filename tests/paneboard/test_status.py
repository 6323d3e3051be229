"""`paneboard status`: the pure formatting, then against a real server and real tmux."""

from __future__ import annotations

import json

import pytest
from support.stack import Paneboard, osc7501
from support.tmux import TmuxServer, printf_cmd

from paneboard import status
from paneboard.status import NO_ANSWER, NOTHING_WAITS, SOMETHING_WAITS, Row


def _row(state: str | None, since: float | None = 100.0, **kw: str | None) -> Row:
    fields: dict = dict(host="b1", session="s", window="1:w", pane="%1", agent="claude", kind=None, msg=None)
    fields.update(kw)
    return Row(state=state, since=since, **fields)


def test_the_short_form_counts_what_needs_a_look_and_prints_no_pane_text() -> None:
    rows = [_row("blocked"), _row("blocked"), _row("working"), _row("idle"), _row(None), _row("done")]
    assert status.short(rows) == "⚠2 ✓1 ⟳1"
    assert status.short([_row("idle"), _row(None)]) == ""
    evil = [_row("blocked", agent="#(touch /tmp/x)", msg="#(rm -rf ~)", session="#[fg=red]")]
    assert status.short(evil) == "⚠1"


def test_the_exit_status_says_whether_something_waits() -> None:
    assert status.exit_status([_row("working"), _row("done")]) == NOTHING_WAITS
    assert status.exit_status([_row("working"), _row("blocked")]) == SOMETHING_WAITS
    assert status.exit_status([]) == NOTHING_WAITS


def test_the_table_puts_the_longest_wait_first_and_cleans_what_panes_wrote() -> None:
    rows = [
        _row("working", since=50, pane="%1"),
        _row("blocked", since=90, pane="%2", kind="permission", msg="Run it?\x1b]0;pwned\x07"),
        _row("blocked", since=10, pane="%3", msg="x" * 200),
    ]
    lines = status.table(rows, now=100).splitlines()
    assert lines[0].split() == ["HOST", "SESSION", "WINDOW", "PANE", "AGENT", "STATE", "FOR", "MESSAGE"]
    assert [line.split()[3] for line in lines[1:]] == ["%3", "%2", "%1"]
    assert "1m" in lines[1] and "10s" in lines[2]
    assert "\x1b" not in lines[2] and "\x07" not in lines[2] and "Run it??]0;pwned?" in lines[2]
    assert "blocked:permission" in lines[2]
    assert lines[1].endswith("…") and len(lines[1]) < 200


def test_rows_from_the_api_keep_only_what_is_shown() -> None:
    api = [
        {
            "host": "b",
            "session": "s",
            "window": "0:w",
            "pane": "%0",
            "agent": None,
            "state": "idle",
            "kind": None,
            "msg": None,
            "since": "not a number",
            "evidence": {"x": 1},
        }
    ]
    assert status.rows_from_api(api) == [
        Row(
            host="b",
            session="s",
            window="0:w",
            pane="%0",
            agent=None,
            state="idle",
            kind=None,
            msg=None,
            since=None,
        )
    ]


@pytest.mark.parametrize(
    ("argv", "env", "says"),
    [
        ([], {}, "give --server URL"),
        (["--server", "http://127.0.0.1:9"], {}, "PANEBOARD_VIEWER_TOKEN"),
        (["--server", "ftp://x"], {"PANEBOARD_VIEWER_TOKEN": "t"}, "http:// or https://"),
        (
            ["--server", "http://127.0.0.1:9", "--tmux-socket", "x"],
            {"PANEBOARD_VIEWER_TOKEN": "t"},
            "--local",
        ),
        (["--local", "--settle", "0"], {}, "--settle"),
    ],
)
def test_what_cannot_be_answered_is_one_line_and_exit_2(argv, env, says, monkeypatch, capsys) -> None:
    monkeypatch.delenv("PANEBOARD_SERVER", raising=False)
    monkeypatch.delenv("PANEBOARD_VIEWER_TOKEN", raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    assert status.main(argv) == NO_ANSWER
    err = capsys.readouterr().err
    assert err.startswith("paneboard status: ") and says in err and err.count("\n") == 1


@pytest.mark.tmux
def test_from_a_server_with_a_viewer_token(tmp_path, monkeypatch, capsys) -> None:
    pb = Paneboard(tmp_path).start()
    try:
        pb.report(state="blocked", kind="question", msg="Deploy to prod?")
        pb.wait_state("blocked")
        monkeypatch.setenv("PANEBOARD_VIEWER_TOKEN", pb.viewer_token)

        assert status.main(["--server", pb.url]) == SOMETHING_WAITS
        table = capsys.readouterr().out
        assert "blocked:question" in table and "Deploy to prod?" in table

        assert status.main(["--server", pb.url, "--short"]) == SOMETHING_WAITS
        assert capsys.readouterr().out == "⚠1\n"

        assert status.main(["--server", pb.url, "--json"]) == SOMETHING_WAITS
        [pane] = json.loads(capsys.readouterr().out)
        assert pane["state"] == "blocked" and pane["msg"] == "Deploy to prod?"

        pb.report(state="done", msg="Deployed")
        pb.wait_state("done")
        assert status.main(["--server", pb.url, "--short"]) == NOTHING_WAITS
        assert capsys.readouterr().out == "✓1\n"

        monkeypatch.setenv("PANEBOARD_VIEWER_TOKEN", "pbv_not-a-token")
        assert status.main(["--server", pb.url]) == NO_ANSWER
        assert "refused the token" in capsys.readouterr().err
    finally:
        pb.close()


@pytest.mark.tmux
def test_from_this_machines_tmux(capsys) -> None:
    tmux = TmuxServer().start("work")
    try:
        # A program that says it waits, and says so again now and then, as agents do.
        report = printf_cmd(osc7501(state="blocked", kind="question", msg="Which branch?"))
        tmux.send(tmux.panes()[0], f"while :; do {report}; sleep 0.5; done")
        assert (
            status.main(["--local", "--tmux-socket", tmux.name, "--settle", "4", "--json"]) == SOMETHING_WAITS
        )
        [pane] = json.loads(capsys.readouterr().out)
        assert (pane["session"], pane["state"], pane["msg"]) == ("work", "blocked", "Which branch?")
    finally:
        tmux.kill()
