"""Fixtures for the real agent CLIs: each installed (or found in the cache) once per session,
and a fresh isolated stage (tmux in its own network namespace, model-API stand-in,
collector) per test."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from harness import Stage, _netns_of
from install import AGENTS, InstallError, install


@pytest.fixture(scope="session")
def agent_cli() -> object:
    """agent_cli("claude") -> the installed program's path; a failed install FAILS the test."""
    cache: dict[str, Path] = {}

    def get(name: str) -> Path:
        if name not in cache:
            try:
                cache[name] = install(AGENTS[name])
            except InstallError as e:
                pytest.fail(f"cannot install the real {name} CLI: {e}", pytrace=False)
        return cache[name]

    return get


@pytest.fixture
def stage(tmp_path: Path) -> Iterator[Stage]:
    if shutil.which("tmux") is None:
        pytest.fail("tmux is not installed (scripts/test's bootstrap installs it)", pytrace=False)
    st = Stage(tmp_path)
    netns = st.tmux.netns()
    try:
        yield st
    finally:
        st.close()
    # Nothing a real CLI started may outlive the test (Gemini CLI ignores tmux's hang-up).
    left = [p for p in os.listdir("/proc") if p.isdigit() and netns and _netns_of(p) == netns]
    assert not left, f"processes left in the test's network namespace: {left}"
