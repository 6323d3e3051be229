"""Who may read and who may change: cookies, viewer bearer tokens, CSRF, Origin.

Reads accept a session cookie or `Authorization: Bearer <viewer token>`. A change
(`POST`) needs a full viewer account session (viewer tokens are read-only) plus the
double-submit CSRF token in `X-CSRF-Token`, and an Origin, when the browser sends
one, that is this server's own (or configured in `allowed_origins`).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, HTTPException, Request
from fastapi.security import APIKeyCookie, HTTPBearer

from ..auth import SESSION_COOKIE, Principal, lookup_token, same, session_principal
from ..notify import origin_of
from ..services import services_of

CSRF_HEADER = "x-csrf-token"

# The two ways in, as the OpenAPI document states them (either one will do). They only
# describe: `current_principal` reads the request itself.
_TOKEN = HTTPBearer(
    auto_error=False,
    scheme_name="viewerToken",
    description="A viewer token (`paneboard token create NAME --viewer`): reads only.",
)
_SESSION = APIKeyCookie(
    name=SESSION_COOKIE,
    auto_error=False,
    scheme_name="session",
    description="The session cookie `POST /api/login` sets. A change also needs the `pb_csrf` "
    "cookie's value in an `X-CSRF-Token` header.",
)
Described = Annotated[Any, Depends(_TOKEN)]
DescribedCookie = Annotated[Any, Depends(_SESSION)]


async def current_principal(request: Request) -> Principal | None:
    engine = services_of(request.app).core.engine
    auth = request.headers.get("authorization", "")
    if auth[:7].lower() == "bearer ":
        return await lookup_token(engine, auth[7:].strip(), "viewer")
    sid = request.cookies.get(SESSION_COOKIE)
    if sid:
        return await session_principal(engine, sid)
    return None


async def require_viewer(request: Request, _t: Described = None, _s: DescribedCookie = None) -> Principal:
    p = await current_principal(request)
    if p is None:
        raise HTTPException(
            401,
            "authentication required (log in, or send a viewer token)",
            headers={"WWW-Authenticate": "Bearer"},
        )
    return p


def origin_ok(request: Request) -> bool:
    origin = request.headers.get("origin")
    if origin is None:  # not a browser, or a same-origin GET-like navigation
        return True
    host = request.headers.get("host", "")
    server = services_of(request.app).cfg.server
    allowed = {f"http://{host}", f"https://{host}", *server.allowed_origins}
    if server.public_url:  # behind a proxy that rewrites Host, the board's own origin
        allowed.add(origin_of(server.public_url))
    return origin in allowed


def writer_refusal(request: Request, p: Principal) -> tuple[str, str] | None:
    """Why `p` may not change anything with this request, as (short reason, message),
    or None: read-only credentials (a viewer token), a cross-origin request, a missing
    or wrong CSRF token. Routes that audit refusals (answers) call it themselves."""
    if p.readonly:
        return "read-only", "read-only credentials cannot change anything"
    if not origin_ok(request):
        return "cross-origin", "cross-origin request refused"
    header = request.headers.get(CSRF_HEADER, "")
    if p.csrf is None or not header or not same(header, p.csrf):
        return "csrf", "missing or wrong CSRF token (send the pb_csrf cookie's value as X-CSRF-Token)"
    return None


async def require_writer(request: Request, _t: Described = None, _s: DescribedCookie = None) -> Principal:
    p = await require_viewer(request)
    refused = writer_refusal(request, p)
    if refused is not None:
        raise HTTPException(403, refused[1])
    return p


# What a route's parameter says it needs: `_: Viewer` to read, `_: Writer` to change.
Viewer = Annotated[Principal, Depends(require_viewer)]
Writer = Annotated[Principal, Depends(require_writer)]
