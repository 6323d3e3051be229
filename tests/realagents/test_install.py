"""The installer fails loudly (never skips) when a CLI cannot be installed or does not run."""

from __future__ import annotations

import os
from pathlib import Path

import install
import pytest
from install import AgentCli, InstallError


def test_missing_npm_fails_with_the_reason(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PANEBOARD_AGENTS_CACHE", str(tmp_path))
    monkeypatch.setattr(install.shutil, "which", lambda name: None)
    cli = AgentCli("claude", "2.1.328", "npm", "@anthropic-ai/claude-code", "node_modules/.bin/claude")
    with pytest.raises(InstallError, match="npm is not installed"):
        install.install(cli)
    assert not (cli.dir / ".ok").exists()


@pytest.mark.proc
def test_a_program_reporting_another_version_is_not_installed(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("PANEBOARD_AGENTS_CACHE", str(tmp_path))
    cli = AgentCli("fake", "9.9.9", "npm", "fake", "bin/fake")
    cli.path.parent.mkdir(parents=True)
    cli.path.write_text("#!/bin/sh\necho 1.0.0\n")
    os.chmod(cli.path, 0o755)
    with pytest.raises(InstallError, match=r"expected 9\.9\.9"):
        install.check(cli)


def test_main_exits_1_naming_the_cli(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("PANEBOARD_AGENTS_CACHE", str(tmp_path))
    monkeypatch.setattr(install.shutil, "which", lambda name: None)
    assert install.main(["install.py", "codex"]) == 1
    assert "cannot install codex 0.171.0" in capsys.readouterr().err
