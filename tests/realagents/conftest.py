"""Fixtures for the real agent CLIs: each installed (or found in the cache) once per session,
and a fresh isolated stage (tmux in its own network namespace, model-API stand-in,
collector) per test."""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from harness import Stage, _netns_of
from install import AGENTS, InstallError, install
from support.proctier import spawns
from support.sshd import Sshd
from support.tools import require_tool


@pytest.fixture(scope="session")
@spawns
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
@spawns
def stage(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Stage]:
    """The stage, its collector local; parametrized indirectly with "ssh", the collector
    reaches the same tmux server through a real sshd on loopback."""
    if shutil.which("tmux") is None:
        pytest.fail("tmux is not installed (scripts/test's bootstrap installs it)", pytrace=False)
    with contextlib.ExitStack() as stack:
        where: tuple[str, ...] = ("--local",)
        if getattr(request, "param", "local") == "ssh":
            require_tool("sshd")
            sshd = Sshd(tmp_path / "sshd").start()
            stack.callback(sshd.stop)
            where = tuple(sshd.ssh_args())
        st = Stage(tmp_path, where)
        netns = st.tmux.netns()
        try:
            yield st
        finally:
            st.close()
    # Nothing a real CLI started may outlive the test (Gemini CLI ignores tmux's hang-up).
    left = [p for p in os.listdir("/proc") if p.isdigit() and netns and _netns_of(p) == netns]
    assert not left, f"processes left in the test's network namespace: {left}"
