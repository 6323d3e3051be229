"""Single-use sign-in links (`paneboard pair`): a phone signs in by scanning a QR code
instead of typing a long password on a small keyboard.

A link names one existing login and the role it grants: plain (the board, never
answering prompts) unless made with `operator=True` for a login that is an operator.
Its token is random and only its hash is stored; it expires within minutes and works
once. The one request that uses it is decided by a conditional UPDATE (`used_at IS
NULL AND expires_at > now`), so two browsers racing for one link cannot both win, on
SQLite or PostgreSQL. Every event is written to `pair_audit`: made (by whom, from
where), used (from which address and browser), refused (used again, expired, unknown).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Literal

from sqlalchemy import insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from ..store import schema as s
from .accounts import AccountError
from .credentials import new_secret, token_hash

MINUTES_DEFAULT = 5
MINUTES_MAX = 15
TOKEN_MAX = 128  # a link's token is 43 characters; anything much longer is not one
TEXT_MAX = 255  # `who` and `agent` columns

Refusal = Literal["used", "expired", "unknown"]

REFUSALS: dict[Refusal, str] = {
    "used": "This sign-in link has been used already: ask for a new one with `paneboard pair`.",
    "expired": "This sign-in link has expired: ask for a new one with `paneboard pair`.",
    "unknown": "This sign-in link is not valid: ask for a new one with `paneboard pair`.",
}
"""The one sentence a refused browser is shown (the page escapes it)."""


def _clip(text: str | None) -> str | None:
    """Untrusted text (a User-Agent) made printable and bounded for the audit."""
    if text is None:
        return None
    return "".join(c if c.isprintable() else "?" for c in text[:TEXT_MAX])


@dataclass(frozen=True)
class Link:
    token: str
    account: str
    operator: bool
    expires_at: float


@dataclass(frozen=True)
class SignedIn:
    sid: str
    csrf: str
    account: str
    operator: bool


async def _audit(
    conn: AsyncConnection,
    event: str,
    who: str,
    *,
    link_id: int | None = None,
    account: str | None = None,
    operator: bool | None = None,
    agent: str | None = None,
    now: float | None = None,
) -> None:
    await conn.execute(
        insert(s.pair_audit).values(
            t=time.time() if now is None else now,
            link_id=link_id,
            account=account,
            role=None if operator is None else ("operator" if operator else "plain"),
            event=event,
            who=_clip(who) or "?",
            agent=_clip(agent),
        )
    )


async def create_link(
    engine: AsyncEngine, name: str, *, who: str, operator: bool = False, minutes: float = MINUTES_DEFAULT
) -> Link:
    """A new link for login `name`; AccountError (one line) for what cannot be granted."""
    if not 0 < minutes <= MINUTES_MAX:
        raise AccountError(f"a pairing link lasts more than 0 and at most {MINUTES_MAX} minutes")
    token = new_secret()
    now = time.time()
    async with engine.begin() as conn:
        row = (
            await conn.execute(select(s.viewers.c.id, s.viewers.c.operator).where(s.viewers.c.name == name))
        ).first()
        if row is None:
            raise AccountError(f"no dashboard login named {name!r} (add it with `paneboard user add`)")
        if operator and not row.operator:
            raise AccountError(
                f"{name!r} is not an operator: pair without --operator, or first "
                f"`paneboard user grant {name} operator`"
            )
        res = await conn.execute(
            insert(s.pair_links).values(
                token_hash=token_hash(token),
                viewer_id=row.id,
                operator=operator,
                created_at=now,
                expires_at=now + minutes * 60,
            )
        )
        link_id = res.inserted_primary_key[0] if res.inserted_primary_key else None
        await _audit(conn, "created", who, link_id=link_id, account=name, operator=operator, now=now)
    return Link(token, name, operator, now + minutes * 60)


async def redeem(
    engine: AsyncEngine, token: str, *, who: str, agent: str | None, lifetime: float
) -> SignedIn | Refusal:
    """Use the link once: a new browser session for its login, or why it is refused.

    The link is spent and the session made in one transaction, so a link is never
    spent without its session nor a session made from a spent link."""
    now = time.time()
    if not 0 < len(token) <= TOKEN_MAX:
        async with engine.begin() as conn:
            await _audit(conn, "unknown", who, agent=agent, now=now)
        return "unknown"
    h = token_hash(token)
    async with engine.begin() as conn:
        # The write comes first: SQLite then takes its write lock at once, and a
        # second browser waits for this one's commit instead of failing on a stale read.
        spent = await conn.execute(
            update(s.pair_links)
            .where(
                s.pair_links.c.token_hash == h,
                s.pair_links.c.used_at.is_(None),
                s.pair_links.c.expires_at > now,
            )
            .values(used_at=now)
        )
        j = s.pair_links.join(s.viewers, s.viewers.c.id == s.pair_links.c.viewer_id)
        row = (
            await conn.execute(
                select(s.pair_links, s.viewers.c.name).select_from(j).where(s.pair_links.c.token_hash == h)
            )
        ).first()
        if row is None:
            await _audit(conn, "unknown", who, agent=agent, now=now)
            return "unknown"
        if spent.rowcount != 1:
            why: Refusal = "used" if row.used_at is not None else "expired"
            await _audit(
                conn, why, who, link_id=row.id, account=row.name, operator=row.operator, agent=agent, now=now
            )
            return why
        sid, csrf = new_secret(), new_secret()
        # The same row `accounts.open_session` writes for a password login, plus `plain`.
        await conn.execute(
            insert(s.web_sessions).values(
                id_hash=token_hash(sid),
                viewer_id=row.viewer_id,
                token_id=None,
                csrf=csrf,
                readonly=False,
                plain=not row.operator,
                created_at=now,
                expires_at=now + lifetime,
            )
        )
        await _audit(
            conn,
            "signed-in",
            who,
            link_id=row.id,
            account=row.name,
            operator=row.operator,
            agent=agent,
            now=now,
        )
    return SignedIn(sid, csrf, row.name, bool(row.operator))


@dataclass(frozen=True)
class AuditRow:
    t: float
    event: str
    account: str | None
    role: str | None
    who: str
    agent: str | None


async def audit(engine: AsyncEngine, limit: int = 50) -> list[AuditRow]:
    """The newest pairing events first."""
    async with engine.connect() as conn:
        rows = (
            await conn.execute(select(s.pair_audit).order_by(s.pair_audit.c.id.desc()).limit(limit))
        ).all()
    return [AuditRow(**{k: r._mapping[k] for k in AuditRow.__dataclass_fields__}) for r in rows]
