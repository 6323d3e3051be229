"""Viewer accounts in a browser: log in, log out, and who this session is.

    POST /api/login   {name, password} -> session and CSRF cookies (same origin only)
    POST /api/logout  ends this session
    GET  /api/me      who this session is, its rights, and this server's host name

Wrong passwords are throttled per account and per address (`throttle.py`, with
`Retry-After`), and only `limits.login_concurrency` password checks run at once.
"""

from __future__ import annotations

import logging
import socket
import time

from fastapi import APIRouter, HTTPException, Request, Response
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from ..auth import SESSION_COOKIE, accounts, clear_session, set_session
from ..services import Svc
from .access import Viewer, Writer, origin_ok
from .errors import READ, WRITE, responses
from .typed import answer, ok
from .views import LoggedOut, Me

log = logging.getLogger("paneboard.server")
_HOSTNAME = socket.gethostname()


class Login(BaseModel):
    name: str = Field(min_length=1, max_length=128)
    password: str = Field(min_length=1, max_length=1024)


class LoginOut(BaseModel):
    name: str
    csrf: str = Field(description="send it back as `X-CSRF-Token` on every change")


def make_router() -> APIRouter:
    r = APIRouter()

    @r.post(
        "/api/login",
        summary="Log in with a viewer account",
        responses={
            200: {"model": LoginOut, "description": "Logged in: session and CSRF cookies are set"},
            **responses(
                400,
                401,
                403,
                413,
                422,
                429,
                e401="Wrong name or password",
                e403="Cross-origin request refused",
                e429="Too many wrong passwords (`Retry-After`), or too many connections",
            ),
        },
    )
    async def login(request: Request, svc: Svc, body: Login) -> JSONResponse:
        if not origin_ok(request):
            raise HTTPException(403, "cross-origin request refused")
        engine = svc.core.engine
        throttle = svc.login_throttle
        address = request.client.host if request.client else "?"
        wait = throttle.retry_after(body.name, address, time.monotonic())
        if wait:
            raise HTTPException(
                429, f"too many wrong passwords: try again in {wait} s", headers={"Retry-After": str(wait)}
            )
        async with svc.login_slots:
            vid = await accounts.check_login(engine, body.name, body.password)
        if vid is None:
            delay = throttle.failed(body.name, address, time.monotonic())
            if delay:
                log.warning(
                    "login: wrong password for %r from %s; back-off %.0f s", body.name[:64], address, delay
                )
            raise HTTPException(401, "wrong name or password")
        throttle.succeeded(body.name, address)
        sid, csrf = await accounts.open_session(
            engine,
            viewer_id=vid,
            token_id=None,
            readonly=False,
            lifetime=svc.cfg.server.session_days * 86400,
        )
        resp = JSONResponse({"name": body.name, "csrf": csrf})
        set_session(resp, svc.cfg, sid, csrf)
        return resp

    @r.post(
        "/api/logout",
        summary="End this browser session",
        responses={**ok(LoggedOut, "Logged out: the session cookie is cleared"), **responses(*WRITE)},
    )
    async def logout(request: Request, svc: Svc, _: Writer) -> JSONResponse:
        sid = request.cookies.get(SESSION_COOKIE, "")
        await accounts.close_session(svc.core.engine, sid)
        resp = JSONResponse({"ok": True})
        clear_session(resp)
        return resp

    @r.get(
        "/api/me",
        summary="Who this session is",
        responses={**ok(Me, "Who these credentials are"), **responses(*READ)},
    )
    async def me(p: Viewer) -> Response:
        # `host`: this server's host name, so the page can offer a plain `tmux attach`
        # (no ssh) for panes a collector on this machine reports.
        return answer(Me(p.name, p.kind, p.readonly, p.csrf, _HOSTNAME, p.screens, p.operator))

    return r
