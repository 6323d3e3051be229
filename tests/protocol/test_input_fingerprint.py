"""The follow-up's fingerprint (`prompt.input_fingerprint`, through `screen.offer`), on
the real programs' idle screens: text typed into the input box, a turn that ran and
finished meanwhile (another answer, another episode) move it; a blinking bullet does
not. A pane no manifest rule reads as idle takes no follow-up."""

from __future__ import annotations

from pathlib import Path

import pytest
from paneboard_protocol.rules import load_rules
from paneboard_protocol.screen import offer

FIX = Path(__file__).parent / "fixtures"
RULES = load_rules(FIX / "screens" / "no-user-rules", bundled=True)
# the real captures whose manifest reads the input prompt on the screen
IDLE = [("claude", "claude"), ("claude-run", "claude"), ("copilot", "copilot")]


def _idle(d: str) -> tuple[str, str]:
    screen = (FIX / "real" / d / "idle.txt").read_text(encoding="utf-8")
    title = FIX / "real" / d / "idle.title"
    return screen, (title.read_text(encoding="utf-8").strip() if title.exists() else "")


def _replace_last(screen: str, old: str, new: str) -> str:
    at = screen.rindex(old)
    return screen[:at] + new + screen[at + len(old) :]


@pytest.mark.parametrize(("d", "agent"), IDLE)
def test_an_idle_agent_takes_a_follow_up(d: str, agent: str) -> None:
    screen, title = _idle(d)
    for state in ("idle", "done"):
        got = offer(RULES, agent, state, None, screen, title, None, 100.0)
        assert got.follow_up and not got.text and not got.offered
        assert len(got.fingerprint) == 64


@pytest.mark.parametrize(("d", "agent"), IDLE)
def test_what_moves_the_follow_up_fingerprint(d: str, agent: str) -> None:
    screen, title = _idle(d)
    base = offer(RULES, agent, "idle", None, screen, title, None, 100.0).fingerprint
    # text typed at the terminal shows in the input box
    typed = _replace_last(screen, "❯", "❯ rm -rf build")
    moved = offer(RULES, agent, "idle", None, typed, title, None, 100.0)
    assert moved.fingerprint != base
    # a turn ran and finished: a new episode (and, on the screen, another answer)
    assert offer(RULES, agent, "done", None, screen, title, None, 160.0).fingerprint != base
    lines = screen.split("\n")
    ruled = max(i for i, ln in enumerate(lines) if ln.startswith("─"))
    above = max(i for i, ln in enumerate(lines[: ruled - 1]) if ln.strip())
    lines[above] = lines[above] + " and one more sentence of the answer"
    assert offer(RULES, agent, "idle", None, "\n".join(lines), title, None, 100.0).fingerprint != base
    # the same prompt in the same episode is the same fingerprint
    assert offer(RULES, agent, "idle", None, screen, title, None, 100.0).fingerprint == base


def test_a_blinking_bullet_does_not_move_it() -> None:
    screen = (FIX / "screens" / "claude-own__prompt_box_idle.txt").read_text(encoding="utf-8")
    base = offer(RULES, "claude", "idle", None, screen, "", None, 5.0)
    assert base.follow_up
    blink = screen.replace("● All 42 tests pass", "  All 42 tests pass")
    assert blink != screen
    assert offer(RULES, "claude", "idle", None, blink, "", None, 5.0).fingerprint == base.fingerprint


@pytest.mark.parametrize(("d", "agent"), [("aider", "aider"), ("gemini", "gemini"), ("copilot", "copilot")])
def test_typing_erased_at_the_prompt_takes_a_follow_up(d: str, agent: str) -> None:
    """The real screens after "zzq" was typed and erased with Backspace (recorded by
    tests/realagents/test_follow_up_real.py), also as the collector's capture with
    colours gives them: the spaces written over the erased letters stay (before the
    colour reset), and Aider's "diff>   " must still read as its input prompt."""
    screen = (FIX / "real" / d / "erased.txt").read_text(encoding="utf-8")
    title = FIX / "real" / d / "erased.title"
    t = title.read_text(encoding="utf-8").strip() if title.exists() else ""
    got = offer(RULES, agent, "idle", None, screen, t, None, 100.0)
    assert got.follow_up
    lines = screen.split("\n")
    last = max(i for i, ln in enumerate(lines) if ln.strip())
    lines[last] += "   "
    spaced = offer(RULES, agent, "idle", None, "\n".join(lines), t, None, 100.0)
    assert spaced.follow_up and spaced.fingerprint == got.fingerprint


@pytest.mark.parametrize(
    ("agent", "state", "screen"),
    [
        ("claude", "working", "claude-own__prompt_box_idle.txt"),  # not idle: no follow-up
        (None, "idle", "claude-own__prompt_box_idle.txt"),  # no manifest: a shell, a report
        ("claude", "idle", None),  # idle by its report, but no input prompt on the screen
    ],
)
def test_no_follow_up(agent: str | None, state: str, screen: str | None) -> None:
    text = (FIX / "screens" / screen).read_text(encoding="utf-8") if screen else "$ ls\nREADME.md\n$"
    got = offer(RULES, agent, state, None, text, "", None, 5.0)  # type: ignore[arg-type]
    assert not got.follow_up and len(got.fingerprint) == 64


def test_codex_takes_a_follow_up_at_its_composer_whatever_its_title() -> None:
    """Codex's composer is read on the screen: a collector that started after Codex
    set its title (and so never saw it) still offers the follow-up; text typed into
    the composer moves the fingerprint."""
    screen, title = _idle("codex")
    for t in (title, ""):
        got = offer(RULES, "codex", "idle", None, screen, t, None, 100.0)
        assert got.follow_up, t
    base = offer(RULES, "codex", "idle", None, screen, "", None, 100.0).fingerprint
    typed = _replace_last(screen, "› Ask Codex to do anything", "› rm -rf build")
    assert offer(RULES, "codex", "idle", None, typed, "", None, 100.0).fingerprint != base


@pytest.mark.parametrize(
    "bottom",
    [
        "• Ran ls\n  └ README.md\n",  # no composer drawn: idle by its title only
        "  Select model\n› 1. pb-model (current)\n  2. other-model\n",  # a menu under the marker
        "› 1. Yes, proceed (y)\n  2. No (esc)\n",  # a choice, even without its footer
    ],
)
def test_codex_title_alone_or_a_menu_takes_no_follow_up(bottom: str) -> None:
    """A plain title says Codex is idle whatever covers its composer: typed there, a
    follow-up would pick from a menu. Only the composer drawn on the screen takes one."""
    got = offer(RULES, "codex", "idle", None, "\n" * 10 + bottom, "work", None, 5.0)
    assert not got.follow_up


def _type_into(screen: str, row: int, text: str) -> str:
    lines = screen.split("\n")
    lines[row] = text
    return "\n".join(lines)


def _pi_editor_row(screen: str) -> int:
    """The first row of Pi's editor: the one under the last rule but one."""
    rules = [i for i, ln in enumerate(screen.split("\n")) if ln.startswith("───")]
    return rules[-2] + 1


# (capture directory, agent, where text typed into the input shows)
SCREEN_READ = [
    (
        "opencode",
        "opencode",
        lambda s: _replace_last(s, 'Ask anything… "What is the tech stack of this project?"', "rm -rf build"),
    ),
    ("pi", "pi", lambda s: _type_into(s, _pi_editor_row(s), "rm -rf build")),
    ("qwen", "qwen", lambda s: _replace_last(s, ">   Type your message or @path/to/file", "> rm -rf build")),
]


@pytest.mark.parametrize(("d", "agent", "typed"), SCREEN_READ, ids=[c[0] for c in SCREEN_READ])
def test_opencode_pi_qwen_take_a_follow_up_at_their_input(d: str, agent: str, typed) -> None:
    """Their input read on the screen (OpenCode's prompt box, Pi's editor, Qwen Code's
    input): their real idle and done screens take a follow-up whatever the title; text
    typed into the input moves the fingerprint, the same screen keeps it."""
    for stem in ("idle", "done"):
        screen = (FIX / "real" / d / f"{stem}.txt").read_text(encoding="utf-8")
        for state in ("idle", "done"):
            got = offer(RULES, agent, state, None, screen, "", None, 100.0)
            assert got.follow_up and not got.text and not got.offered, (stem, state)
    screen, title = _idle(d)
    base = offer(RULES, agent, "idle", None, screen, title, None, 100.0).fingerprint
    assert offer(RULES, agent, "idle", None, screen, title, None, 100.0).fingerprint == base
    moved = offer(RULES, agent, "idle", None, typed(screen), title, None, 100.0)
    assert moved.follow_up and moved.fingerprint != base
    assert offer(RULES, agent, "done", None, screen, title, None, 160.0).fingerprint != base


def _screen(name: str) -> str:
    return (FIX / "screens" / name).read_text(encoding="utf-8")


def _real(d: str, stem: str) -> str:
    return (FIX / "real" / d / f"{stem}.txt").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("agent", "screen"),
    [
        # OpenCode's command palette: the prompt box whole under it (a done session), or
        # cut by it (the home screen); its slash-command list over the box
        ("opencode", lambda: _screen("opencode__commands_dialog_idle.txt")),
        ("opencode", lambda: _screen("opencode__home_commands_dialog_idle.txt")),
        ("opencode", lambda: _screen("opencode__slash_list_idle.txt")),
        # a retry notice pushed "esc interrupt" out of the footer: the busy bar is left
        ("opencode", lambda: _screen("opencode__api_retry_idle.txt")),
        ("opencode", lambda: _real("opencode", "blocked")),
        ("opencode", lambda: _real("opencode", "working")),
        # Pi's /model selector in the editor's place, between rules of its own: its
        # choice marked →, or only its search field ("> ") when nothing matches; the
        # slash-command list under the editor
        ("pi", lambda: _screen("pi__model_selector_idle.txt")),
        ("pi", lambda: _screen("pi__model_selector_no_match_idle.txt")),
        ("pi", lambda: _screen("pi__slash_list_idle.txt")),
        ("pi", lambda: _real("pi-gate", "blocked")),
        ("pi", lambda: _real("pi", "working")),
        ("pi", lambda: _real("pi", "draft")),
        # Qwen Code's shell mode ("!"), /settings, the completion list under its input,
        # its confirmations and dialogs, a turn running
        ("qwen", lambda: _screen("qwen__shell_mode_idle.txt")),
        ("qwen", lambda: _screen("qwen__settings_dialog_idle.txt")),
        ("qwen", lambda: _screen("qwen__slash_suggestions_idle.txt")),  # "/mod", two entries
        ("qwen", lambda: _real("qwen", "blocked")),
        ("qwen", lambda: _real("qwen-question", "blocked")),
        ("qwen", lambda: _real("qwen-plan", "blocked")),
        ("qwen", lambda: _real("qwen", "working")),
    ],
)
def test_opencode_pi_qwen_take_none_off_their_plain_input(agent: str, screen) -> None:
    """Offered as idle (a report may say so), a dialog, a menu, a permission prompt or
    a running turn still takes no follow-up: the keys would go there, not to the input."""
    got = offer(RULES, agent, "idle", None, screen(), "", None, 5.0)
    assert not got.follow_up
