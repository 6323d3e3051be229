"""The bundled manifests on what tmux really captures (`capture-pane -p`), not on files.

tmux trims trailing blanks, pads the screen with empty rows and re-renders wide
characters; the collector hands exactly that to the classifier. Each fixture screen is
printed in a real tmux pane on a private socket, captured, and classified.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest
from paneboard_protocol.classifier import PaneClassifier
from paneboard_protocol.events import Progress, Title
from paneboard_protocol.rules import load_rules
from support.proctier import spawns
from support.tools import require_tool

pytestmark = [pytest.mark.tmux]


@pytest.fixture(autouse=True)
def _tmux_installed() -> None:
    require_tool("tmux")


FIXTURES = Path(__file__).parent / "fixtures" / "screens"
RULES = load_rules(FIXTURES / "no-user-rules")
PROCESS = {m.agent: m.process[0] for m in RULES.manifests}


def _cases() -> list:
    out = []
    for index in ("index.jsonl", "paneboard.jsonl"):
        for line in (FIXTURES / index).read_text(encoding="utf-8").splitlines():
            case = json.loads(line)
            if (FIXTURES / case["file"]).read_text(encoding="utf-8").strip() and case[
                "expected_state"
            ] != "unknown":
                out.append(case)
    return out


CASES = _cases()


@pytest.fixture(scope="module")
@spawns
def tmux_server(tmp_path_factory):
    sock = tmp_path_factory.mktemp("tmux") / "sock"
    base = ["tmux", "-S", str(sock), "-f", "/dev/null"]
    subprocess.run(
        [*base, "new-session", "-d", "-x", "160", "-y", "50", "-s", "keep", "sleep 600"], check=True
    )
    try:
        yield base
    finally:
        subprocess.run([*base, "kill-server"], check=False, capture_output=True)


def _last_drawn(rows: list[str]) -> int:
    return max((i for i, ln in enumerate(rows) if ln.strip()), default=-1)


def capture(base: list[str], fixture: Path) -> str:
    """Print the fixture in a fresh window and return what capture-pane shows once it is all there.

    All there: the capture's last drawn row is the fixture's last one, at the same row
    (every fixture fits the pane, so nothing scrolls). Its text alone is not enough: a
    box's bottom edge also ends a box drawn inside it, higher up."""
    rows = fixture.read_text(encoding="utf-8").splitlines()
    at = max(i for i, ln in enumerate(rows) if ln.strip())
    last = rows[at].strip()
    target = subprocess.run(
        [*base, "new-window", "-d", "-P", "-F", "#{pane_id}", f"cat '{fixture}'; exec sleep 600"],
        check=True,
        capture_output=True,
        text=True,
        env={"LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "PATH": "/usr/bin:/bin"},
    ).stdout.strip()
    deadline = time.monotonic() + 30
    while True:
        text = subprocess.run(
            [*base, "capture-pane", "-p", "-t", target], check=True, capture_output=True
        ).stdout.decode("utf-8", "replace")
        drawn = text.splitlines()
        if _last_drawn(drawn) == at and last[-20:] in drawn[at]:
            break
        assert time.monotonic() < deadline, f"{fixture.name} not all drawn:\n{text}"
        time.sleep(0.05)
    subprocess.run([*base, "kill-pane", "-t", target], check=False)
    return text


@pytest.mark.parametrize("case", CASES, ids=[f"TA-2-RI-9-{c['file'].removesuffix('.txt')}" for c in CASES])
def test_manifest_classifies_the_tmux_capture(case, tmux_server):
    screen = capture(tmux_server, FIXTURES / case["file"])
    c = PaneClassifier(RULES)
    c.set_process(0, PROCESS[case["agent"]], 1)
    events = []
    if case["title"]:
        events.append(Title(0, case["title"], 2))
    if case["osc_progress"]:
        parts = case["osc_progress"].split(";")
        events.append(Progress(0, int(parts[1]), int(parts[2]) if parts[2] else None))
    c.feed(1, events)
    c.set_screen(2, screen)
    got = c.classification(10)
    assert got.state == case["expected_state"], screen
