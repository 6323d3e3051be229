"""Opening a pairing link (`paneboard pair`, docs/phone.md) in a browser.

    GET /pair/{token}   signs this browser in as the link's login and lands on the board

A link works once and for minutes (`auth/pairing.py`). A browser that opens one that is
spent, expired or unknown gets a page with one sentence saying so, never JSON or a
stack trace; each refusal is audited and counts against the client's address in the
login back-off, so a guesser (or a stale link opened in a loop) is slowed down before
it writes audit rows without end. The session is a password login's: the same cookies,
the same CSRF token; without `--operator` it is a plain one that cannot answer prompts.
"""

from __future__ import annotations

import html
import logging
import math
import time

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from ..auth import pairing, set_session
from ..services import Svc
from .notice import notice_page

log = logging.getLogger("paneboard.server")


def refused_page(sentence: str, status: int) -> HTMLResponse:
    """The one sentence, on the login page's look, with the way to sign in by password."""
    body = (
        f'<p><strong>{html.escape(sentence)}</strong></p>\n<p><a class="button" href="/login">Sign in</a></p>'
    )
    return HTMLResponse(
        notice_page("sign-in link refused", "pair-refused", body),
        status_code=status,
        headers={"Cache-Control": "no-store", "Referrer-Policy": "no-referrer"},
    )


def make_router() -> APIRouter:
    r = APIRouter()

    @r.get("/pair/{token}", include_in_schema=False)
    async def pair(request: Request, svc: Svc, token: str) -> Response:
        address = request.client.host if request.client else "?"
        backoff = svc.login_throttle.addresses
        wait = backoff.wait(address, time.monotonic())
        if wait > 0:
            seconds = math.ceil(wait)
            resp = refused_page(f"Too many refused sign-in links from here: try again in {seconds} s.", 429)
            resp.headers["Retry-After"] = str(seconds)
            return resp
        agent = request.headers.get("user-agent")
        got = await pairing.redeem(
            svc.core.engine,
            token,
            who=address,
            agent=agent,
            lifetime=svc.cfg.server.session_days * 86400,
        )
        if isinstance(got, pairing.SignedIn):
            log.info(
                "pair: %r signed in (%s) from %s",
                got.account,
                "operator" if got.operator else "plain",
                address,
            )
            board = RedirectResponse("/", 303)
            board.headers["Cache-Control"] = "no-store"
            board.headers["Referrer-Policy"] = "no-referrer"
            set_session(board, svc.cfg, got.sid, got.csrf)
            return board
        backoff.failed(address, time.monotonic())
        log.warning("pair: refused a sign-in link from %s: %s", address, got)
        return refused_page(pairing.REFUSALS[got], 410 if got != "unknown" else 404)

    return r
