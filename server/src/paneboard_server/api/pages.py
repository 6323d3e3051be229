"""The dashboard's two pages, and the small HTML answers for people with a browser.

    GET /         the board (a session cookie), or a viewer link `/?token=…` that opens
                  the token's one read-only session and drops the token from the
                  address bar
    GET /login    the login page (web/login.html)

Both are left out of the OpenAPI document: they are pages, not API. `web_dir` finds
the dashboard's files (installed in the package, or web/ of a source tree).

A browser that opens `/?token=…` with a token that is unknown or revoked is a person
holding a stale wall-screen link: they get a page that says so and what to do, not
the API's JSON error. The page uses the dashboard's stylesheet and has no script or
inline style, so the Content-Security-Policy stays strict.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlencode

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from ..auth import SESSION_COOKIE, accounts, set_session
from ..services import Svc
from .notice import notice_page

_BAD_TOKEN = notice_page(
    "link not valid",
    "bad-token",
    "<p><strong>This viewer link is not valid.</strong> Its token is unknown or has been revoked.</p>\n"
    "<p>Ask whoever runs paneboard for a new link (they make one with\n"
    "<code>paneboard token create NAME --viewer</code>), or sign in with an account.</p>\n"
    '<p><a class="button" href="/login">Sign in</a></p>',
)


def bad_token_page() -> HTMLResponse:
    """401 with a readable page: the link's token is unknown or revoked."""
    return HTMLResponse(_BAD_TOKEN, status_code=401, headers={"Cache-Control": "no-store"})


# The one page served when the dashboard's files (web/, with login.html) are missing.
_NO_WEB = (
    "<!doctype html><title>paneboard</title><p>The dashboard files are not "
    "installed; the API is at <a href=/docs>/docs</a>.</p>"
)


def web_dir() -> Path | None:
    """The dashboard's files: the installed package's `web/`, else the source tree's."""
    package = Path(__file__).resolve().parents[1]
    for cand in (package / "web", package.parents[2] / "web"):
        if (cand / "index.html").is_file():
            return cand
    return None


def make_router() -> APIRouter:
    r = APIRouter()

    @r.get("/login", include_in_schema=False)
    async def login_page() -> Response:
        d = web_dir()
        if d is None or not (d / "login.html").is_file():
            return HTMLResponse(_NO_WEB, status_code=404)
        return HTMLResponse((d / "login.html").read_text(encoding="utf-8"))

    @r.get("/", include_in_schema=False)
    async def index(request: Request, svc: Svc, token: str | None = None) -> Response:
        engine = svc.core.engine
        if token is not None:
            p = await accounts.lookup_token(engine, token, "viewer")
            if p is None:
                return bad_token_page()  # a person with a stale link: a page, not JSON
            lifetime = svc.cfg.server.session_days * 86400
            sid, csrf = await accounts.open_token_session(engine, token, p.id, lifetime)
            # The token leaves the address bar; other parameters (?view=wall) stay.
            rest = urlencode([(k, v) for k, v in request.query_params.multi_items() if k != "token"])
            resp: Response = RedirectResponse("/" + (f"?{rest}" if rest else ""), 303)
            set_session(resp, svc.cfg, sid, csrf)
            return resp
        sid = request.cookies.get(SESSION_COOKIE, "")
        if not sid or await accounts.session_principal(engine, sid) is None:
            return RedirectResponse("/login", 303)
        d = web_dir()
        if d is None:
            return HTMLResponse(_NO_WEB)
        return HTMLResponse(
            (d / "index.html").read_text(encoding="utf-8"), headers={"Cache-Control": "no-store"}
        )

    return r
