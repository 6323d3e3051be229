"""A browser session's two cookies: set on login (or a viewer link), cleared on logout.

`pb_session` is the session id, HttpOnly; `pb_csrf` is the double-submit token the page
reads and sends back as `X-CSRF-Token` (api/access.py). Both are SameSite=Strict, Secure
when `server.cookie_secure`, and last `server.session_days`.
"""

from __future__ import annotations

from starlette.responses import Response

from ..config import Config

SESSION_COOKIE = "pb_session"
CSRF_COOKIE = "pb_csrf"


def set_session(resp: Response, cfg: Config, sid: str, csrf: str) -> None:
    secure = cfg.server.cookie_secure
    age = int(cfg.server.session_days * 86400)
    resp.set_cookie(
        SESSION_COOKIE, sid, max_age=age, httponly=True, samesite="strict", secure=secure, path="/"
    )
    resp.set_cookie(
        CSRF_COOKIE, csrf, max_age=age, httponly=False, samesite="strict", secure=secure, path="/"
    )


def clear_session(resp: Response) -> None:
    resp.delete_cookie(SESSION_COOKIE, path="/")
    resp.delete_cookie(CSRF_COOKIE, path="/")
