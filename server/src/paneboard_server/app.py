"""The FastAPI application: ingest, read API, live stream, login, dashboard files.

`create_app(cfg, url)` builds it; its lifespan runs `lifespan.running` (the database,
the writer, retention, notifications, screens and, on PostgreSQL, the cross-process
fan-out) and installs the `Services` that routes reach through `Svc`.
`serving/run.py` runs it under uvicorn.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import Depends, FastAPI, HTTPException, Query, Request, WebSocket
from fastapi.responses import HTMLResponse, JSONResponse, PlainTextResponse, RedirectResponse, Response
from paneboard_protocol import wire as pwire
from paneboard_protocol.pane import HISTORY_FIELDS
from pydantic import BaseModel, Field
from sqlalchemy import select

from . import __version__
from .api import errors
from .api.errors import READ, WRITE, ErrorBody, responses
from .api.metrics import metrics_text
from .api.notify import make_router
from .api.pages import bad_token_page
from .api.screens import make_router as make_screens_router
from .api.stats import make_router as make_stats_router
from .auth import accounts
from .auth.access import CSRF_COOKIE, SESSION_COOKIE, origin_ok, require_viewer, require_writer
from .auth.accounts import Principal
from .config import Config
from .ingest.uplink import handle
from .lifespan import running
from .panes.core import Seen
from .services import Services, Svc, install
from .serving.conn_limits import SLOT
from .serving.middleware import Guard
from .store import schema as s
from .stream.hub import END, sse_frame
from .stream.response import QuietEventSource

log = logging.getLogger("paneboard.server")
_HOSTNAME = socket.gethostname()


def web_dir() -> Path | None:
    here = Path(__file__).resolve().parent
    for cand in (here / "web", here.parents[2] / "web"):
        if (cand / "index.html").is_file():
            return cand
    return None


Viewer = Annotated[Principal, Depends(require_viewer)]
Writer = Annotated[Principal, Depends(require_writer)]


class Login(BaseModel):
    name: str = Field(min_length=1, max_length=128)
    password: str = Field(min_length=1, max_length=1024)


class LoginOut(BaseModel):
    name: str
    csrf: str = Field(description="send it back as `X-CSRF-Token` on every change")


class Health(BaseModel):
    ok: bool
    version: str
    db: str
    panes: int
    collectors: int


class Unhealthy(ErrorBody):
    ok: bool = False
    error: str = Field(description="the same as `detail` (older monitors read it)")
    since: float | None = Field(default=None, description="when the writer started failing or stalled")


def create_app(cfg: Config, url: str, clock: Callable[[], float] = time.time) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with running(cfg, url, clock) as svc:
            install(app, svc)
            yield

    app = FastAPI(
        title="paneboard",
        version=__version__,
        lifespan=lifespan,
        description="Which coding agent in which tmux pane is working, done, or waiting on you.",
    )
    errors.install(app)

    # --- ingest ---------------------------------------------------------------------
    @app.websocket("/api/ingest")
    async def ingest(ws: WebSocket, svc: Svc) -> None:
        await handle(ws, svc.core, svc.registry)

    # --- read API -------------------------------------------------------------------
    @app.get("/api/panes", summary="Every live pane", responses=responses(*READ))
    async def panes(svc: Svc, _: Viewer) -> list[dict[str, Any]]:
        return svc.core.live_panes()

    @app.get(
        "/api/hosts", summary="Every host: reachability and the link's health", responses=responses(*READ)
    )
    async def hosts(svc: Svc, _: Viewer) -> list[dict[str, Any]]:
        core = svc.core
        return [
            h.api(core.collector_names.get(h.collector_id))
            for h in sorted(core.hosts.values(), key=lambda h: (h.name, h.id))
        ]

    @app.get("/api/panes/{pane_id}", summary="One pane", responses=responses(*READ, 404))
    async def pane(svc: Svc, pane_id: int, _: Viewer) -> dict[str, Any]:
        core = svc.core
        p = core.panes.get(pane_id)
        if p is None or p.gone_at is not None:
            raise HTTPException(404, "no such pane")
        return core.api(p)

    @app.get(
        "/api/panes/{pane_id}/events",
        summary="A pane's state history, newest first",
        responses=responses(*READ, 404),
    )
    async def events(
        svc: Svc,
        pane_id: int,
        _: Viewer,
        limit: Annotated[int, Query(ge=1, le=1000)] = 200,
        before: Annotated[int | None, Query(ge=1, le=errors.ID_MAX)] = None,
    ) -> dict[str, Any]:
        core = svc.core
        if pane_id not in core.panes:
            raise HTTPException(404, "no such pane")
        q = s.pane_page(s.history, pane_id, limit, before)
        async with core.engine.connect() as conn:
            rows = (await conn.execute(q)).all()
        keys = ("id", "t", *HISTORY_FIELDS, "prev_state", "reason")
        # (Row.t is SQLAlchemy's tuple accessor, so columns are read through the mapping.)
        return {
            "pane_id": pane_id,
            "events": [{k: r._mapping[k] for k in keys} for r in rows],
        }

    @app.post(
        "/api/panes/{pane_id}/seen",
        summary="The user has looked: done becomes idle",
        responses=responses(*WRITE, 404, 503),
    )
    async def seen(svc: Svc, pane_id: int, _: Writer) -> dict[str, Any]:
        core = svc.core
        p = core.panes.get(pane_id)
        if p is None or p.gone_at is not None:
            raise HTTPException(404, "no such pane")
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[None] = loop.create_future()
        op = Seen(
            pane_id,
            on_commit=lambda: None if fut.done() else fut.set_result(None),
            on_fail=lambda e: None if fut.done() else fut.set_exception(e),
        )
        core.submit(op)
        try:
            await asyncio.wait_for(fut, 10)
        except Exception as exc:
            raise HTTPException(503, "could not store the change") from exc
        await forward_seen(svc, pane_id)
        return {"pane": core.api(core.panes[pane_id]), "changed": bool(op.result.get("changed"))}

    @app.get(
        "/api/stream",
        summary="Server-Sent Events: a snapshot, then changes",
        response_class=QuietEventSource,
        responses={
            200: {
                "description": "An endless `text/event-stream`: `snapshot`, then `change` events "
                "(docs/wire.md); `reset` or `revoked` ends it",
                "content": {"text/event-stream": {"schema": {"type": "string"}}},
            },
            **responses(*READ, e429="More live streams than `limits.max_streams_per_credential`"),
        },
    )
    async def stream(
        request: Request, svc: Svc, who: Viewer, last_event_id: Annotated[int | None, Query(ge=0)] = None
    ) -> QuietEventSource:
        core = svc.core
        slot = request.scope.get(SLOT)  # conn_limits.py: the connection's count moves to `who`
        if slot is not None and not slot.authenticated(f"{who.kind}:{who.id}"):
            raise HTTPException(
                429,
                f"{cfg.limits.max_streams_per_credential} live streams are open with these credentials",
                headers={"Retry-After": "5"},
            )
        header = request.headers.get("last-event-id")
        resume = last_event_id
        if header is not None:
            try:
                resume = int(header)
            except ValueError:
                resume = None
        sub = core.hub.subscribe()
        revocation = svc.revocation

        def end(_why: str) -> None:
            core.hub.unsubscribe(sub)
            sub.end()

        holder = revocation.hold(who, end, "live stream")
        start = core.rev
        # Panes evicted from memory since `resume` cannot be listed as gone: full snapshot.
        if resume is not None and 0 < resume <= start and resume >= core.evicted_rev:
            changed = [p for p in core.panes.values() if p.rev > resume]
            first = sse_frame(
                "change",
                {
                    "rev": start,
                    "resumed": True,
                    "panes": [core.api(p) for p in sorted(changed, key=lambda p: p.rev) if p.gone_at is None],
                    "gone": [p.id for p in changed if p.gone_at is not None],
                },
                start,
            )
        else:
            first = b"".join(svc.snapshots.frames())

        async def gen() -> AsyncIterator[bytes]:
            try:
                yield first
                while True:
                    if sub.dropped and sub.queue.empty():
                        yield sse_frame("reset", {"reason": "client too slow: reconnect and resume"})
                        return
                    item = await sub.queue.get()
                    if item is END:
                        yield sse_frame("revoked", {"reason": "credentials revoked: log in again"})
                        return
                    yield item[1]
            finally:
                core.hub.unsubscribe(sub)
                revocation.release(holder)

        return QuietEventSource(
            gen(),
            ping=cfg.limits.sse_ping,
            send_timeout=cfg.limits.sse_send_timeout,
            headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
        )

    @app.get(
        "/healthz",
        summary="Liveness: the database answers",
        responses={200: {"model": Health}, 503: {"model": Unhealthy, "description": "Not healthy"}},
    )
    async def healthz(svc: Svc) -> JSONResponse:
        core = svc.core
        started = core.batch_started
        limit = cfg.limits.writer_stall
        if started is not None and (ran := time.monotonic() - started) > limit:
            # Reads work but the writer waits (a lock held elsewhere): nothing commits.
            why = f"writer: one batch has run for {ran:.0f} s (limits.writer_stall {limit:g} s)"
            return JSONResponse({"ok": False, "detail": why, "error": why, "since": core.clock() - ran}, 503)
        try:
            async with core.engine.connect() as conn:
                await conn.execute(select(1))
        except Exception as exc:
            why = type(exc).__name__
            return JSONResponse({"ok": False, "detail": why, "error": why}, 503)
        if core.writer_error is not None:  # reads work but writes fail (disk full, ...)
            since, why = core.writer_error
            why = f"writer: {why}"
            return JSONResponse({"ok": False, "detail": why, "error": why, "since": since}, 503)
        return JSONResponse(
            {
                "ok": True,
                "version": __version__,
                "db": "sqlite" if not core.is_pg else "postgresql",
                "panes": sum(1 for p in core.panes.values() if p.gone_at is None),
                "collectors": len(svc.registry.connections),
            }
        )

    @app.get(
        "/metrics",
        summary="Prometheus metrics",
        response_class=PlainTextResponse,
        responses={
            200: {
                "description": "The Prometheus text format, version 0.0.4",
                "content": {"text/plain": {"schema": {"type": "string"}}},
            },
            **errors.json_responses(*READ),
        },
    )
    async def metrics(svc: Svc, _: Viewer) -> Response:
        return Response(metrics_text(svc.core, svc.registry), media_type="text/plain; version=0.0.4")

    # --- viewers --------------------------------------------------------------------
    def set_session(resp: Response, sid: str, csrf: str) -> None:
        secure = cfg.server.cookie_secure
        age = int(cfg.server.session_days * 86400)
        resp.set_cookie(
            SESSION_COOKIE, sid, max_age=age, httponly=True, samesite="strict", secure=secure, path="/"
        )
        resp.set_cookie(
            CSRF_COOKIE, csrf, max_age=age, httponly=False, samesite="strict", secure=secure, path="/"
        )

    @app.post(
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
        core = svc.core
        throttle = svc.login_throttle
        address = request.client.host if request.client else "?"
        wait = throttle.retry_after(body.name, address, time.monotonic())
        if wait:
            raise HTTPException(
                429, f"too many wrong passwords: try again in {wait} s", headers={"Retry-After": str(wait)}
            )
        async with svc.login_slots:
            vid = await accounts.check_login(core.engine, body.name, body.password)
        if vid is None:
            delay = throttle.failed(body.name, address, time.monotonic())
            if delay:
                log.warning(
                    "login: wrong password for %r from %s; back-off %.0f s", body.name[:64], address, delay
                )
            raise HTTPException(401, "wrong name or password")
        throttle.succeeded(body.name, address)
        sid, csrf = await accounts.open_session(
            core.engine,
            viewer_id=vid,
            token_id=None,
            readonly=False,
            lifetime=cfg.server.session_days * 86400,
        )
        resp = JSONResponse({"name": body.name, "csrf": csrf})
        set_session(resp, sid, csrf)
        return resp

    @app.post("/api/logout", summary="End this browser session", responses=responses(*WRITE))
    async def logout(request: Request, svc: Svc, _: Writer) -> JSONResponse:
        sid = request.cookies.get(SESSION_COOKIE, "")
        await accounts.close_session(svc.core.engine, sid)
        resp = JSONResponse({"ok": True})
        resp.delete_cookie(SESSION_COOKIE, path="/")
        resp.delete_cookie(CSRF_COOKIE, path="/")
        return resp

    @app.get("/api/me", summary="Who this session is", responses=responses(*READ))
    async def me(p: Viewer) -> dict[str, Any]:
        # `host`: this server's host name, so the page can offer a plain `tmux attach`
        # (no ssh) for panes a collector on this machine reports.
        return {
            "name": p.name,
            "kind": p.kind,
            "readonly": p.readonly,
            "csrf": p.csrf,
            "host": _HOSTNAME,
            "screens": p.screens,
            "operator": p.operator,
        }

    @app.get("/login", include_in_schema=False)
    async def login_page() -> Response:
        d = web_dir()
        if d is None or not (d / "login.html").is_file():
            return HTMLResponse(_NO_WEB, status_code=404)
        return HTMLResponse((d / "login.html").read_text(encoding="utf-8"))

    @app.get("/", include_in_schema=False)
    async def index(request: Request, svc: Svc, token: str | None = None) -> Response:
        core = svc.core
        if token is not None:
            p = await accounts.lookup_token(core.engine, token, "viewer")
            if p is None:
                return bad_token_page()  # a person with a stale link: a page, not JSON
            sid, csrf = await accounts.open_session(
                core.engine,
                viewer_id=None,
                token_id=p.id,
                readonly=True,
                lifetime=cfg.server.session_days * 86400,
            )
            # The token leaves the address bar; other parameters (?view=wall) stay.
            rest = urlencode([(k, v) for k, v in request.query_params.multi_items() if k != "token"])
            resp: Response = RedirectResponse("/" + (f"?{rest}" if rest else ""), 303)
            set_session(resp, sid, csrf)
            return resp
        sid = request.cookies.get(SESSION_COOKIE, "")
        if not sid or await accounts.session_principal(core.engine, sid) is None:
            return RedirectResponse("/login", 303)
        d = web_dir()
        if d is None:
            return HTMLResponse(_NO_WEB)
        return HTMLResponse(
            (d / "index.html").read_text(encoding="utf-8"), headers={"Cache-Control": "no-store"}
        )

    app.include_router(make_router())
    app.include_router(make_stats_router())
    app.include_router(make_screens_router())
    d = web_dir()
    if d is not None:
        app.mount("/", errors.Files(directory=d, app=app), name="web")

    app.add_middleware(Guard, max_body=cfg.limits.max_body_bytes)
    return app


async def forward_seen(svc: Services, pane_id: int) -> None:
    """Tell the pane's collector its user has looked, wherever that collector is connected."""
    core = svc.core
    target = core.collector_of(pane_id)
    if target is None:
        return
    cid, key = target
    send = core.seen_routes.get(cid)
    msg = pwire.seen(pwire.Key(host=key.host, tmux=key.tmux, pane=key.pane), core.clock())
    if send is not None:
        send(msg)
        return
    if svc.fanout is not None:
        await svc.fanout.notify_seen(pane_id)


# The one page served when the dashboard's files (web/, with login.html) are missing.
_NO_WEB = (
    "<!doctype html><title>paneboard</title><p>The dashboard files are not "
    "installed; the API is at <a href=/docs>/docs</a>.</p>"
)
