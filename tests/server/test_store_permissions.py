"""The SQLite store is private to its owner: the database (password hashes, the Web Push
private key, prompts, the answer audit) and its -wal/-shm files are created 0600 in a
directory created 0700, whatever the umask lets through; an existing file or directory
keeps its mode, and `serve` and `db upgrade` say, in one line, when the files are open.

Run as a user runs them: `paneboard db` through its entry point (in-process, under the
usual umask), `paneboard serve` as a real server process, real SQLite.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from pbserver import ServerProc, free_port
from support.clirun import CliResult, run_cli_text


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _db(*args: str, cwd: Path) -> CliResult[str]:
    # umask 022, the usual one, under which SQLite's own files come out 0644
    old = os.umask(0o022)
    try:
        return run_cli_text("db", *args, cwd=cwd)
    finally:
        os.umask(old)


def test_db_upgrade_creates_a_private_file_in_a_private_directory(tmp_path: Path) -> None:
    r = _db("upgrade", "--db", "new/dir/x.db", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert _mode(tmp_path / "new" / "dir" / "x.db") == 0o600
    assert _mode(tmp_path / "new" / "dir") == 0o700
    assert _mode(tmp_path / "new") == 0o755, "only the database's own directory is made private"
    assert "warning" not in r.stderr, r.stderr


def test_an_existing_directory_is_not_chmodded(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o755)
    shared.chmod(0o755)
    r = _db("upgrade", "--db", "shared/x.db", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert _mode(shared) == 0o755
    assert _mode(shared / "x.db") == 0o600


@pytest.mark.proc
def test_serve_migrate_keeps_the_database_and_its_wal_private(tmp_path: Path) -> None:
    db = tmp_path / "store" / "paneboard.db"
    server = ServerProc(str(db), free_port(), log=tmp_path / "serve.log", extra=["--migrate"])
    old = os.umask(0o022)
    try:
        server.start()
    finally:
        os.umask(old)
    try:
        wal, shm = Path(f"{db}-wal"), Path(f"{db}-shm")
        assert wal.exists() and shm.exists(), "the running server keeps its WAL open"
        assert {p.name: _mode(p) for p in (db, wal, shm)} == {
            "paneboard.db": 0o600,
            "paneboard.db-wal": 0o600,
            "paneboard.db-shm": 0o600,
        }
        assert _mode(db.parent) == 0o700
    finally:
        server.stop()
    assert "warning" not in (tmp_path / "serve.log").read_text()


@pytest.mark.proc
def test_serve_and_db_upgrade_warn_about_a_readable_database_and_leave_it(tmp_path: Path) -> None:
    db = tmp_path / "paneboard.db"
    assert _db("upgrade", "--db", str(db), cwd=tmp_path).returncode == 0
    db.chmod(0o644)  # as paneboard made it before, or a careless copy

    r = _db("upgrade", "--db", str(db), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    (warning,) = [line for line in r.stderr.splitlines() if "warning" in line]
    assert warning.startswith("paneboard db: warning: database ")
    assert f"{db} is open to other users: paneboard.db (mode 0644)" in warning
    assert f"chmod 600 {db}*" in warning

    server = ServerProc(str(db), free_port(), log=tmp_path / "serve.log")
    server.start()
    try:
        assert _mode(db) == 0o644, "the owner's mode is theirs to change"
    finally:
        server.stop()
    lines = [ln for ln in (tmp_path / "serve.log").read_text().splitlines() if "warning" in ln]
    assert len(lines) == 1 and lines[0].startswith("paneboard serve: warning: database "), lines
    assert "paneboard.db (mode 0644)" in lines[0] and "Web Push private key" in lines[0]
