"""Follow-ups and Esc with the real agents, as the board sends them (the collector
in-process with `--allow-input`, watched as a page watches it: harness.Page): text typed
at the terminal between the page's read and the send makes the follow-up come back
`changed` with nothing typed; a follow-up of two lines sent on the screen the page holds
reaches the model-API stand-in as the next user message, whole; Esc, pressed while the
process the page saw is in front, interrupts the working turn.

Aider and Copilot CLI do not stop a turn at one Esc (Aider reads no keys while it waits
for the model; Copilot CLI 1.0.102 wants a second Esc right behind the first, and the
board sends one key at a time): their interrupt is Ctrl-C, the other key the board sends
only to the process the page saw, so theirs is checked with Ctrl-C."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pytest
from harness import Page, Stage
from install import AGENTS
from paneboard_protocol.rules import load_rules
from test_aider import FLAGS as AIDER_FLAGS
from test_aider import aider_home
from test_claude import claude_env, claude_home
from test_codex import codex_home
from test_copilot import copilot_env
from test_copilot import ready as copilot_ready
from test_gemini import gemini_home
from test_opencode import opencode_env
from test_pi import VERSION as PI_VERSION
from test_pi import pi_env
from test_qwen import qwen_env
from test_qwen import start as qwen_start

pytestmark = [pytest.mark.realagent, pytest.mark.tmux, pytest.mark.timeout(240)]

TASK = "Please do\nPBTASK now"
#: the key that stops a working turn, where it is not Esc
INTERRUPT = {"aider": "C-c", "copilot": "C-c"}


def _until(pred: Any, timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while not (v := pred()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)
    return v


def _texts(obj: Any) -> list[str]:
    """Every string in a request body (Anthropic messages, OpenAI responses input)."""
    if isinstance(obj, str):
        return [obj]
    if isinstance(obj, dict):
        return [t for v in obj.values() for t in _texts(v)]
    if isinstance(obj, list):
        return [t for v in obj for t in _texts(v)]
    return []


def _user_text(body: dict[str, Any]) -> str:
    """The request's text that carries the task word: the user's message."""
    return next(t for t in _texts(body) if "PBTASK" in t).replace("\r\n", "\n").replace("\r", "\n")


def open_idle(agent: str, stage: Stage, agent_cli: Any, tmp_path: Path) -> None:
    """Start the real agent as its own test starts it, idle at its prompt."""
    cli = agent_cli(agent)
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    if agent == "claude":
        claude_home(home, work)
        stage.open(f"{cli} --permission-mode default", claude_env(home, stage.api.url), work)
        stage.wait_screen(lambda s: "? for shortcuts" in s, 90, "the prompt")
    elif agent == "codex":
        ch = codex_home(home, work, stage.api.url)
        env = {"HOME": str(home), "CODEX_HOME": str(ch), "PB_API_KEY": "pb-dummy", "TERM": "xterm-256color"}
        stage.open(f"{cli} --no-daemon", env, work)
        stage.wait_screen(lambda s: "›" in s and "for shortcuts" in s, 90, "Codex's prompt")
    elif agent == "gemini":
        gemini_home(home)
        env = {
            "HOME": str(home),
            "TERM": "xterm-256color",
            "GEMINI_API_KEY": "pb-dummy",
            "GOOGLE_GEMINI_BASE_URL": stage.api.url,
            "GEMINI_CLI_TRUST_WORKSPACE": "true",
            "NO_UPDATE_NOTIFIER": "1",
        }
        stage.open(str(cli), env, work)
        stage.wait_screen(lambda s: "Type your message" in s, 90, "Gemini's prompt")
    elif agent == "aider":
        aider_home(home)
        env = {
            "HOME": str(home),
            "TERM": "xterm-256color",
            "OPENAI_API_KEY": "pb-dummy",
            "OPENAI_API_BASE": stage.api.url + "/text-tools/v1",
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        }
        stage.open(f"{cli} {AIDER_FLAGS}", env, work)
        version = AGENTS["aider"].version
        stage.wait_screen(lambda s: f"Aider v{version}" in s and "diff>" in s, 90, "Aider's prompt")
    elif agent == "copilot":  # in a folder it already trusts
        stage.open(str(cli), copilot_env(tmp_path, stage.api.url, trusted=work), work)
        stage.wait_screen(copilot_ready, 120, "Copilot's prompt")
    elif agent == "opencode":
        home.mkdir()
        stage.open(str(cli), opencode_env(home, stage.api.url), work)
        stage.wait_screen(lambda s: "Ask anything" in s and "1.18.33" in s, 120, "OpenCode's prompt")
    elif agent == "pi":
        stage.open(str(cli), pi_env(tmp_path, stage.api.url), work)
        stage.wait_screen(lambda s: f"pi v{PI_VERSION}" in s and "pb-model" in s, 120, "Pi's editor")
    else:
        qwen_start(stage, cli, qwen_env(tmp_path, stage.api.url), work)
    stage.wait_class({"agent": agent, "state": "idle"}, 90, "idle at start")


#: what the agent draws while its turn runs, where it is not Claude Code's and Codex's
BUSY = {
    "opencode": ("esc interrupt", "esc again to interrupt"),
    "pi": ("Working...",),
    "qwen": ("esc to cancel",),
}
_SGR = re.compile(r"\x1b\[[0-9;:]*m")
OPENCODE = load_rules(None).for_agent("opencode")


def _opencode_second_escape(page: Page, stage: Stage, process: str) -> None:
    """OpenCode interrupts a turn only on a second Esc: the first makes its footer say
    "esc again to interrupt" while the turn works on. That screen must still read as
    working (not idle, which would offer a follow-up into the running turn); the
    operator, seeing it, presses Esc again while the same process is in front."""
    again = _until(
        lambda: next(
            (
                m
                for m in reversed(page.side)
                if m["type"] == "screen"
                and any("esc again to interrupt" in _SGR.sub("", ln) for ln in m["lines"])
            ),
            None,
        ),
        30,
        "OpenCode's 'esc again to interrupt'",
    )
    # the manifest itself reads that screen as working (the state the page holds may
    # still be the debounced one from before the Esc)
    screen = "\n".join(_SGR.sub("", ln) for ln in again["lines"])
    assert OPENCODE is not None
    match = OPENCODE.match(screen, "", "")
    assert match is not None and match.state == "working", match
    assert again["state"] == "working" and not again["follow_up"], again["state"]
    assert not stage.api.held(2)
    assert page.send("esc-again", again["fingerprint"], press="Escape", process=process) == "typed"


def _send_on_latest(page: Page, name: str, pred: Any, **kind: Any) -> list[str]:
    """As a page does: send on the latest screen; if the program redrew in between
    (`changed`, nothing typed), the operator sees the new screen and sends again."""
    outcomes: list[str] = []
    for i in range(4):
        shot = _until(
            lambda: next((m for m in reversed(page.side) if m["type"] == "screen" and pred(m)), None),
            30,
            name,
        )
        outcomes.append(page.send(f"{name}{i}", shot["fingerprint"], **kind))
        if outcomes[-1] != "changed":
            break
        time.sleep(1.0)
    return outcomes


@pytest.mark.parametrize("agent", ["claude", "codex", "gemini", "aider", "copilot", "opencode", "pi", "qwen"])
def test_real_agent_follow_up_interleave_and_escape(
    agent: str, stage: Stage, agent_cli, tmp_path: Path
) -> None:
    open_idle(agent, stage, agent_cli, tmp_path)

    page = Page(stage)
    try:
        _until(
            lambda: any(u.key.pane == stage.pane and u.state == "idle" for u in page.sink.updates),
            30,
            "the in-process collector sees it idle",
        )
        page.watch()
        seen = _until(
            lambda: next((m for m in reversed(page.side) if m["type"] == "screen" and m["follow_up"]), None),
            30,
            "a screen that takes a follow-up",
        )
        assert seen["input"] and seen["process"] and seen["state"] == "idle"
        # 1. a person types at the terminal between the page's read and the send
        stage.keys("zzq", literal=True)
        stage.wait_screen(lambda s: "zzq" in s, 20, "the terminal's typing")
        assert page.send("interleaved", seen["fingerprint"], text="Please do PBTASK now") == "changed"
        time.sleep(1.0)
        assert not stage.api.held(1) and "PBTASK" not in stage.screen()  # nothing typed
        stage.keys("BSpace", "BSpace", "BSpace")
        stage.wait_screen(lambda s: "zzq" not in s, 20, "the terminal's typing removed")
        stage.save(agent, "erased")

        # 2. a follow-up of two lines, on the screen the page holds: the next user message
        def clean(m: dict[str, Any]) -> bool:
            return bool(m["follow_up"]) and not any("zzq" in ln for ln in m["lines"])

        outcomes = _send_on_latest(page, "follow", clean, text=TASK)
        assert outcomes[-1] == "typed" and set(outcomes[:-1]) <= {"changed"}, outcomes
        stage.api.wait_held(1)
        turn = [r for r in stage.api.requests() if "PBTASK" in json.dumps(r["body"])]
        assert turn, "the follow-up reached the model API"
        said = _user_text(turn[-1]["body"])
        assert TASK in said, said

        # 3. Esc (or the agent's interrupt) while the turn works: the process the page saw is in front
        key = INTERRUPT.get(agent, "Escape")
        stage.wait_class({"agent": agent, "state": "working"}, 60, "working")
        working = _until(
            lambda: next(
                (m for m in reversed(page.side) if m["type"] == "screen" and m["state"] == "working"), None
            ),
            30,
            "a working screen",
        )
        assert working["process"] == seen["process"]
        wrong = str(int(working["process"]) + 1)
        assert page.send("esc-wrong", working["fingerprint"], press=key, process=wrong) == "changed"
        assert page.send("esc", working["fingerprint"], press=key, process=working["process"]) == "typed"
        if agent == "opencode":
            _opencode_second_escape(page, stage, working["process"])
        # the model's answer is still held at the stand-in: only the key can end the turn
        # (Claude Code puts the interrupted message back into its input box)
        stage.wait_class({"agent": agent, "state": "idle"}, 60, "idle after the interrupt")
        assert not stage.api.held(2)
        assert not any(busy in stage.screen() for busy in BUSY.get(agent, ("esc to interrupt",)))
    finally:
        stage.api.release_all()
        page.close()
