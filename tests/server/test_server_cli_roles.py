"""The operator role and screen-showing viewer tokens, from the command line
(docs/answers.md): granted, listed, revoked; refused where they make no sense."""

from __future__ import annotations

import asyncio

from paneboard_server.auth import accounts
from paneboard_server.store.database import create_engine, resolve_url
from pbserver import paneboard


def _principal(db_url: str, token: str) -> accounts.Principal | None:
    async def go() -> accounts.Principal | None:
        engine = create_engine(resolve_url(db_url))
        try:
            return await accounts.lookup_token(engine, token, "viewer")
        finally:
            await engine.dispose()

    return asyncio.run(go())


def test_operator_role_is_granted_listed_and_revoked(db_url: str) -> None:
    paneboard("user", "add", "olga", "--operator", db=db_url, stdin="correct horse\n")
    paneboard("user", "add", "ann", db=db_url, stdin="correct horse\n")
    listed = paneboard("user", "list", db=db_url).stdout.splitlines()
    assert [ln.split("\t")[0] for ln in listed] == ["ann", "olga"]
    assert listed[1].endswith("\toperator") and not listed[0].endswith("operator")
    paneboard("user", "grant", "ann", "operator", db=db_url)
    paneboard("user", "revoke", "olga", "operator", db=db_url)
    listed = paneboard("user", "list", db=db_url).stdout.splitlines()
    assert listed[0].endswith("\toperator") and not listed[1].endswith("operator")
    missing = paneboard("user", "grant", "nobody", "operator", db=db_url, check=False)
    assert missing.returncode != 0 and "no dashboard login named 'nobody'" in missing.stderr
    bad = paneboard("user", "grant", "ann", "admin", db=db_url, check=False)
    assert bad.returncode != 0


def test_viewer_tokens_show_screens_only_when_made_so(db_url: str) -> None:
    plain = paneboard("token", "create", "wall", "--viewer", db=db_url).stdout.strip()
    screens = paneboard("token", "create", "wall2", "--viewer", "--screens", db=db_url).stdout.strip()
    p1, p2 = _principal(db_url, plain), _principal(db_url, screens)
    assert p1 is not None and p1.screens is False and p1.operator is False and p1.readonly
    assert p2 is not None and p2.screens is True and p2.operator is False and p2.readonly
    listed = paneboard("token", "list", db=db_url).stdout.splitlines()
    assert [ln.endswith("\tshows screens") for ln in listed] == [False, True]
    refused = paneboard("token", "create", "c1", "--screens", db=db_url, check=False)
    assert refused.returncode != 0 and "--viewer" in refused.stderr
