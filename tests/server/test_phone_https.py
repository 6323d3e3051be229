"""docs/phone.md's HTTPS recipe, as written: its nginx block with a certificate made
here by openssl (a CA and a server certificate signed by it), in front of a real
server; Chromium opens a `paneboard pair` link through it and lands signed in on the
board; the same link a second time, and an expired one, are refused."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import ssl
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from pbserver import free_port, make_tokens, paneboard
from support.stack import CHROMIUM_ARGS
from support.tools import CHROMIUM, require_tool

ROOT = Path(__file__).resolve().parents[2]
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
CONFIG = '[server]\ncookie_secure = true\ntrusted_proxies = ["127.0.0.1"]\n'


def documented_server(upstream: int, port: int, crt: Path, key: Path) -> str:
    """docs/phone.md's nginx `server` block, only its addresses and files made local."""
    text = (ROOT / "docs/phone.md").read_text()
    block = re.search(r"```nginx\n(.*?)```", text, re.S)
    assert block is not None, "docs/phone.md has no nginx block"
    conf = block.group(1)
    for old, new in (
        ("listen 443 ssl;", f"listen 127.0.0.1:{port} ssl;"),
        ("/etc/paneboard/tls/board.crt", str(crt)),
        ("/etc/paneboard/tls/board.key", str(key)),
        ("127.0.0.1:8765", f"127.0.0.1:{upstream}"),
    ):
        assert old in conf, old
        conf = conf.replace(old, new)
    return conf


def make_certificate(d: Path) -> tuple[Path, Path]:
    """docs/phone.md's openssl steps, for the name `board.lan` and 127.0.0.1."""
    d.mkdir()

    def run(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=d, check=True, capture_output=True, timeout=60)

    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "30", "-subj", "/CN=paneboard CA",
        "-keyout", "ca.key", "-out", "ca.crt")  # fmt: skip
    run("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=board.lan", "-keyout", "board.key",
        "-out", "board.csr")  # fmt: skip
    (d / "board.ext").write_text("subjectAltName=DNS:board.lan,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n")
    run("x509", "-req", "-in", "board.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
        "-days", "30", "-extfile", "board.ext", "-out", "board.crt")  # fmt: skip
    return d / "board.crt", d / "board.key"


@pytest.fixture
def https_board(
    sqlite_template: Path, tmp_path: Path, server_factory: Any
) -> Iterator[tuple[str, str, Path]]:
    assert Path(NGINX).exists(), "nginx is needed (scripts/lib/bootstrap.sh installs it)"
    db_path = tmp_path / "paneboard.db"
    shutil.copy(sqlite_template, db_path)
    db = f"sqlite:///{db_path}"
    asyncio.run(make_tokens(db, viewer_password="right-password-1"))
    server = server_factory(db, config=CONFIG)
    crt, key = make_certificate(tmp_path / "tls")
    port = free_port()
    d = tmp_path / "nginx"
    d.mkdir()
    user = "user root root;" if os.geteuid() == 0 else ""
    temps = "\n".join(f"{k}_temp_path {d}/{k};" for k in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    (d / "nginx.conf").write_text(
        f"""{user}
worker_processes 1;
daemon off;
pid {d}/nginx.pid;
error_log {d}/error.log;
events {{ worker_connections 64; }}
http {{
    access_log off;
    {temps}
    {documented_server(server.port, port, crt, key)}
}}
"""
    )
    log = open(d / "stderr.log", "wb")  # noqa: SIM115 - the process owns it
    proc = subprocess.Popen([NGINX, "-p", str(d), "-c", str(d / "nginx.conf")], stdout=log, stderr=log)
    log.close()
    url = f"https://127.0.0.1:{port}"
    trust = ssl.create_default_context(cafile=str(crt.parent / "ca.crt"))  # the certificate is checked
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                raise AssertionError(f"nginx exited: {(d / 'stderr.log').read_text()}")
            try:
                if httpx.get(url + "/healthz", timeout=2, verify=trust).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "nginx did not start"
            time.sleep(0.1)
        yield url, db, crt.parent / "ca.crt"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


def test_a_phone_pairs_over_the_documented_https_proxy(https_board: tuple[str, str, Path]) -> None:
    require_tool("chromium")
    url, db, _ca = https_board
    link = paneboard("pair", "ana", "--url", url, db=db).stdout.splitlines()[0]
    assert link.startswith(url + "/pair/")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            # A phone-sized page that trusts the test CA's certificate for this test only.
            phone = browser.new_context(ignore_https_errors=True, viewport={"width": 390, "height": 844})
            page = phone.new_page()
            page.goto(link)
            page.wait_for_url(url + "/")
            page.wait_for_selector("#counts")
            me = page.evaluate("fetch('/api/me').then(r => r.json())")
            assert me["name"] == "ana" and me["operator"] is False
            cookies = {c["name"]: c for c in phone.cookies()}
            assert cookies["pb_session"]["secure"] and cookies["pb_session"]["httpOnly"]

            other = browser.new_context(ignore_https_errors=True).new_page()
            resp = other.goto(link)
            assert resp is not None and resp.status == 410
            assert "This sign-in link has been used already" in other.inner_text("main")

            short = paneboard("pair", "ana", "--url", url, "--minutes", "0.01", db=db).stdout.splitlines()[0]
            time.sleep(1)  # past the link's 0.6 s: the refusal is decided by the clock, not the wait
            resp = other.goto(short)
            assert resp is not None and resp.status == 410
            assert "This sign-in link has expired" in other.inner_text("main")
        finally:
            browser.close()
