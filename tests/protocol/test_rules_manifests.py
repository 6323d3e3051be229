"""The bundled manifests classify their fixture screens (TA-2, TA-3, TA-18, RI-7, RI-9).

`fixtures/screens/index.jsonl` are real captures (herdr's test suite, see NOTICE);
`paneboard.jsonl` are screens we wrote for agents without captures. Each is checked
twice: the manifest's winning rule, and the whole classifier fed the same title,
progress and screen.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from paneboard_protocol.classifier import PaneClassifier
from paneboard_protocol.events import Progress, Title
from paneboard_protocol.rules import load_rules
from support.tools import require_tool

FIXTURES = Path(__file__).parent / "fixtures" / "screens"
BUNDLED_DIR = Path(__file__).resolve().parents[2] / "protocol" / "src" / "paneboard_protocol" / "manifests"
BUNDLED = load_rules(FIXTURES / "no-user-rules", bundled=True)
PROCESS = {m.agent: m.process[0] for m in BUNDLED.manifests}


# herdr rule id (in index.jsonl) -> the paneboard rule that must win instead, per agent.
HERDR_RULES = {
    "osc_title_working": {"claude": "title_spinner_working", "codex": "title_spinner_working"},
    "osc_title_idle": {"claude": "title_static_idle", "codex": "title_plain_idle"},
    "osc_title_blocked": {"codex": "title_action_required"},
    "osc_progress_idle": {"claude": "progress_removed_idle"},
    "trust_directory": {"codex": "trust_directory"},
    "screen_working_fallback": {"codex": "activity_line_working"},
    "live_strong_blocker": {"codex": "confirm_prompt"},
    "weak_blocker": {"codex": "yes_no_question"},
    "transcript_viewer": {"codex": "transcript_viewer"},
    "live_prompt_footer": {"devin": "prompt_idle"},
    "welcome_prompt_footer": {"devin": "prompt_idle"},
}


def _cases():
    for index in ("index.jsonl", "paneboard.jsonl"):
        for line in (FIXTURES / index).read_text(encoding="utf-8").splitlines():
            case = json.loads(line)
            if index == "index.jsonl":  # herdr's rule ids are not ours: check the state only
                case["expected_rule"] = HERDR_RULES.get(case["expected_rule"] or "", {}).get(case["agent"])
            yield pytest.param(case, id=f"TA-2-{case['file'].removesuffix('.txt')}")


def _progress_event(text: str | None) -> Progress | None:
    if not text:
        return None
    parts = text.split(";")
    percent = int(parts[2]) if len(parts) > 2 and parts[2] else None
    return Progress(0, int(parts[1]), percent)


def test_every_bundled_manifest_loads():
    assert BUNDLED.errors == ()
    named = {"claude", "codex", "gemini", "aider", "opencode", "amp", "devin", "pi", "copilot", "qwen"}
    assert named <= BUNDLED.agents


def test_every_bundled_manifest_has_fixtures_for_every_state_it_claims():
    covered: dict[str, set[str]] = {}
    for index in ("index.jsonl", "paneboard.jsonl"):
        for line in (FIXTURES / index).read_text(encoding="utf-8").splitlines():
            case = json.loads(line)
            covered.setdefault(case["agent"], set()).add(case["expected_state"])
    for m in BUNDLED.manifests:
        claimed = {r.state for r in m.rules}
        assert claimed <= covered.get(m.agent, set()), (m.id, claimed - covered.get(m.agent, set()))


@pytest.mark.parametrize("case", list(_cases()))
def test_manifest_matches_fixture(case):
    manifest = BUNDLED.for_agent(case["agent"])
    assert manifest is not None
    screen = (FIXTURES / case["file"]).read_text(encoding="utf-8")
    match = manifest.match(screen, case["title"], case["osc_progress"])
    expected = case["expected_state"]
    if case.get("expected_rule"):
        assert match is not None and match.rule == case["expected_rule"], match
    if match is None:
        assert expected == "idle"  # a known agent with no matching rule falls back to idle (RI-2)
    else:
        assert match.state == expected


@pytest.mark.parametrize("case", list(_cases()))
def test_classifier_classifies_fixture(case):
    screen = (FIXTURES / case["file"]).read_text(encoding="utf-8")
    c = PaneClassifier(BUNDLED)
    c.set_process(0, PROCESS[case["agent"]], 100)
    # A state the screen cannot contradict first, so "unknown" (hold) can be seen holding it.
    c.set_screen(1, "")
    before = c.classification(1)
    events = []
    if case["title"]:
        events.append(Title(0, case["title"], 2))
    prog = _progress_event(case["osc_progress"])
    if prog is not None:
        events.append(prog)
    c.feed(2, events)
    c.set_screen(3, screen)
    got = c.classification(10)  # past any debounce
    assert got.agent == case["agent"]
    if case["expected_state"] == "unknown":
        assert got.state == before.state  # held (transcript viewer)
    else:
        assert got.state == case["expected_state"]
        assert got.source in ("screen", "native", None)


@pytest.mark.proc
def test_bundled_manifests_ship_in_the_wheel(tmp_path):
    """hatch includes package data by default; prove it on the real wheel."""
    import subprocess
    import zipfile

    uv = require_tool("uv")
    root = Path(__file__).resolve().parents[2]
    subprocess.run(
        [uv, "build", "--package", "paneboard-protocol", "--wheel", "-o", str(tmp_path)],
        cwd=root,
        check=True,
        capture_output=True,
        timeout=180,
    )
    (wheel,) = tmp_path.glob("paneboard_protocol-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    bundled = {f"paneboard_protocol/manifests/{p.name}" for p in BUNDLED_DIR.glob("*.toml")}
    assert bundled and bundled <= names
