"""One rule for a tool the suite needs: a missing one FAILS the test, with the reason.

`./scripts/test` (scripts/lib/bootstrap.sh) installs tmux, OpenSSH, Chromium, zsh and
uv, so a missing tool means a broken set-up, not a test that does not apply; skipping
would hide it and let a green run test less than it claims.
"""

from __future__ import annotations

import os
import shutil
from typing import NoReturn

import pytest

from support.sshd import SSHD

CHROMIUM = "/usr/bin/chromium"

# tool -> (how to find it, the Debian package that provides it)
_PACKAGES = {
    "tmux": "tmux",
    "sshd": "openssh-server",
    "ssh": "openssh-client",
    "ssh-keygen": "openssh-client",
    "chromium": "chromium",
    "zsh": "zsh",
    "bash": "bash",
    "uv": "uv (pip install uv)",
    "promtool": "prometheus",
}


def missing(what: str, reason: str) -> NoReturn:
    """Fail the running test because `what` is not there (`reason` says how we know)."""
    pytest.fail(f"{what} is missing: {reason} (./scripts/test installs it)", pytrace=False)


def _find(name: str) -> str | None:
    if name == "sshd":
        return SSHD if os.path.exists(SSHD) else None
    if name == "chromium":
        return CHROMIUM if os.path.exists(CHROMIUM) else None
    return shutil.which(name)


def require_tool(*names: str) -> str:
    """Fail the test unless every tool named is installed; return the first one's path.

    `sshd` also needs `ssh-keygen` (the tests make throw-away keys)."""
    found: list[str] = []
    for name in names:
        wanted = [name, "ssh-keygen"] if name == "sshd" else [name]
        for tool in wanted:
            path = _find(tool)
            if path is None:
                package = _PACKAGES.get(tool, tool)
                missing(tool, f"not found (install {package})")
            found.append(path)
    return found[0]
