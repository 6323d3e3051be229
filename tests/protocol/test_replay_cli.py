"""`paneboard replay` and `paneboard rules`, called in this process (support/clirun.py).

Every `traces/*.jsonl` is a hand-written trace for one spec rule (its id leads the file
name) with the output we expect beside it in `*.expected`; a `*.rules/` directory beside
a trace is passed as `--rules` (TA-17), otherwise an empty one, so only bundled
manifests apply.
"""

from __future__ import annotations

import json
import os
from importlib import resources
from pathlib import Path

import pytest
from support.clirun import CliResult, run_cli

TRACES = Path(__file__).parent / "traces"
#: Every manifest the package ships: `rules check` and `rules list` must count each.
BUNDLED_MANIFESTS = sum(
    p.name.endswith(".toml") for p in resources.files("paneboard_protocol.manifests").iterdir()
)


def paneboard(*args: str, stdin: bytes = b"", env_extra: dict[str, str] | None = None) -> CliResult[bytes]:
    env = {k: v for k, v in os.environ.items() if k != "PANEBOARD_RULES"}
    env.update(env_extra or {})
    return run_cli(*args, stdin=stdin, env=env)


def _lines(data: bytes) -> list[dict]:
    return [json.loads(line) for line in data.decode("utf-8").splitlines() if line.strip()]


@pytest.mark.parametrize("trace", sorted(TRACES.glob("*.jsonl")), ids=lambda p: p.stem.replace("__", "-"))
def test_trace_replays_as_expected(trace: Path, tmp_path: Path):
    rules = trace.with_suffix(".rules")
    rules_dir = rules if rules.is_dir() else tmp_path
    got = paneboard("replay", str(trace), "--rules", str(rules_dir))
    assert got.returncode == 0, got.stderr.decode()
    assert got.stderr == b""
    expected = _lines(trace.with_suffix(".expected").read_bytes())
    assert _lines(got.stdout) == expected


def test_every_spec_rule_has_a_trace():
    names = {p.stem.split("__")[0] for p in TRACES.glob("*.jsonl")}
    wanted = {f"P7501-{i}" for i in range(1, 23)} | {f"TA-{i}" for i in range(1, 20)}
    wanted |= {f"RI-{i}" for i in range(1, 10)} | {"S3"}
    assert wanted <= names, sorted(wanted - names)


def test_bad_lines_are_reported_with_their_number_and_skipped(tmp_path: Path):
    trace = tmp_path / "t.jsonl"
    trace.write_text(
        "\n".join(
            [
                '{"t": 1, "output": "\\u001b]7501;state=working:app=x\\u0007"}',
                "not json",
                '{"t": 0.5}',
                '{"t": 2, "colour": "red"}',
                '{"t": 3, "output_b64": "!!"}',
                '{"t": 4, "output": "\\u001b]7501;state=clear\\u0007"}',
            ]
        )
        + "\n"
    )
    got = paneboard("replay", str(trace), "--rules", str(tmp_path))
    assert got.returncode == 1
    err = got.stderr.decode().splitlines()
    assert err == [
        f"paneboard replay: {trace}:2: not JSON: Expecting value (column 1)",
        f"paneboard replay: {trace}:3: time goes backwards (0.5 after 1)",
        f"paneboard replay: {trace}:4: unknown key 'colour' (known: chain, group, observable, output, "
        "output_b64, pid, process, screen, seen, t)",
        f"paneboard replay: {trace}:5: 'output_b64' is not valid base64",
    ]
    assert [(o["t"], o["state"]) for o in _lines(got.stdout)] == [(1, "working"), (4, None)]


def test_output_split_across_lines_is_one_stream(tmp_path: Path):
    """F-4 through replay: a report cut over two output lines still arrives (one decoder)."""
    trace = tmp_path / "t.jsonl"
    trace.write_text(
        '{"t": 1, "output": "\\u001b]7501;sta"}\n{"t": 2, "output": "te=blocked:app=x\\u0007"}\n'
    )
    got = paneboard("replay", str(trace), "--rules", str(tmp_path))
    assert _lines(got.stdout) == [
        {"t": 2, "agent": "x", "state": "blocked", "kind": None, "source": "protocol", "msg": None}
    ]


def test_raw_capture_at_one_time_stamp(tmp_path: Path):
    raw = tmp_path / "pane.log"
    raw.write_bytes(
        b"$ claude\r\n\x1b]7501;state=working:app=claude-code\x07 thinking...\r\n"
        b"\x1b]7501;state=blocked:app=claude-code:id=t:kind=permission\x1b\\"
    )
    got = paneboard("replay", "--raw", str(raw), "--rules", str(tmp_path))
    assert got.returncode == 0, got.stderr
    assert _lines(got.stdout) == [
        {
            "t": 0,
            "agent": "claude",
            "state": "blocked",
            "kind": "permission",
            "source": "protocol",
            "msg": None,
        }
    ]


def test_raw_with_process(tmp_path: Path):
    raw = tmp_path / "pane.log"
    raw.write_bytes(b"\x1b]0;\xe2\xa0\x8b busy\x07")
    got = paneboard("replay", "--raw", str(raw), "--process", "claude", "--rules", str(tmp_path))
    assert _lines(got.stdout) == [
        {"t": 0, "agent": "claude", "state": "working", "kind": None, "source": "native", "msg": None}
    ]


@pytest.mark.parametrize(
    ("args", "code", "needle"),
    [
        ((), 2, "give a TRACE.jsonl or --raw FILE"),
        (("/nonexistent/trace.jsonl",), 1, "cannot read /nonexistent/trace.jsonl"),
        (("--raw", "/nonexistent/raw"), 1, "cannot read /nonexistent/raw"),
        (("a.jsonl", "--process", "claude"), 2, "--process only goes with --raw"),
        (("--bogus",), 2, "unrecognized arguments"),
    ],
)
def test_replay_usage_errors_are_one_line(args, code, needle, tmp_path: Path):
    got = paneboard("replay", *args, "--rules", str(tmp_path))
    assert got.returncode == code
    err = got.stderr.decode().strip().splitlines()
    assert len(err) == 1 and needle in err[0], err


def test_replay_reads_stdin(tmp_path: Path):
    got = paneboard("replay", "-", "--rules", str(tmp_path), stdin=b'{"t": 5, "process": "codex"}\n')
    assert _lines(got.stdout) == [
        {"t": 5, "agent": "codex", "state": "idle", "kind": None, "source": None, "msg": None}
    ]


def test_replay_uses_PANEBOARD_RULES(tmp_path: Path):
    (tmp_path / "x.toml").write_text('id = "mine"\nagent = "mine"\nprocess = ["mytool"]\n')
    got = paneboard(
        "replay", "-", stdin=b'{"t": 1, "process": "mytool"}\n', env_extra={"PANEBOARD_RULES": str(tmp_path)}
    )
    assert [o["agent"] for o in _lines(got.stdout)] == ["mine"]


def test_rules_check_reports_file_line_reason(tmp_path: Path):
    (tmp_path / "ok.toml").write_text('id = "claude-code"\nagent = "claude"\nprocess = ["claude"]\n')
    (tmp_path / "bad.toml").write_text(
        'id = "x"\nagent = "x"\n[[rules]]\nstate = "sleeping"\nscreen = ["a"]\n'
    )
    (tmp_path / "worse.toml").write_text("id = \n")
    got = paneboard("rules", "check", str(tmp_path))
    assert got.returncode == 1
    out = got.stdout.decode().splitlines()
    assert out[0].startswith(f"{tmp_path / 'bad.toml'}:4: rule 1: unknown state 'sleeping'")
    assert out[1].startswith(f"{tmp_path / 'worse.toml'}:1: bad TOML")
    assert len(out) == 2


def test_rules_check_clean_directory(tmp_path: Path):
    got = paneboard("rules", "check", str(tmp_path))
    assert got.returncode == 0 and got.stdout.decode().startswith(
        f"ok: {BUNDLED_MANIFESTS} manifests in force (0 from"
    )


def test_rules_check_missing_directory():
    got = paneboard("rules", "check", "/nonexistent/rules")
    assert got.returncode == 2
    assert got.stderr.decode().strip() == "paneboard rules check: /nonexistent/rules: not a directory"


def test_rules_list_shows_the_winner_per_id(tmp_path: Path):
    (tmp_path / "my-claude.toml").write_text('id = "claude-code"\nagent = "claude"\nprocess = ["claude"]\n')
    got = paneboard("rules", "list", "--rules", str(tmp_path))
    assert got.returncode == 0
    rows = {line.split()[0]: line.split() for line in got.stdout.decode().splitlines()[1:]}
    assert rows["claude-code"][2] == "user" and rows["claude-code"][-1] == str(tmp_path / "my-claude.toml")
    assert rows["codex"][2] == "bundled" and rows["codex"][-1] == "bundled:codex.toml"
    assert len(rows) == BUNDLED_MANIFESTS


def test_rules_without_subcommand():
    got = paneboard("rules")
    assert got.returncode == 2 and "give a subcommand" in got.stderr.decode()


def test_explain_names_the_rule_behind_a_screen_state(tmp_path: Path):
    trace = TRACES / "TA-2__screen_rule.jsonl"
    got = paneboard("replay", "--explain", str(trace), "--rules", str(tmp_path))
    assert [o["rule"] for o in _lines(got.stdout)] == [None, "claude-code/permission_prompt"]


def test_a_group_line_chooses_the_agent_behind_a_wrapper_and_explain_says_why():
    trace = b"\n".join(
        json.dumps(o).encode()
        for o in [
            {"t": 1, "group": [[10, 1, "npm exec claude"], [11, 10, "sh -c claude"], [12, 11, "claude"]]},
            {"t": 2, "output": "\u001b]7501;state=working:app=claude-code\u0007"},
            {"t": 3, "group": [[10, 1, "npm exec claude"]]},  # claude left; npm still in front
        ]
    )
    got = paneboard("replay", "-", "--explain", stdin=trace)
    assert got.returncode == 0, got.stderr.decode()
    lines = _lines(got.stdout)
    want = [("claude", "idle"), ("claude", "working"), (None, None)]
    assert [(x["agent"], x["state"]) for x in lines] == want
    assert "`claude` (pid 12)" in lines[0]["why"] and "2 levels below" in lines[0]["why"]
    assert lines[2]["why"] is None
    # without --explain, the same lines carry no why
    assert "why" not in _lines(paneboard("replay", "-", stdin=trace).stdout)[0]


def test_explain_says_in_words_what_decided_and_why_a_report_was_discarded():
    """The shell's report, held while its command runs, said as the board says it; a
    report with a state the spec does not know is discarded, and said so, with why."""
    trace = b"\n".join(
        json.dumps(o).encode()
        for o in [
            {"t": 1, "process": None, "pid": 4242},
            {"t": 2, "output": "\u001b]7501;state=working:msg=U3luY2luZw==\u001b\\"},
            {"t": 3, "process": "rsync", "pid": 4300, "chain": [4242, 1]},
            {"t": 4, "output": "\u001b]7501;state=wroking\u001b\\"},
        ]
    )
    got = paneboard("replay", "-", "--explain", stdin=trace)
    assert got.returncode == 0, got.stderr.decode()
    lines = _lines(got.stdout)
    assert [(x.get("state"), x.get("decided")) for x in lines if "discarded" not in x] == [
        ("working", "reported by the shell (pid 4242), the process in front"),
    ]
    bad = [x for x in lines if "discarded" in x]
    assert len(bad) == 1 and bad[0]["t"] == 4 and bad[0]["discarded"] == "osc7501"
    assert "wroking" in bad[0]["reason"], bad
    # the report stays discarded: nothing else changed, and without --explain nothing is said
    plain = _lines(paneboard("replay", "-", stdin=trace).stdout)
    assert [x["state"] for x in plain] == ["working"] and all("discarded" not in x for x in plain)


@pytest.mark.parametrize(
    "group",
    [[], [[1, 2]], [[1, 2, 3]], [[-1, 0, "x"]], [[True, 0, "x"]], "bash", [[1, 0, "x"]] * 1025],
)
def test_a_bad_group_is_a_bad_line(group):
    got = paneboard("replay", "-", stdin=json.dumps({"t": 1, "group": group}).encode())
    assert got.returncode == 1 and b"'group' must be" in got.stderr
