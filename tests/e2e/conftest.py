"""Fixtures for the end-to-end tests: the whole stack per test (faults leave it in an
odd state on purpose), one Chromium per module."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.proctier import spawns
from support.tools import require_tool

from .stack import Stack

os.environ.setdefault("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")


@pytest.fixture(scope="module")
@spawns
def browser():
    require_tool("chromium")
    from playwright.sync_api import sync_playwright
    from support.stack import CHROMIUM_ARGS
    from support.tools import CHROMIUM

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield b
        b.close()


@pytest.fixture(scope="session")
def db_template(tmp_path_factory) -> Path:
    """One migrated SQLite for the session; each stack starts from a copy."""
    from paneboard_server.store.migrate import upgrade

    path = tmp_path_factory.mktemp("e2e-tmpl") / "template.db"
    upgrade(f"sqlite+aiosqlite:///{path}")
    return path


@pytest.fixture
@spawns
def stack_factory(tmp_path, db_template) -> Iterator:
    require_tool("tmux", "sshd")
    made: list[Stack] = []

    def make(**kw) -> Stack:
        s = Stack(tmp_path / f"stack{len(made)}", template=db_template, **kw)
        made.append(s)
        s.tmp.mkdir(parents=True, exist_ok=True)
        return s.start()

    try:
        yield make
    finally:
        for s in made:
            s.close()


@pytest.fixture
def stack(stack_factory) -> Stack:
    return stack_factory()
