"""The real Claude Code answered the way the board answers it: its real permission
prompt is watched (`capture-pane -e`), offered with the manifest's answers, and the
"Yes" of an operator is typed by the collector (screens.py) only after its checks, on
a fresh capture; the approved command runs. A stale fingerprint first types nothing."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from harness import Page, Stage, choice_mislabels
from test_claude import claude_env, claude_home

pytestmark = [pytest.mark.realagent, pytest.mark.tmux, pytest.mark.timeout(180)]


def _until(pred: Any, timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while not (v := pred()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)
    return v


def test_real_claude_code_permission_answered_by_the_collector(
    stage: Stage, agent_cli, tmp_path: Path
) -> None:
    claude = agent_cli("claude")
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    claude_home(home, work)
    stage.open(f"{claude} --permission-mode default", claude_env(home, stage.api.url), work)
    stage.wait_class({"agent": "claude", "state": "idle"}, 90, "idle at start")
    stage.wait_screen(lambda s: "? for shortcuts" in s, 30, "the prompt")

    page = Page(stage)
    sink, side, answer = page.sink, page.side, page.answer
    try:
        stage.press_until(
            ["Please do PBTASK now"],
            lambda: "PBTASK" in stage.screen(),
            "typed",
            tries=1,
            each=20,
            literal=True,
        )
        stage.press_until(["Enter"], lambda: stage.api.held(1), "the prompt sent")
        stage.api.release(1)
        stage.wait_screen(lambda s: "Do you want to proceed?" in s, 60, "the permission prompt")
        _until(
            lambda: any(u.key.pane == stage.pane and u.state == "blocked" for u in sink.updates[-3:]),
            30,
            "the in-process collector sees it blocked",
        )
        page.watch()
        shot = _until(
            lambda: next((m for m in reversed(side) if m["type"] == "screen" and m["answers"]), None),
            30,
            "a screen with answers",
        )
        assert [a["id"] for a in shot["answers"]][:1] == ["yes"] and shot["answers"][-1]["id"] == "no"
        # each numbered button is labelled by the very choice its key selects
        assert shot["answers"][0]["option"] == 1 and shot["answers"][-1]["option"] is None
        assert choice_mislabels(shot["lines"], shot["answers"]) == []
        assert shot["input"] and "Do you want to proceed?" in (shot["prompt"] or "")

        assert answer("stale", "0" * 64) == "changed"
        time.sleep(1.0)  # Claude Code ignores keys for a moment after it shows a dialog
        assert not (work / "pb-ran").exists()
        # As a page does: answer the latest screen; if the program redrew in between
        # ("changed", nothing typed), the operator sees the new screen and taps again.
        outcomes = []
        for i in range(4):
            latest = next(m for m in reversed(side) if m["type"] == "screen" and m["answers"])
            outcomes.append(answer(f"yes{i}", latest["fingerprint"]))
            if outcomes[-1] != "changed":
                break
            time.sleep(1.0)
        assert outcomes[-1] == "typed" and set(outcomes[:-1]) <= {"changed"}, outcomes
        _until(lambda: stage.api.held(2), 30, "the approved command's result sent to the model")
        assert (work / "pb-ran").exists(), "the approved command ran"
        stage.api.release(2)
        stage.wait_screen(lambda s: "All done: pb-ran exists." in s, 60, "the final answer")
    finally:
        page.close()


def test_real_claude_code_first_tap_and_a_swapped_prompt_refused(
    stage: Stage, agent_cli, tmp_path: Path
) -> None:
    """Claude Code asks two different commands in turn. The fingerprint the page got
    when the first prompt arrived is typed on the first tap after a human pause (its
    transcript bullet blinks meanwhile: the prompt fingerprint does not move); the
    same fingerprint sent while the second prompt is up types nothing (`changed`);
    the second prompt's own fingerprint is typed on its first tap too."""
    claude = agent_cli("claude")
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    claude_home(home, work)
    (stage.api.root / "commands.json").write_text('["touch pb-one", "touch pb-two"]')
    stage.open(f"{claude} --permission-mode default", claude_env(home, stage.api.url), work)
    stage.wait_class({"agent": "claude", "state": "idle"}, 90, "idle at start")
    stage.wait_screen(lambda s: "? for shortcuts" in s, 30, "the prompt")

    page = Page(stage)
    side, answer = page.side, page.answer

    def prompt_screen(command: str) -> dict[str, Any]:
        """The first screen the page gets with `command`'s prompt and its answers."""
        return _until(
            lambda: next(
                (
                    m
                    for m in side
                    if m["type"] == "screen" and m["answers"] and any(command in ln for ln in m["lines"])
                ),
                None,
            ),
            60,
            f"a screen asking {command}",
        )

    try:
        stage.press_until(
            ["Please do PBTASK now"],
            lambda: "PBTASK" in stage.screen(),
            "typed",
            tries=1,
            each=20,
            literal=True,
        )
        stage.press_until(["Enter"], lambda: stage.api.held(1), "the prompt sent")
        page.watch()
        stage.api.release(1)
        first = prompt_screen("touch pb-one")
        n_before = len(side)
        time.sleep(3.0)  # a person reads the prompt (and Claude Code ignores keys at first)
        redrawn = [m for m in side[n_before:] if m["type"] == "screen"]
        assert all(m["fingerprint"] == first["fingerprint"] for m in redrawn if m["answers"]), (
            "the fingerprint moved while the prompt stayed"
        )
        print(f"screens re-sent during the pause: {len(redrawn)}")
        assert answer("one", first["fingerprint"]) == "typed"
        _until(lambda: (work / "pb-one").exists(), 30, "the first command ran")

        _until(lambda: stage.api.held(2), 30, "the first result sent to the model")
        stage.api.release(2)
        second = prompt_screen("touch pb-two")
        assert second["fingerprint"] != first["fingerprint"]
        time.sleep(3.0)
        # the answer made for the first prompt, tapped while the second is up
        assert answer("stale", first["fingerprint"]) == "changed"
        time.sleep(1.0)
        assert not (work / "pb-two").exists(), "nothing typed for a swapped prompt"
        assert answer("two", second["fingerprint"]) == "typed"
        _until(lambda: (work / "pb-two").exists(), 30, "the second command ran")
        _until(lambda: stage.api.held(3), 30, "the second result sent to the model")
        stage.api.release(3)
        stage.wait_screen(lambda s: "All done: pb-ran exists." in s, 60, "the final answer")
    finally:
        page.close()
