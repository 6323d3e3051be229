"""Who is who: tokens, accounts, sessions, password throttling, revocation.

`accounts` (the module: tokens, viewers, operators and sessions, as the CLI and the
login routes call them) and the names used on their own: `Principal` (who is asking),
`AccountError`, the password bounds, `lookup_token`, `session_principal`,
`check_viewer`, `note_use_while_connected`; a browser session's cookies
(`SESSION_COOKIE`, `set_session`, `clear_session`); `same` (a constant-time compare); `warm_password_check`;
`Revocation` and its `Holder`s; `LoginThrottle` and its `Backoff`. Who may read or change one request is
api's (`api/access.py`), built on these.
"""

from . import accounts, pairing
from .accounts import (
    PASSWORD_MAX,
    PASSWORD_MIN,
    AccountError,
    Principal,
    check_viewer,
    lookup_token,
    note_use_while_connected,
    session_principal,
)
from .cookies import SESSION_COOKIE, clear_session, set_session
from .credentials import same, warm_password_check
from .revocation import Holder, Revocation
from .throttle import Backoff, LoginThrottle

__all__ = [
    "PASSWORD_MAX",
    "PASSWORD_MIN",
    "SESSION_COOKIE",
    "AccountError",
    "Backoff",
    "Holder",
    "LoginThrottle",
    "Principal",
    "Revocation",
    "accounts",
    "check_viewer",
    "clear_session",
    "lookup_token",
    "note_use_while_connected",
    "pairing",
    "same",
    "session_principal",
    "set_session",
    "warm_password_check",
]
