"""The tests' own server start (pbserver.ServerProc) is sure of which server it reached.

With tests on several processes (pytest-xdist), a port one test picked can be taken by
another's server before its own binds it; the health check must not be answered by the
other server, and a picked port is picked again (support.listening)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from pbserver import ServerProc, free_port
from support.listening import listens
from support.proctier import spawns
from support.wait import wait_for


@pytest.fixture
@spawns
def impostor(tmp_path: Path) -> Iterator[int]:
    """Another process answering `GET /healthz` with 200 on a port: the port it holds."""
    (tmp_path / "www").mkdir()
    (tmp_path / "www" / "healthz").write_text("ok")
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "http.server", "--bind", "127.0.0.1", "-d", str(tmp_path / "www"), str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:

        def answers() -> bool:
            try:
                return httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200
            except httpx.HTTPError:
                return False

        wait_for(answers, timeout=30, what="the impostor's answer")
        assert not listens(os.getpid(), port)
        assert listens(proc.pid, port)
        yield port
    finally:
        proc.kill()
        proc.wait(10)


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_a_picked_port_that_another_server_took_is_picked_again(
    db_url: str, tmp_path: Path, impostor: int
) -> None:
    sp = ServerProc(db_url, impostor, log=tmp_path / "server.log", pick_port=True)
    try:
        sp.start()
        assert sp.port != impostor
        assert sp.proc is not None and listens(sp.proc.pid, sp.port)
        assert "address already in use" in (tmp_path / "server.log").read_text().lower()
        assert httpx.get(sp.url + "/api/panes").status_code == 401  # paneboard's, not the impostor's 404
    finally:
        sp.stop()


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_a_port_the_test_chose_that_another_server_holds_fails_the_start(
    db_url: str, tmp_path: Path, impostor: int
) -> None:
    sp = ServerProc(db_url, impostor, log=tmp_path / "server.log")
    try:
        with pytest.raises(AssertionError, match=r"(?si)server exited.*address already in use"):
            sp.start()
    finally:
        sp.stop()
