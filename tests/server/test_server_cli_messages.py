"""What the store's commands say to a person: prompts, answers, `--help`, refusals.

Run as a user runs them: the real `paneboard` command in a subprocess at a real
pseudo-terminal where a terminal matters, elsewhere its entry point in-process
(support.clirun), against real SQLite and PostgreSQL.
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import pty
import re
import select
import subprocess
import sys
import termios
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from pbserver import paneboard, wait_until
from support.clirun import run_cli_text

CLI = [sys.executable, "-m", "paneboard.cli"]
RULE_ID = re.compile(r"(?<![A-Za-z0-9])(P7501|TA|RI|F)[-_]\d+")


class Terminal:
    """A command running on its own pseudo-terminal (its controlling tty, as getpass wants)."""

    def __init__(self, args: list[str], env: dict[str, str]) -> None:
        self.master, slave = pty.openpty()

        def make_controlling() -> None:
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)

        self.proc = subprocess.Popen(
            args,
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env=env,
            start_new_session=True,
            preexec_fn=make_controlling,  # the child needs the pty as its controlling tty
        )
        os.close(slave)
        self.seen = ""

    def expect(self, text: str, timeout: float = 30) -> str:
        """Read until `text` has appeared; returns everything read so far."""
        deadline = time.monotonic() + timeout
        while text not in self.seen:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no {text!r} on the terminal; it shows: {self.seen!r}")
            ready, _, _ = select.select([self.master], [], [], left)
            if ready:
                try:
                    chunk = os.read(self.master, 4096)
                except OSError:  # the child exited and the pty closed
                    chunk = b""
                if not chunk:
                    raise AssertionError(f"terminal closed before {text!r}; it showed: {self.seen!r}")
                self.seen += chunk.decode("utf-8", "replace")
        return self.seen

    def type(self, line: str) -> None:
        os.write(self.master, line.encode() + b"\n")

    def finish(self, timeout: float = 30) -> int:
        rc = self.proc.wait(timeout)
        while True:  # drain what it wrote last
            ready, _, _ = select.select([self.master], [], [], 0.2)
            if not ready:
                break
            try:
                chunk = os.read(self.master, 4096)
            except OSError:
                break
            if not chunk:
                break
            self.seen += chunk.decode("utf-8", "replace")
        os.close(self.master)
        return rc


def at_terminal(db: str, *args: str) -> Terminal:
    return Terminal([*CLI, *args], {**os.environ, "PANEBOARD_DB": db})


@pytest.mark.proc
def test_user_add_says_what_it_asks_before_asking_and_what_it_added(db_url: str) -> None:
    term = at_terminal(db_url, "user", "add", "ana")
    before = term.expect("password: ")
    assert "at least 8" in before.lower() or "8 to 1024 characters" in before
    assert "twice" in before
    term.type("correct horse")
    term.expect("again: ")
    term.type("correct horse")
    assert term.finish() == 0
    assert "added dashboard login 'ana'" in term.seen and "sign in" in term.seen
    assert paneboard("user", "list", db=db_url).stdout.startswith("ana\t")


@pytest.mark.proc
def test_user_add_refuses_a_short_password_at_once(db_url: str) -> None:
    term = at_terminal(db_url, "user", "add", "bo")
    term.expect("password: ")
    term.type("short")
    assert term.finish() == 1
    assert "too short (at least 8 characters)" in term.seen and "again" not in term.seen
    assert paneboard("user", "list", db=db_url).stdout == ""


@pytest.mark.proc
def test_user_add_with_two_different_passwords_adds_nothing(db_url: str) -> None:
    term = at_terminal(db_url, "user", "add", "cy")
    term.expect("password: ")
    term.type("correct horse")
    term.expect("again: ")
    term.type("correct horsf")
    assert term.finish() == 1
    assert "differ; nothing was added" in term.seen
    assert paneboard("user", "list", db=db_url).stdout == ""


@pytest.mark.proc
def test_user_add_asks_nothing_before_the_store_is_known_good(tmp_path: Path) -> None:
    """A person must not type a password twice only to learn the database is not there."""
    term = at_terminal(str(tmp_path / "none.db"), "user", "add", "ana")
    assert term.finish() == 1
    assert "password" not in term.seen and "paneboard db upgrade" in term.seen


def test_piped_password_still_works_and_answers_what_was_added(db_url: str) -> None:
    r = paneboard("user", "add", "ana", db=db_url, stdin="correct horse\n")
    assert r.stderr.strip() == (
        "added dashboard login 'ana': sign in on the dashboard's login page with this name and password"
    )
    assert "password" not in r.stdout


@pytest.mark.parametrize(
    "args",
    [
        ("db", "current"),
        ("token", "list"),
        ("token", "create", "build1"),
        ("user", "list"),
        ("user", "add", "ana"),
        ("serve", "--port", "18765"),  # refused before it binds: the store is missing
    ],
)
def test_a_missing_sqlite_file_is_refused_and_nothing_is_created(
    tmp_path: Path, args: tuple[str, ...]
) -> None:
    r = run_cli_text(*args, "--db", "nosuch/dir/x.db", cwd=tmp_path, stdin="correct horse\n")
    assert r.returncode != 0
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
    assert f"no database at {tmp_path}/nosuch/dir/x.db" in r.stderr and "paneboard db upgrade" in r.stderr
    assert list(tmp_path.iterdir()) == []


def test_db_upgrade_creates_the_store_and_its_directory(tmp_path: Path) -> None:
    r = run_cli_text("db", "upgrade", "--db", "new/dir/x.db", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "new" / "dir" / "x.db").is_file()
    again = run_cli_text("db", "current", "--db", "new/dir/x.db", cwd=tmp_path)
    assert again.returncode == 0 and "(head)" in again.stdout


HELP_PAGES = [
    ("serve",),
    ("token",),
    ("token", "create"),
    ("token", "list"),
    ("token", "revoke"),
    ("user",),
    ("user", "add"),
    ("user", "list"),
    ("user", "remove"),
    ("db",),
    ("demo",),
]


def undescribed(help_text: str) -> list[str]:
    """Argument entries of an argparse help page that have no description."""
    lines = help_text.splitlines()
    out = []
    in_args = False
    for i, line in enumerate(lines):
        if line.endswith(":") and not line.startswith(" "):
            in_args = line in {"positional arguments:", "options:", "optional arguments:"}
            continue
        if not in_args or not line.startswith("  ") or line.startswith(" " * 6):
            continue
        entry = line.strip()
        if re.search(r"\S {2,}\S", entry):
            continue  # the description follows on the same line
        following = lines[i + 1] if i + 1 < len(lines) else ""
        indent = len(line) - len(line.lstrip())
        if following.strip() and len(following) - len(following.lstrip()) > indent:
            continue  # on the next, deeper-indented line
        out.append(entry)
    return out


def test_undescribed_finds_a_bare_argument() -> None:
    text = "usage: x\n\npositional arguments:\n  name\n\noptions:\n  -h, --help  show this\n"
    assert undescribed(text) == ["name"]


@pytest.mark.parametrize("cmd", HELP_PAGES, ids=" ".join)
def test_help_is_plain_words_and_describes_every_argument(cmd: tuple[str, ...]) -> None:
    r = run_cli_text(*cmd, "--help")
    assert r.returncode == 0, r.stderr
    page = r.stdout
    assert page.startswith(f"usage: paneboard {' '.join(cmd)}")
    assert RULE_ID.findall(page) == []
    assert undescribed(page) == []
    description = page.split("\n\n")[1]
    assert len(description.split()) >= 5, f"no description: {description!r}"


def test_token_list_shows_when_a_connected_collector_used_its_token(db_url: str, server_factory: Any) -> None:
    from paneboard_agent.uplink import UplinkSink

    collector = paneboard("token", "create", "build1", db=db_url).stdout.strip()
    viewer = paneboard("token", "create", "wall", "--viewer", db=db_url).stdout.strip()
    listing = paneboard("token", "list", db=db_url).stdout
    assert "build1\tcollector\tactive\tlast used never" in listing
    srv = server_factory(db_url)

    def used(name: str) -> bool:
        out = paneboard("token", "list", db=db_url).stdout
        line = next(line for line in out.splitlines() if line.startswith(name + "\t"))
        return re.search(r"last used \d{4}-\d\d-\d\d \d\d:\d\d$", line) is not None

    async def go() -> None:
        up = UplinkSink(srv.url, collector)
        await up.start()
        try:
            await up.host_status("build1", True, time.time(), None)
            await wait_until(lambda: used("build1"), timeout=20, what="the collector token's last use")
        finally:
            await up.close()
        assert not used("wall")
        async with httpx.AsyncClient() as c:
            r = await c.get(srv.url + "/api/panes", headers={"Authorization": f"Bearer {viewer}"})
            assert r.status_code == 200
        assert used("wall")

    asyncio.run(go())


def test_a_connection_keeps_its_token_marked_as_used(db_url: str) -> None:
    """While connected, `last_used` moves on (here every 0.2 s instead of every minute)."""
    from paneboard_server.auth import accounts
    from paneboard_server.store.database import create_engine, resolve_url

    async def go() -> None:
        engine = create_engine(resolve_url(db_url))
        try:
            await accounts.create_token(engine, "build1", "collector")
            (tok,) = await accounts.list_tokens(engine)
            assert tok.last_used is None
            task = asyncio.create_task(accounts.note_use_while_connected(engine, tok.id, every=0.2))
            try:
                seen: list[float] = []

                async def moved() -> bool:
                    (t,) = await accounts.list_tokens(engine)
                    if t.last_used is not None and (not seen or t.last_used > seen[-1]):
                        seen.append(t.last_used)
                    return len(seen) >= 2

                await wait_until(moved, timeout=10, what="two successive uses recorded")
            finally:
                task.cancel()
            # At most once per interval: a use noted just now is not written again.
            assert not await accounts.note_use(engine, tok.id, every=60)
        finally:
            await engine.dispose()

    asyncio.run(go())


def test_serve_prints_the_url_it_listens_on(db_url: str, server_factory: Any) -> None:
    """Issue 24 item 9: `paneboard serve` said nothing of where to point a browser."""
    srv = server_factory(db_url)
    assert srv.log is not None
    lines = [line for line in srv.log.read_text().splitlines() if "listening on" in line]
    assert lines == [f"paneboard serve: listening on http://127.0.0.1:{srv.port}/"], srv.log.read_text()
    assert httpx.get(lines[0].rsplit(" ", 1)[1] + "healthz", timeout=5).status_code == 200


def test_listen_url_of_a_wildcard_and_an_ipv6_address() -> None:
    import socket

    from paneboard_server.serve import listen_socket, listen_url

    for host, want in (
        ("0.0.0.0", f"http://{socket.gethostname()}:{{}}/ (every interface)"),
        ("::1", "http://[::1]:{}/"),
    ):
        try:
            sock = listen_socket(host, 0)
        except OSError:
            continue  # no IPv6 here
        with sock:
            assert listen_url(sock) == want.format(sock.getsockname()[1])
