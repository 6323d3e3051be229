"""The bundled manifests on screens captured from the REAL agent CLIs.

`fixtures/real/<agent>/<state>.txt` are `tmux capture-pane -p` of each state the
real-agent tests (tests/realagents/) drive the program through, recorded with
`PANEBOARD_RECORD_REAL=1`; `<state>.title` is the last title the program had set
then, if any. `claude-run` is Claude Code under `paneboard run` (the same screens,
captured on another run). Each is classified as the collector would without any
report (screen rules only): the manifests must be right on what the programs really
draw. A wrong answer on a real screen is a strict xfail naming the gap.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from paneboard_protocol.classifier import PaneClassifier
from paneboard_protocol.events import Title
from paneboard_protocol.rules import load_rules

REAL = Path(__file__).parent / "fixtures" / "real"
BUNDLED = load_rules(Path(__file__).parent / "fixtures" / "screens" / "no-user-rules", bundled=True)

# directory -> (agent, process name, program version the capture came from)
PROGRAMS = {
    "claude": ("claude", "claude", "2.1.328"),
    "claude-run": ("claude", "claude", "2.1.328"),
    "codex": ("codex", "codex", "0.171.0"),
    "aider": ("aider", "aider", "0.86.2"),
    "gemini": ("gemini", "gemini", "0.61.0"),
    "opencode": ("opencode", "opencode", "1.18.33"),
    "pi": ("pi", "pi", "0.73.1"),
    "pi-gate": ("pi", "pi", "0.73.1"),  # Pi with its example extension permission-gate.ts
    "copilot": ("copilot", "copilot", "1.0.102"),
    "copilot-prompts": ("copilot", "copilot", "1.0.102"),  # a file write, ask_user, a refusal
    "qwen": ("qwen", "qwen", "0.24.4"),
    "qwen-edit": ("qwen", "qwen", "0.24.4"),  # its write_file confirmation
    "qwen-question": ("qwen", "qwen", "0.24.4"),  # its ask_user_question dialog
    "qwen-plan": ("qwen", "qwen", "0.24.4"),  # its plan approval (plan mode)
    "qwen-auto": ("qwen", "qwen", "0.24.4"),  # its default auto mode, the judge unavailable
    "qwen-mcp": ("qwen", "qwen", "0.24.4"),  # an MCP server's tool
    "qwen-de": ("qwen", "qwen", "0.24.4"),  # its UI in German: the title says blocked
}

# (directory, capture) -> (state, kind) the screen means
EXPECTED = {
    "idle": ("idle", None),
    "working": ("working", None),
    "blocked": ("blocked", "permission"),
    "answered": ("working", None),
    "done": ("idle", None),
    "draft": ("working", None),  # Pi: a draft typed while it works, under the loader
    "trust": ("blocked", "question"),  # Copilot: trust this folder?
    "ask": ("blocked", "question"),  # Copilot: its ask_user tool's form
    "erased": ("idle", None),  # text typed at its input prompt, then erased
}
OVERRIDES = {
    ("aider", "blocked"): ("blocked", "question"),
    ("pi-gate", "blocked"): ("blocked", "question"),
    ("qwen-question", "blocked"): ("blocked", "question"),
    ("qwen-plan", "blocked"): ("blocked", "question"),
}

# (directory, capture) -> the gap, for a real screen the manifests get wrong (a strict xfail)
GAPS: dict[tuple[str, str], str] = {}


def _cases():
    for d in sorted(p for p in REAL.iterdir() if p.is_dir()):
        for f in sorted(d.glob("*.txt")):
            key = (d.name, f.stem)
            marks = [pytest.mark.xfail(strict=True, reason=GAPS[key])] if key in GAPS else []
            yield pytest.param(d.name, f.stem, marks=marks, id=f"{d.name}-{f.stem}")


def test_every_real_capture_is_known():
    dirs = {p.name for p in REAL.iterdir() if p.is_dir()}
    assert dirs == set(PROGRAMS), dirs
    for d in dirs:
        assert {f.stem for f in (REAL / d).glob("*.txt")} <= set(EXPECTED), d


@pytest.mark.parametrize(("program", "capture"), list(_cases()))
def test_manifest_on_real_capture(program: str, capture: str) -> None:
    agent, process, version = PROGRAMS[program]
    screen = (REAL / program / f"{capture}.txt").read_text(encoding="utf-8")
    title_file = REAL / program / f"{capture}.title"
    c = PaneClassifier(BUNDLED)
    c.set_process(0, process, 100)
    if title_file.exists():
        c.feed(1, [Title(0, title_file.read_text(encoding="utf-8"), 2)])
    c.set_screen(2, screen)
    got = c.classification(10)  # past any debounce
    want = OVERRIDES.get((program, capture), EXPECTED[capture])
    assert (got.agent, got.state, got.kind) == (agent, *want), (version, got)
    # idle may also be the fallback of a known agent no rule matched (RI-2: source none)
    assert got.source in ("screen", "native") or (got.state == "idle" and got.source is None), got
