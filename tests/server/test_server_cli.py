"""The store's commands, as a user runs them (the entry point, in-process), on SQLite and PostgreSQL."""

from __future__ import annotations

import re
from pathlib import Path

from pbserver import free_port, paneboard


def test_unmigrated_database_is_refused_with_what_to_run(tmp_path: Path) -> None:
    # An existing but empty SQLite file: a store nobody has upgraded yet. (A file that is
    # not there at all is refused earlier, without creating it: test_server_cli_messages.)
    (tmp_path / "fresh.db").touch()
    db = f"sqlite:///{tmp_path / 'fresh.db'}"
    r = paneboard("token", "list", db=db, check=False)
    assert r.returncode != 0
    assert r.stderr.count("\n") == 1 and "paneboard db upgrade" in r.stderr
    r = paneboard("serve", "--port", str(free_port()), db=db, check=False)
    assert r.returncode != 0 and "paneboard db upgrade" in r.stderr and "Traceback" not in r.stderr
    assert paneboard("db", "current", db=db).stdout.startswith("none")
    paneboard("db", "upgrade", db=db)
    assert "(head)" in paneboard("db", "current", db=db).stdout


def test_newer_schema_is_refused(db_url: str) -> None:
    import asyncio

    from paneboard_server.store.database import create_engine, resolve_url
    from sqlalchemy import text

    async def bump() -> None:
        engine = create_engine(resolve_url(db_url))
        async with engine.begin() as conn:
            await conn.execute(text("UPDATE alembic_version SET version_num = 'ffff'"))
        await engine.dispose()

    asyncio.run(bump())
    r = paneboard("token", "list", db=db_url, check=False)
    assert r.returncode != 0 and "newer than this paneboard" in r.stderr


def test_tokens_print_alone_hash_only_and_revoke(db_url: str) -> None:
    c = paneboard("token", "create", "build1", db=db_url)
    v = paneboard("token", "create", "build1", "--viewer", db=db_url)
    for r, prefix in ((c, "pbc_"), (v, "pbv_")):
        lines = r.stdout.splitlines()
        assert len(lines) == 1 and re.fullmatch(prefix + r"[A-Za-z0-9_-]{43}", lines[0])
    assert c.stdout != v.stdout
    again = paneboard("token", "create", "build1", db=db_url, check=False)
    assert again.returncode != 0 and "exists" in again.stderr and again.stdout == ""
    listing = paneboard("token", "list", db=db_url).stdout
    assert "build1\tcollector\tactive" in listing and "build1\tviewer\tactive" in listing
    assert c.stdout.strip() not in listing

    import asyncio

    from paneboard_server.store.database import create_engine, resolve_url
    from sqlalchemy import text

    async def stored() -> list[str]:
        engine = create_engine(resolve_url(db_url))
        async with engine.connect() as conn:
            rows = (await conn.execute(text("SELECT token_hash FROM tokens"))).all()
        await engine.dispose()
        return [r[0] for r in rows]

    hashes = asyncio.run(stored())
    assert c.stdout.strip() not in hashes and all(len(h) == 64 for h in hashes)

    paneboard("token", "revoke", "build1", "--viewer", db=db_url)
    listing = paneboard("token", "list", db=db_url).stdout
    assert "build1\tviewer\trevoked" in listing and "build1\tcollector\tactive" in listing
    missing = paneboard("token", "revoke", "nobody", db=db_url, check=False)
    assert missing.returncode != 0 and "no active token" in missing.stderr


def test_users_from_stdin(db_url: str) -> None:
    paneboard("user", "add", "ana", db=db_url, stdin="correct horse\n")
    dup = paneboard("user", "add", "ana", db=db_url, stdin="correct horse\n", check=False)
    assert dup.returncode != 0 and "exists" in dup.stderr
    short = paneboard("user", "add", "bo", db=db_url, stdin="short\n", check=False)
    assert short.returncode != 0 and "too short" in short.stderr
    assert paneboard("user", "list", db=db_url).stdout.startswith("ana\t")
    paneboard("user", "remove", "ana", db=db_url)
    assert paneboard("user", "list", db=db_url).stdout == ""
    assert paneboard("user", "remove", "ana", db=db_url, check=False).returncode != 0


def test_bad_config_names_the_key(tmp_path: Path, db_url: str) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text("[retention]\nmax_age_days = -1\n")
    r = paneboard("serve", "--config", str(cfg), db=db_url, check=False)
    assert r.returncode != 0 and "retention.max_age_days" in r.stderr and r.stderr.count("\n") == 1
    cfg.write_text("[server]\ngrace = 3\n")
    r = paneboard("serve", "--config", str(cfg), db=db_url, check=False)
    assert "server.grace" in r.stderr
