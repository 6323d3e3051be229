"""Bad start-up input, through the real CLI: one line on stderr, a non-zero exit, no
traceback, for every way the database, the address or the configuration can be wrong."""

from __future__ import annotations

import shutil
import socket
from pathlib import Path

import pytest
from pbserver import free_port, paneboard
from sqlalchemy.engine import make_url
from support.postgres import PG_ADMIN, require_postgres


def _one_line_failure(*args: str, db: str, want: str) -> None:
    r = paneboard(*args, db=db, check=False)
    assert r.returncode != 0, r.stderr
    assert "Traceback" not in r.stderr, r.stderr
    assert r.stderr.count("\n") == 1, r.stderr
    assert want in r.stderr, r.stderr


def test_serve_on_a_corrupt_sqlite_file(tmp_path: Path) -> None:
    bad = tmp_path / "corrupt.db"
    bad.write_bytes(b"this is not SQLite, just bytes " * 200)
    _one_line_failure("serve", "--port", str(free_port()), db=str(bad), want="file is not a database")


def test_serve_on_an_unopenable_database(tmp_path: Path) -> None:
    d = tmp_path / "a-directory"
    d.mkdir()
    _one_line_failure("serve", "--port", str(free_port()), db=str(d), want="unable to open database")


def test_database_path_under_a_regular_file(tmp_path: Path) -> None:
    f = tmp_path / "plain-file"
    f.write_text("x")
    for cmd in (("serve", "--port", str(free_port())), ("token", "list")):
        _one_line_failure(*cmd, db=str(f / "paneboard.db"), want="is a file, not a directory")


@pytest.mark.postgres
@pytest.mark.parametrize(
    ("change", "want"),
    [({"database": "pb_no_such_database"}, "does not exist"), ({"username": "pb_no_such_role"}, "role")],
)
def test_postgresql_without_the_database_or_role(change: dict[str, str], want: str) -> None:
    require_postgres()
    url = make_url(PG_ADMIN).set(**change).render_as_string(hide_password=False)
    _one_line_failure("serve", "--port", str(free_port()), db=url, want=want)


def test_agent_with_a_server_url_it_cannot_use(tmp_path: Path) -> None:
    _one_line_failure(
        "agent",
        "--server",
        "ftp://x",
        "--token",
        "pbc_x",
        "--local",
        db=str(tmp_path / "x.db"),
        want="ftp://x",
    )


@pytest.mark.parametrize("port", ["70000", "0", "-1", "http"])
def test_ports_are_validated(port: str, tmp_path: Path) -> None:
    _one_line_failure("serve", "--port", port, db=str(tmp_path / "x.db"), want="--port")


def test_a_port_that_cannot_be_bound_says_so(sqlite_template: Path, tmp_path: Path) -> None:
    db = tmp_path / "paneboard.db"
    shutil.copy(sqlite_template, db)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        _one_line_failure("serve", "--port", str(port), db=str(db), want=f"cannot listen on 127.0.0.1:{port}")


def test_an_apprise_url_with_an_unknown_scheme_is_refused_at_load(
    sqlite_template: Path, tmp_path: Path
) -> None:
    db = tmp_path / "paneboard.db"
    shutil.copy(sqlite_template, db)
    cfg = tmp_path / "config.toml"
    cfg.write_text('[[notify.channels]]\nurl = "nosuchscheme://host/topic"\n')
    _one_line_failure(
        "serve", "--port", str(free_port()), "--config", str(cfg), db=str(db), want="'nosuchscheme'"
    )


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("[server]\nprot = 8000\n", "server.prot: unknown key; did you mean port?"),
        (
            "[notify]\npush_ttl = 0\n",
            "notify.push_ttl: expected an integer greater than 0, got 0; e.g. push_ttl = 3600",
        ),
    ],
)
def test_a_config_mistake_is_one_line_naming_the_file_the_key_and_the_fix(
    text: str, want: str, tmp_path: Path
) -> None:
    # The database is unusable too: the configuration must be what start-up refuses first.
    f = tmp_path / "plain-file"
    f.write_text("x")
    cfg = tmp_path / "config.toml"
    cfg.write_text(text)
    args = ("serve", "--port", str(free_port()), "--config", str(cfg))
    _one_line_failure(*args, db=str(f / "paneboard.db"), want=f"{cfg}: {want}")


@pytest.mark.parametrize("how", ["flag", "env", "config"])
def test_a_public_url_that_is_not_http_is_refused_in_one_line(
    how: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The database is unusable too: the public URL must be what start-up refuses first.
    f = tmp_path / "plain-file"
    f.write_text("x")
    args = ["serve", "--port", str(free_port())]
    if how == "flag":
        args += ["--public-url", "ftp://board.example"]
    elif how == "env":
        monkeypatch.setenv("PANEBOARD_PUBLIC_URL", "ftp://board.example")
    else:
        cfg = tmp_path / "config.toml"
        cfg.write_text('[server]\npublic_url = "ftp://board.example"\n')
        args += ["--config", str(cfg)]
    _one_line_failure(*args, db=str(f / "paneboard.db"), want="must be an http:// or https:// URL")


@pytest.mark.parametrize(
    "url",
    [
        "javascript:alert(1)",
        "https://",
        "board.example",
        "https://board example",
        "https://board.example/?next=x",
        "https://board.example/#/pane/1",
        "https://user:pw@board.example",
        "https://board.example:99999",
        "https://board.example/\x1b[2J",
        "https://" + "a" * 400,
    ],
)
def test_public_url_refusals(url: str) -> None:
    from paneboard_server.config import Config, ConfigError

    with pytest.raises(ConfigError, match=r"^--public-url: must be an http:// or https:// URL") as e:
        Config().with_public_url(url, "--public-url")
    assert "\n" not in str(e.value)


def test_a_public_url_is_kept_without_its_trailing_slash() -> None:
    from paneboard_server.config import Config

    assert Config().with_public_url("https://board.example/pb/", "x").server.public_url == (
        "https://board.example/pb"
    )
