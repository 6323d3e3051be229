"""The whole paneboard path for end-to-end tests and the benchmark: a private tmux
server reached only through a real OpenSSH sshd on loopback, a real collector
(`paneboard agent --server ... --ssh ...`), a real `paneboard serve` on a migrated
SQLite, and (in the tests that want one) a real Chromium.

The harness itself is tests/support/stack.py; this module gives it the end-to-end
defaults (over SSH, a 30 s grace period) and the page helpers the fault tests share.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from support.stack import Paneboard

HOST = "127.0.0.1"  # the collector names an SSH host as given


class Stack(Paneboard):
    """tmux <- sshd <- collector -> server (-> browser, opened by the caller)."""

    def __init__(
        self,
        tmp: Path,
        *,
        grace: float = 30.0,
        server: dict[str, Any] | None = None,
        template: Path | None = None,
        limits: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(
            tmp, server={"grace_period": grace, **(server or {})}, template=template, ssh=True, limits=limits
        )


HEARTBEAT = Path(__file__).with_name("heartbeat.py")


class Beating:
    """A pane running heartbeat.py: its state is whatever was last `set`."""

    def __init__(self, stack: Stack, name: str, state: str = "working", msg: str = "") -> None:
        self.file = stack.tmp / f"beat-{name}"
        self.set(state, msg)
        self.pane, self.id = stack.new_pane(name, f"exec {sys.executable} {HEARTBEAT} {self.file}")

    def set(self, state: str, msg: str = "") -> None:
        tmp = self.file.with_suffix(".new")
        tmp.write_text(f"{state} {msg}")
        tmp.replace(self.file)


def open_board(browser: Any, stack: Stack) -> Any:
    """A page logged in with the read-only viewer token, its live stream connected."""
    ctx = browser.new_context()
    page = ctx.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(f"pageerror: {e}"))
    page.errors = errors  # type: ignore[attr-defined]
    page.goto(f"{stack.url}/?token={stack.viewer_token}")
    page.wait_for_selector("html[data-ready='1']")
    page.wait_for_selector("html[data-stream='live']")
    return page


def card_word(page: Any, pid: str) -> str | None:
    return page.evaluate(
        "(id) => { const w = document.querySelector(`.card[data-id='${id}'] .word`);"
        " return w ? w.textContent : null; }",
        pid,
    )


def wait_card(page: Any, pid: str, word: str, timeout: float = 20_000) -> None:
    page.wait_for_function(
        "([id, w]) => { const c = document.querySelector(`.card[data-id='${id}'] .word`);"
        " return c && c.textContent === w; }",
        arg=[pid, word],
        timeout=timeout,
    )
