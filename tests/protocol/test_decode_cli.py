"""`paneboard decode` on real files and pipes: in this process, and as a subprocess where
the process matters (pipes, a closed descriptor, privileges, the locale)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from decoder_helpers import SPEC_EXAMPLE, agent_var, osc, r7501
from support.clirun import CliResult, run_cli

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "samples" / "pane-output.log"


def run(*args: str, stdin: bytes = b"") -> CliResult[bytes]:
    """In this process: what decode prints and exits with does not need a process of its
    own; the tests of pipes, file descriptors, privileges and locale below start one."""
    return run_cli("decode", *args, stdin=stdin)


def run_process(*args: str, stdin: bytes, env: dict[str, str]) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "paneboard.cli", "decode", *args],
        input=stdin,
        env=os.environ | env,
        capture_output=True,
        timeout=60,
        check=False,
    )


def lines(out: bytes) -> list[dict]:
    return [json.loads(line) for line in out.decode().splitlines()]


PARTS: list[tuple[bytes, dict | None]] = [
    (b"\x1b[1mhello\x1b[0m\r\n", None),
    (r7501("?"), {"type": "probe", "terminator": "bel"}),
    (
        SPEC_EXAMPLE,
        {
            "type": "status",
            "id": None,
            "state": "blocked",
            "kind": "permission",
            "app": "terraform",
            "msg": "Apply 3 to add, 1 to change, 0 to destroy?",
            "title": None,
            "progress": None,
            "fields": {
                "state": "blocked",
                "kind": "permission",
                "app": "terraform",
                "msg": "QXBwbHkgMyB0byBhZGQsIDEgdG8gY2hhbmdlLCAwIHRvIGRlc3Ryb3k/",
            },
        },
    ),
    (r7501("state=clear:id=a"), {"type": "clear", "id": "a"}),
    (
        agent_var("v1;agent=claude;state=working;session=s;ts=7"),
        {
            "type": "agent",
            "var": "THINKTERM_AGENT",
            "version": 1,
            "agent": "claude",
            "state": "working",
            "session": "s",
            "ts": 7,
            "ended": False,
        },
    ),
    (osc("1337;SetUserVar=branch=bWFpbg=="), {"type": "uservar", "var": "branch", "value": "main"}),
    (osc("9;4;1;25"), {"type": "progress", "state": 1, "percent": 25}),
    (osc("2;build"), {"type": "title", "title": "build", "code": 2}),
    (osc("133;D;2"), {"type": "prompt", "mark": "D", "exit": 2}),
    (b"\x1bc", {"type": "reset"}),
    (b"plain \x1b[K text", None),
]
DATA = b"".join(part for part, _ in PARTS)
EXPECTED = []
_pos = 0
for _part, _want in PARTS:
    if _want is not None:
        # `type` and `offset` come first in every object.
        EXPECTED.append({"type": _want["type"], "offset": _pos} | _want)
    _pos += len(_part)
BAD = r7501("state=paused")


def test_decode_file_prints_every_type(tmp_path):
    log = tmp_path / "pane.log"
    log.write_bytes(DATA)
    result = run(str(log))
    assert result.returncode == 0, result.stderr
    assert result.stderr == b""
    assert lines(result.stdout) == EXPECTED
    assert all(list(obj)[:2] == ["type", "offset"] for obj in lines(result.stdout))


def test_decode_stdin_dash_and_default():
    assert lines(run("-", stdin=DATA).stdout) == EXPECTED
    assert lines(run(stdin=DATA).stdout) == EXPECTED


def test_decode_all_adds_rejected_lines():
    got = lines(run("--all", stdin=DATA + BAD).stdout)
    assert got[:-1] == EXPECTED
    assert got[-1] == {
        "type": "rejected",
        "offset": len(DATA),
        "proto": "osc7501",
        "reason": "unknown state 'paused'",
    }
    assert list(got[-1]) == ["type", "offset", "proto", "reason"]
    assert lines(run(stdin=DATA + BAD).stdout) == EXPECTED


def test_decode_all_reports_unterminated_tail():
    got = lines(run("--all", stdin=b"\x1b]7501;state=working").stdout)
    assert got == [
        {
            "type": "rejected",
            "offset": 0,
            "proto": "osc7501",
            "reason": "OSC 7501 unterminated at end of input; not sent",
        }
    ]


@pytest.mark.proc
def test_decode_output_escapes_hostile_text_keeps_the_rest_readable():
    title = "\u202eevil\u009b2J\u200b\U000e0041 ✳ Claude — ok"
    # A process of its own: the C locale's ASCII stdio is the point.
    result = run_process(stdin=osc(("2;" + title).encode()), env={"LC_ALL": "C", "PYTHONIOENCODING": ""})
    out = result.stdout.decode("utf-8")
    for bad in ("\u202e", "\u009b", "\u200b", "\U000e0041"):
        assert bad not in out
    assert "✳ Claude — ok" in out and "\\u202e" in out and "\\udb40\\udc41" in out
    assert lines(result.stdout)[0]["title"] == title


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["/nonexistent/pane.log"], b"No such file or directory"),
        (["/"], b"is a directory"),
    ],
)
def test_decode_bad_input_one_line_exit_1(args, needle):
    result = run(*args)
    assert result.returncode == 1
    assert result.stdout == b""
    assert result.stderr.count(b"\n") == 1 and needle in result.stderr
    assert b"Traceback" not in result.stderr


@pytest.mark.proc
def test_decode_unreadable_file(tmp_path):
    log = tmp_path / "secret.log"
    log.write_bytes(DATA)
    log.chmod(0)
    args = [sys.executable, "-m", "paneboard.cli", "decode", str(log)]
    if os.geteuid() == 0:
        # Root reads every file; without the DAC-override capabilities it cannot.
        assert shutil.which("setpriv"), "util-linux's setpriv is needed to test this as root"
        args = ["setpriv", "--bounding-set=-dac_override,-dac_read_search", *args]
    result = subprocess.run(args, capture_output=True, timeout=60, check=False)
    assert result.returncode == 1 and b"Permission denied" in result.stderr
    assert result.stderr.count(b"\n") == 1


def test_decode_read_error_is_one_line():
    # Reading /proc/self/mem at offset 0 fails with EIO: a real read error mid-stream.
    result = run("/proc/self/mem")
    assert result.returncode == 1
    assert result.stderr.count(b"\n") == 1 and b"cannot read /proc/self/mem" in result.stderr


@pytest.mark.parametrize("args", [["--bogus"], ["a", "b"]])
def test_decode_usage_error_exit_2(args):
    result = run(*args)
    assert result.returncode == 2
    assert result.stderr.count(b"\n") == 1 and b"paneboard decode:" in result.stderr


def test_decode_help():
    result = run("--help")
    assert result.returncode == 0 and b"--all" in result.stdout


@pytest.mark.proc
def test_decode_broken_pipe_no_traceback():
    reports = r7501("state=working:app=x") * 200_000  # ~5 MB, far more than a pipe buffer
    proc = subprocess.Popen(
        [sys.executable, "-m", "paneboard.cli", "decode", "-"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    head = subprocess.Popen(["head", "-n", "2"], stdin=proc.stdout, stdout=subprocess.PIPE)
    assert proc.stdout is not None
    proc.stdout.close()
    try:
        proc.stdin.write(reports)
    except BrokenPipeError:
        pass
    finally:
        proc.stdin.close()
    out, _ = head.communicate(timeout=60)
    err = proc.stderr.read()
    proc.stderr.close()
    assert proc.wait(timeout=60) == 0
    assert len(out.splitlines()) == 2
    assert b"Traceback" not in err and err == b""


def test_decode_streams_large_input_in_chunks(tmp_path):
    # 40 MB of TUI noise with one report at the very end: constant memory, correct offset.
    log = tmp_path / "big.log"
    noise = b"\x1b[38;5;12mline of output\x1b[0m\r\n" * 1000
    with log.open("wb") as f:
        for _ in range(1100):
            f.write(noise)
        f.write(r7501("state=done"))
    result = run(str(log))
    assert result.returncode == 0
    (event,) = lines(result.stdout)
    assert event["state"] == "done" and event["offset"] == len(noise) * 1100


def test_bundled_sample_decodes():
    result = run(str(SAMPLE), "--all")
    assert result.returncode == 0
    types = [e["type"] for e in lines(result.stdout)]
    for t in ("probe", "status", "agent", "progress", "title", "prompt", "rejected"):
        assert t in types, t


def test_bundled_sample_matches_its_generator():
    import runpy

    module = runpy.run_path(str(REPO / "samples" / "make_sample.py"))
    assert module["build"]() == SAMPLE.read_bytes(), "run `uv run python samples/make_sample.py`"


def test_bundled_sample_has_the_expected_story():
    events = lines(run(str(SAMPLE), "--all").stdout)
    states = [(e["type"], e.get("state")) for e in events if e["type"] in ("status", "agent")]
    assert ("status", "blocked") in states and states[-1] == ("agent", "idle")
    wrapped = [e for e in events if e["type"] == "status" and e.get("title") == "Applying plan"]
    assert len(wrapped) == 1
    assert SAMPLE.read_bytes()[wrapped[0]["offset"] : wrapped[0]["offset"] + 7] == b"\x1bPtmux;"
    assert [e["reason"] for e in events if e["type"] == "rejected"] == ["unknown state 'paused'"]


@pytest.mark.proc
@pytest.mark.parametrize(
    ("fd", "needle"), [(0, b"standard input: it is closed"), (1, b"standard output is closed")]
)
def test_decode_closed_std_stream_is_one_line(fd, needle):
    result = subprocess.run(
        [sys.executable, "-m", "paneboard.cli", "decode", "-" if fd == 0 else str(SAMPLE)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE if fd == 0 else None,
        stderr=subprocess.PIPE,
        preexec_fn=lambda: os.close(fd),
        timeout=60,
        check=False,
    )
    assert result.returncode == 1
    assert result.stderr.count(b"\n") == 1 and needle in result.stderr
