"""Tokens, viewers and browser sessions in the store: what the CLI and auth use.

Everything here is a small awaitable over one engine; nothing is cached, so a token
revoked with `paneboard token revoke` stops working on the next request. argon2 runs
in a worker thread (it takes tens of milliseconds of CPU by design, and on the event
loop it would stall every other request while it runs).
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass

from sqlalchemy import delete, insert, or_, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncEngine

from ..store import is_sqlite
from ..store import schema as s
from .credentials import (
    hash_password,
    new_secret,
    new_token,
    token_hash,
    token_session_secrets,
    verify_password,
)

log = logging.getLogger("paneboard.accounts")


class AccountError(Exception):
    pass


NAME_MAX = 128
PASSWORD_MIN = 8
PASSWORD_MAX = 1024

LAST_USED_EVERY = 60.0
# A viewer link's one session is renewed (its expiry moved on) at most this often.
TOKEN_SESSION_RENEW = 3600.0
"""A token's `last_used` is written at most this often (seconds): often enough for
`paneboard token list` to tell a live collector from a dead one, rarely enough that
every API request with a viewer token does not turn into a database write."""


def _check_name(name: str) -> str:
    if not name or len(name) > NAME_MAX or not name.isprintable() or name.strip() != name:
        raise AccountError(f"bad name {name!r}: 1-{NAME_MAX} printable characters, no surrounding spaces")
    return name


@dataclass(frozen=True)
class TokenInfo:
    id: int
    name: str
    kind: str
    created_at: float
    revoked_at: float | None
    last_used: float | None
    screens: bool = False  # a viewer token that shows screens (--screens)


@dataclass(frozen=True)
class Principal:
    """Who is making a request: a viewer account, a viewer token, or a collector."""

    kind: str  # "viewer" (account), "viewer-token", "collector"
    name: str
    id: int
    readonly: bool
    csrf: str | None = None  # set for cookie sessions: the double-submit value
    session_hash: str | None = None  # set for cookie sessions: which stored session it is
    screens: bool = True  # may see panes' screens (a viewer token only if made with --screens)
    operator: bool = False  # may answer a pane's prompt (an account with the operator role)
    # For a token: the hash of the very token presented. A revoked name re-created keeps
    # its row id, so the id alone would let connections of the old token live on.
    credential: str | None = None


async def create_token(engine: AsyncEngine, name: str, kind: str, screens: bool = False) -> str:
    _check_name(name)
    if kind not in {"collector", "viewer"}:
        raise AccountError(f"bad token kind {kind!r}")
    token = new_token(kind)
    async with engine.begin() as conn:
        existing = (
            await conn.execute(
                select(s.tokens.c.id, s.tokens.c.revoked_at).where(
                    s.tokens.c.kind == kind, s.tokens.c.name == name
                )
            )
        ).first()
        if existing is not None and existing.revoked_at is None:
            raise AccountError(f"a {kind} token named {name!r} exists (revoke it first)")
        if existing is not None:
            # A revoked name is reused: keep the row (hosts and history hang off it).
            await conn.execute(
                update(s.tokens)
                .where(s.tokens.c.id == existing.id)
                .values(
                    token_hash=token_hash(token), revoked_at=None, created_at=time.time(), screens=screens
                )
            )
        else:
            await conn.execute(
                insert(s.tokens).values(
                    name=name,
                    kind=kind,
                    token_hash=token_hash(token),
                    created_at=time.time(),
                    screens=screens,
                )
            )
    return token


async def list_tokens(engine: AsyncEngine) -> list[TokenInfo]:
    async with engine.connect() as conn:
        rows = (await conn.execute(select(s.tokens).order_by(s.tokens.c.kind, s.tokens.c.name))).all()
    return [
        TokenInfo(r.id, r.name, r.kind, r.created_at, r.revoked_at, r.last_used, bool(r.screens))
        for r in rows
    ]


async def revoke_token(engine: AsyncEngine, name: str, kind: str | None = None) -> int:
    cond = [s.tokens.c.name == name, s.tokens.c.revoked_at.is_(None)]
    if kind:
        cond.append(s.tokens.c.kind == kind)
    async with engine.begin() as conn:
        rows = (await conn.execute(select(s.tokens.c.id).where(*cond))).all()
        ids = [r.id for r in rows]
        if ids:
            await conn.execute(update(s.tokens).where(s.tokens.c.id.in_(ids)).values(revoked_at=time.time()))
            await conn.execute(delete(s.web_sessions).where(s.web_sessions.c.token_id.in_(ids)))
    return len(ids)


async def lookup_token(engine: AsyncEngine, token: str, kind: str) -> Principal | None:
    if not token or len(token) > 256:
        return None
    async with engine.connect() as conn:
        row = (
            await conn.execute(
                select(s.tokens).where(
                    s.tokens.c.token_hash == token_hash(token),
                    s.tokens.c.kind == kind,
                    s.tokens.c.revoked_at.is_(None),
                )
            )
        ).first()
    if row is None:
        return None
    if row.last_used is None or time.time() - row.last_used >= LAST_USED_EVERY:
        try:
            await note_use(engine, row.id)
        except Exception as exc:  # bookkeeping: never the reason a valid token is refused
            log.warning("could not record use of token %s: %s", row.id, exc)
    return Principal(
        "collector" if kind == "collector" else "viewer-token",
        row.name,
        row.id,
        readonly=kind == "viewer",
        screens=bool(row.screens) and kind == "viewer",
        credential=row.token_hash,
    )


async def note_use(engine: AsyncEngine, token_id: int, every: float = LAST_USED_EVERY) -> bool:
    """Record that a token is in use now, unless that was recorded less than `every` ago.

    The condition is in the UPDATE itself, so several server processes sharing the
    store write it once between them. Returns whether it was written.
    """
    now = time.time()
    async with engine.begin() as conn:
        result = await conn.execute(
            update(s.tokens)
            .where(
                s.tokens.c.id == token_id,
                or_(s.tokens.c.last_used.is_(None), s.tokens.c.last_used <= now - every),
            )
            .values(last_used=now)
        )
    return bool(result.rowcount)


async def note_use_while_connected(
    engine: AsyncEngine, token_id: int, every: float = LAST_USED_EVERY
) -> None:
    """Keep a connected collector's token marked as used, once per `every`, until cancelled.

    A collector authenticates once per connection and may stay connected for weeks;
    without this its token would read "last used" at the moment it connected. A failed
    write is logged and retried next time: it must never end the connection.
    """
    while True:
        await asyncio.sleep(every)
        try:
            await note_use(engine, token_id, every)
        except Exception as exc:  # the store is briefly away: the next round catches up
            log.warning("could not record use of token %s: %s", token_id, exc)


def check_viewer(name: str, password: str | None = None) -> None:
    """Raise AccountError unless `name` (and `password`, when given) would be accepted."""
    _check_name(name)
    if password is None:
        return
    if len(password) < PASSWORD_MIN:
        raise AccountError(f"password too short (at least {PASSWORD_MIN} characters)")
    if len(password) > PASSWORD_MAX:
        raise AccountError(f"password too long (at most {PASSWORD_MAX} characters)")


async def add_viewer(engine: AsyncEngine, name: str, password: str, operator: bool = False) -> None:
    check_viewer(name, password)
    try:
        async with engine.begin() as conn:
            await conn.execute(
                insert(s.viewers).values(
                    name=name,
                    password_hash=await asyncio.to_thread(hash_password, password),
                    created_at=time.time(),
                    operator=operator,
                )
            )
    except IntegrityError as exc:
        raise AccountError(f"a viewer named {name!r} exists") from exc


async def list_viewers(engine: AsyncEngine) -> list[tuple[str, float]]:
    async with engine.connect() as conn:
        rows = (
            await conn.execute(select(s.viewers.c.name, s.viewers.c.created_at).order_by(s.viewers.c.name))
        ).all()
    return [(r.name, r.created_at) for r in rows]


async def set_operator(engine: AsyncEngine, name: str, operator: bool) -> bool:
    """Grant or revoke the operator role (answering prompts); False: no such login.
    Takes effect on the account's next request: sessions read the role each time."""
    async with engine.begin() as conn:
        res = await conn.execute(update(s.viewers).where(s.viewers.c.name == name).values(operator=operator))
    return bool(res.rowcount)


async def list_operators(engine: AsyncEngine) -> set[str]:
    async with engine.connect() as conn:
        rows = (await conn.execute(select(s.viewers.c.name).where(s.viewers.c.operator.is_(True)))).all()
    return {r.name for r in rows}


async def remove_viewer(engine: AsyncEngine, name: str) -> bool:
    async with engine.begin() as conn:
        row = (await conn.execute(select(s.viewers.c.id).where(s.viewers.c.name == name))).first()
        if row is None:
            return False
        await conn.execute(delete(s.web_sessions).where(s.web_sessions.c.viewer_id == row.id))
        await conn.execute(delete(s.viewers).where(s.viewers.c.id == row.id))
    return True


async def check_login(engine: AsyncEngine, name: str, password: str) -> int | None:
    async with engine.connect() as conn:
        row = (
            await conn.execute(
                select(s.viewers.c.id, s.viewers.c.password_hash).where(s.viewers.c.name == name)
            )
        ).first()
    ok = await asyncio.to_thread(verify_password, row.password_hash if row else None, password)
    return row.id if (ok and row) else None


async def open_session(
    engine: AsyncEngine, *, viewer_id: int | None, token_id: int | None, readonly: bool, lifetime: float
) -> tuple[str, str]:
    """A new browser session; returns (cookie value, csrf value). Only a hash is stored."""
    sid, csrf = new_secret(), new_secret()
    now = time.time()
    async with engine.begin() as conn:
        await conn.execute(
            insert(s.web_sessions).values(
                id_hash=token_hash(sid),
                viewer_id=viewer_id,
                token_id=token_id,
                csrf=csrf,
                readonly=readonly,
                created_at=now,
                expires_at=now + lifetime,
            )
        )
    return sid, csrf


async def open_token_session(
    engine: AsyncEngine, token: str, token_id: int, lifetime: float
) -> tuple[str, str]:
    """A viewer link's browser session: one per token, however often the link is opened
    (its values derive from the token, `token_session_secrets`). The row is written when
    it is new or due for renewal, so a link opened in a loop writes about nothing.
    Returns (cookie value, csrf value)."""
    sid, csrf = token_session_secrets(token)
    key = token_hash(sid)
    now = time.time()
    w = s.web_sessions
    async with engine.connect() as conn:
        row = (await conn.execute(select(w.c.token_id, w.c.expires_at).where(w.c.id_hash == key))).first()
    if (
        row is not None
        and row.token_id == token_id
        and row.expires_at >= now + lifetime - TOKEN_SESSION_RENEW
    ):
        return sid, csrf
    ins = (sqlite_insert if is_sqlite(str(engine.url)) else pg_insert)(w)
    values = {
        "id_hash": key,
        "viewer_id": None,
        "token_id": token_id,
        "csrf": csrf,
        "readonly": True,
        "created_at": now,
        "expires_at": now + lifetime,
    }
    upsert = ins.values(**values).on_conflict_do_update(
        index_elements=[w.c.id_hash],
        set_={"token_id": ins.excluded.token_id, "expires_at": ins.excluded.expires_at},
    )
    async with engine.begin() as conn:
        await conn.execute(upsert)
    return sid, csrf


async def session_principal(engine: AsyncEngine, sid: str) -> Principal | None:
    if not sid or len(sid) > 256:
        return None
    j = s.web_sessions.outerjoin(s.viewers, s.viewers.c.id == s.web_sessions.c.viewer_id).outerjoin(
        s.tokens, s.tokens.c.id == s.web_sessions.c.token_id
    )
    async with engine.connect() as conn:
        row = (
            await conn.execute(
                select(
                    s.web_sessions,
                    s.viewers.c.name.label("vname"),
                    s.viewers.c.operator,
                    s.tokens.c.name.label("tname"),
                    s.tokens.c.revoked_at,
                    s.tokens.c.screens,
                )
                .select_from(j)
                .where(s.web_sessions.c.id_hash == token_hash(sid), s.web_sessions.c.expires_at > time.time())
            )
        ).first()
    if row is None:
        return None
    if row.viewer_id is not None and row.vname is not None:
        return Principal(
            "viewer",
            row.vname,
            row.viewer_id,
            readonly=row.readonly,
            csrf=row.csrf,
            session_hash=row.id_hash,
            operator=bool(row.operator) and not row.readonly,
        )
    if row.token_id is not None and row.tname is not None and row.revoked_at is None:
        return Principal(
            "viewer-token",
            row.tname,
            row.token_id,
            readonly=True,
            csrf=row.csrf,
            session_hash=row.id_hash,
            screens=bool(row.screens),
        )
    return None


async def close_session(engine: AsyncEngine, sid: str) -> None:
    async with engine.begin() as conn:
        await conn.execute(delete(s.web_sessions).where(s.web_sessions.c.id_hash == token_hash(sid)))
