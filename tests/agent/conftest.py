"""Fixtures for the collector's tests: a real tmux server and a real sshd."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from support import sshd as sshd_support
from support.tmux import TmuxServer


@pytest.fixture
def tmux_server() -> Iterator[TmuxServer]:
    if shutil.which("tmux") is None:
        pytest.fail("tmux is not installed (scripts/lib/bootstrap.sh installs it)")
    server = TmuxServer().start()
    try:
        yield server
    finally:
        server.kill()


@pytest.fixture
def sshd(tmp_path: Path) -> Iterator[sshd_support.Sshd]:
    if not sshd_support.available():
        pytest.fail("OpenSSH sshd is not installed (apt-get install openssh-server)")
    server = sshd_support.Sshd(tmp_path / "sshd").start()
    try:
        yield server
    finally:
        server.stop()
