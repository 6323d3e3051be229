"""Fixtures for the collector's tests: a real tmux server and a real sshd."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from support import sshd as sshd_support
from support.proctier import spawns
from support.tmux import TmuxServer
from support.tools import require_tool


@pytest.fixture
@spawns
def tmux_server() -> Iterator[TmuxServer]:
    require_tool("tmux")
    server = TmuxServer().start()
    try:
        yield server
    finally:
        server.kill()


@pytest.fixture
@spawns
def sshd(tmp_path: Path) -> Iterator[sshd_support.Sshd]:
    require_tool("sshd")
    server = sshd_support.Sshd(tmp_path / "sshd").start()
    try:
        yield server
    finally:
        server.stop()
