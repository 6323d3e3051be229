"""The fingerprint of a prompt (paneboard_protocol.prompt), on the real programs' screens.

Animation anywhere — Claude Code's blinking transcript bullet, a spinner, an elapsed
counter, a redrawn header above the prompt — leaves it as it is; a different question,
command, option, option order, offered answer set or blocked episode moves it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from paneboard_protocol.prompt import normalise, prompt_lines, starts_block
from paneboard_protocol.rules import load_rules
from paneboard_protocol.screen import offer

FIX = Path(__file__).parent / "fixtures"
RULES = load_rules(FIX / "screens" / "no-user-rules", bundled=True)
REAL = [("claude", "claude"), ("claude-run", "claude"), ("codex", "codex"), ("gemini", "gemini"),
        ("aider", "aider"), ("opencode", "opencode")]  # fmt: skip


def _read(d: str) -> tuple[str, str]:
    screen = (FIX / "real" / d / "blocked.txt").read_text(encoding="utf-8")
    title = FIX / "real" / d / "blocked.title"
    return screen, (title.read_text(encoding="utf-8").strip() if title.exists() else "")


def _fp(agent: str, screen: str, title: str = "", since: float | None = 100.0) -> str:
    m = RULES.for_agent(agent)
    assert m is not None
    match = m.match(screen, title, "")
    assert match is not None and match.state == "blocked", match
    got = offer(RULES, agent, "blocked", match.kind, screen, title, None, since)
    assert len(got.fingerprint) == 64
    return got.fingerprint


def _replace_last(screen: str, old: str, new: str) -> str:
    at = screen.rindex(old)
    return screen[:at] + new + screen[at + len(old) :]


def _region(agent: str, screen: str, title: str) -> list[str]:
    m = RULES.for_agent(agent)
    assert m is not None
    match = m.match(screen, title, "")
    assert match is not None
    rule = next(r for r in m.rules if r.id == match.rule)
    return prompt_lines(m, rule, screen, title)


def test_claude_blinking_bullet_leaves_the_fingerprint() -> None:
    """Claude Code 2.1.328 blinks the bullet of the transcript line above its prompt."""
    screen, title = _read("claude")
    assert "● Creating pb-ran" in screen
    blink = screen.replace("● Creating pb-ran", "  Creating pb-ran")
    assert blink != screen
    assert _fp("claude", blink, title) == _fp("claude", screen, title)


@pytest.mark.parametrize(("d", "agent"), REAL)
def test_animation_outside_the_prompt_leaves_it(d: str, agent: str) -> None:
    screen, title = _read(d)
    region = _region(agent, screen, title)
    lines = screen.split("\n")
    n = len(region)
    first = next(i for i in range(len(lines) - n, -1, -1) if lines[i : i + n] == region)
    assert any(ln.strip() for ln in lines[:first]), "nothing above the prompt"
    # every line above the prompt's block redrawn (spinners, clocks, headers), but for
    # the rules and box tops that delimit blocks
    moved = [
        ("⠹ 12:0" + str(i % 10) + " working " + "x" * i if ln.strip() and not starts_block(ln) else ln)
        for i, ln in enumerate(lines[:first])
    ]
    assert moved != lines[:first]
    assert _fp(agent, "\n".join(moved + lines[first:]), title) == _fp(agent, screen, title)


@pytest.mark.parametrize(("d", "agent"), REAL)
def test_the_command_is_covered(d: str, agent: str) -> None:
    screen, title = _read(d)
    assert "touch pb-ran" in "\n".join(_region(agent, screen, title))
    swapped = _replace_last(screen, "touch pb-ran", "rm -rf ~/src")
    assert _fp(agent, swapped, title) != _fp(agent, screen, title)


@pytest.mark.parametrize(
    ("d", "agent", "old", "new"),
    [
        ("claude", "claude", "Do you want to proceed?", "Do you want to delete?"),
        ("codex", "codex", "Reason: Create pb-ran?", "Reason: Remove pb-ran?"),
        ("gemini", "gemini", "Allow execution of [Shell]?", "Allow execution of [Write]?"),
        ("aider", "aider", "Run shell command?", "Run this command?"),
        ("opencode", "opencode", "# Shell command", "# Edit file"),
    ],
)
def test_the_question_is_covered(d: str, agent: str, old: str, new: str) -> None:
    screen, title = _read(d)
    assert _fp(agent, _replace_last(screen, old, new), title) != _fp(agent, screen, title)


@pytest.mark.parametrize(
    ("d", "agent", "a", "b"),
    [
        ("claude", "claude", "   3. Yes, and switch to auto mode", "   3. No, and switch to auto mode"),
        ("codex", "codex", "3. No, and tell Codex", "3. No, and ask Codex"),
        ("gemini", "gemini", "2. Allow for this session", "2. Allow for this project"),
    ],
)
def test_the_options_are_covered(d: str, agent: str, a: str, b: str) -> None:
    screen, title = _read(d)
    assert a in screen
    assert _fp(agent, screen.replace(a, b), title) != _fp(agent, screen, title)


def test_the_order_of_the_options_is_covered() -> None:
    screen, title = _read("claude")
    lines = screen.split("\n")
    i3 = next(i for i, ln in enumerate(lines) if "3. Yes, and switch" in ln)
    i4 = next(i for i, ln in enumerate(lines) if ln.strip() == "4. No")
    lines[i3], lines[i4] = lines[i4].replace("4.", "3."), lines[i3].replace("3.", "4.")
    assert _fp("claude", "\n".join(lines), title) != _fp("claude", screen, title)


def test_the_answer_set_is_covered() -> None:
    """Option 2 gone: the answers offered differ, so does the fingerprint."""
    screen, title = _read("codex")
    line = next(ln for ln in screen.split("\n") if "2. Yes, and don't ask again" in ln)
    fewer = screen.replace(line, "  2. Maybe later (m)")
    got = offer(RULES, "codex", "blocked", "permission", fewer, title)
    assert "always" not in [a.id for a in got.choices()]
    assert _fp("codex", fewer, title) != _fp("codex", screen, title)


def test_the_same_prompt_in_another_episode_is_another_fingerprint() -> None:
    screen, title = _read("claude")
    assert _fp("claude", screen, title, since=100.0) != _fp("claude", screen, title, since=200.0)


def test_spinner_status_and_elapsed_counters_inside_the_prompt_leave_it() -> None:
    screen, title = _read("codex")
    lines = screen.split("\n")
    at = next(i for i, ln in enumerate(lines) if "Would you like to run" in ln)

    def with_status(glyph: str, secs: int) -> str:
        extra = [f"{glyph} Waiting (·{secs}s)", f"{glyph} Working ({secs}s • esc to interrupt)"]
        return "\n".join(lines[: at + 1] + extra + lines[at + 1 :])

    assert _fp("codex", with_status("⠋", 3), title) == _fp("codex", with_status("⠙", 14), title)
    assert normalise("  ● Creating pb-ran") == normalise("    Creating pb-ran") == "Creating pb-ran"
    assert normalise("Working (12s · esc to interrupt)") is None
    assert normalise("sleep 10s") != normalise("sleep 99s")  # a command's own figures count
    assert normalise("rm -rf *") != normalise("rm -rf ")


def test_colours_do_not_count() -> None:
    screen, title = _read("claude")
    coloured = screen.replace("Do you want to proceed?", "\x1b[1mDo you want to proceed?\x1b[0m")
    assert _fp("claude", coloured, title) == _fp("claude", screen, title)


def test_a_screen_no_rule_reads_is_fingerprinted_whole() -> None:
    a = offer(RULES, None, "blocked", "question", "Deploy to prod? [y/N]\n⠋ 3s", None, None, 1.0)
    b = offer(RULES, None, "blocked", "question", "Deploy to prod? [y/N]\n⠙ 3s", None, None, 1.0)
    c = offer(RULES, None, "blocked", "question", "Deploy to test? [y/N]\n⠋ 3s", None, None, 1.0)
    assert a.text and a.fingerprint == b.fingerprint != c.fingerprint


def test_corpus_blocked_screens_keep_their_fingerprint_under_a_blink() -> None:
    """Every blocked screen of the corpus: its first bullet blanked above the prompt
    changes nothing; the prompt's last non-empty line changed changes it."""
    dirs = [FIX / "screens"]
    seen = 0
    for base in dirs:
        index = base / "index.jsonl"
        if not index.exists():
            continue
        for raw in index.read_text(encoding="utf-8").splitlines():
            case = json.loads(raw)
            agent = case.get("agent")
            if case.get("expected_state") != "blocked" or RULES.for_agent(agent) is None:
                continue
            screen = (base / case["file"]).read_text(encoding="utf-8")
            title = case.get("title") or ""
            if not screen.strip():
                continue  # a title says it; no screen to read
            m = RULES.for_agent(agent)
            assert m is not None
            match = m.match(screen, title, case.get("osc_progress") or "")
            if match is None or match.state != "blocked":
                continue
            seen += 1
            fp = _fp(agent, screen, title)
            last = next((ln for ln in reversed(_region(agent, screen, title)) if ln.strip()), None)
            assert last is not None, case["file"]
            assert _fp(agent, _replace_last(screen, last, last.rstrip() + " X"), title) != fp, case["file"]
    assert seen >= 5, "the corpus under tests/protocol/fixtures/screens has blocked screens"
