"""Token and password primitives: random bearer tokens stored as SHA-256, argon2 passwords.

Bearer tokens are 256 random bits, so a fast hash is enough (nothing to brute-force)
and lets every request be checked with one indexed lookup; passwords are chosen by
people, so they get argon2id (argon2-cffi's defaults).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from functools import cache

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

_hasher = PasswordHasher()

COLLECTOR_PREFIX = "pbc_"
VIEWER_PREFIX = "pbv_"


@cache
def _dummy_hash() -> str:
    """A hash that takes as long to verify as a real one: used when the user does not
    exist, so a login attempt does not reveal which names are accounts. Made on first
    use, not at import: every `paneboard` command imports this module, few sign anyone in."""
    return _hasher.hash("not a password, a timing equaliser")


def warm_password_check() -> None:
    """Make the equaliser now (a server, in a thread at start), so that not even the
    first sign-in with an unknown name takes longer than one with a known name."""
    _dummy_hash()


def new_token(kind: str) -> str:
    prefix = VIEWER_PREFIX if kind == "viewer" else COLLECTOR_PREFIX
    return prefix + secrets.token_urlsafe(32)


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def new_secret() -> str:
    return secrets.token_urlsafe(32)


def token_session_secrets(token: str) -> tuple[str, str]:
    """The session cookie and CSRF values of a viewer link's browser session, derived
    from its token: every sign-in with one token finds the same session row, so a
    read-only link opened in a loop cannot add rows. Knowing them gives no more than
    the token itself does (read-only, revoked with it)."""
    key = token.encode("utf-8", "surrogatepass")
    sid = hmac.new(key, b"paneboard web session", hashlib.sha256).digest()
    csrf = hmac.new(key, b"paneboard web session csrf", hashlib.sha256).digest()
    return base64.urlsafe_b64encode(sid).decode().rstrip("="), base64.urlsafe_b64encode(csrf).decode().rstrip(
        "="
    )


def hash_password(password: str) -> str:
    return _hasher.hash(password)


def verify_password(stored: str | None, password: str) -> bool:
    try:
        return _hasher.verify(stored or _dummy_hash(), password) and stored is not None
    except (VerificationError, InvalidHashError):
        return False


def same(a: str, b: str) -> bool:
    return hmac.compare_digest(a.encode(), b.encode())
