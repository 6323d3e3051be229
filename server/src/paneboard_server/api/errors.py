"""One error body for every error the HTTP API answers, and its OpenAPI description.

Every 4xx/5xx answer of an API route is `{"detail": "<a sentence>"}`; a request that
fails validation (422) adds `errors`, one entry per field (`loc`, `msg`, `type`, never
the value sent). The dashboard shows `detail` as is (web/js/api.js). `responses(...)`
gives a route's OpenAPI `responses=` for the statuses it can answer, so the document
(checked by tests/server/test_openapi_contract.py) says what the server does.

A path no route or file answers (`GET /nope`) is a 404 in that shape too, except for a
browser navigating there (`Accept: text/html` before JSON): it gets a small page that
says the page does not exist and links to the board.
"""

from __future__ import annotations

import re
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse
from fastapi.routing import APIRoute
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import compile_path
from starlette.staticfiles import StaticFiles
from starlette.types import Receive, Scope, Send

from .notice import notice_page

# SQLite and PostgreSQL integers are 64-bit: a larger id or cursor is refused by the
# schema (422) instead of failing in the driver (500).
ID_MAX = 2**63 - 1


class FieldError(BaseModel):
    loc: list[str] = Field(description="where: `body`, `query`, `path` or `header`, then the field")
    msg: str
    type: str


class ErrorBody(BaseModel):
    """Every error the API answers."""

    detail: str = Field(description="what went wrong, a sentence for a person")
    errors: list[FieldError] | None = Field(
        default=None, description="422 only: each field that failed validation"
    )


_WHY = {
    400: "The request body is not valid JSON (or not the content type the route reads)",
    401: "No credentials, or unknown or revoked ones (`WWW-Authenticate: Bearer`)",
    403: "These credentials may not do this: read-only (viewer token), no CSRF header, "
    "cross-origin, or a role this needs",
    404: "No such pane or rule (or it has gone)",
    409: "Refused by the state of the server (a limit reached)",
    413: "The request body is larger than `limits.max_body_bytes`",
    422: "The request does not match this operation's schema (`errors` says where), "
    "or a value the schema cannot judge was refused (`detail` says which)",
    429: "Too many requests or connections at once (`Retry-After` when known)",
    503: "A part of the server this needs is not running or could not store the change",
}


def responses(*codes: int, **why: str) -> dict[int | str, dict[str, Any]]:
    """The OpenAPI `responses=` for these error statuses, each with the one error body;
    `why` (`e404="..."`) replaces a status's default description."""
    out: dict[int | str, dict[str, Any]] = {}
    for code in codes:
        out[code] = {"model": ErrorBody, "description": why.get(f"e{code}", _WHY[code])}
    return out


def json_responses(*codes: int) -> dict[int | str, dict[str, Any]]:
    """`responses` for a route whose own response class is not JSON (`/metrics`): FastAPI
    would document a `model` in the route's media type, but errors are JSON."""
    ref = {"$ref": "#/components/schemas/ErrorBody"}  # in the document through every other route
    return {
        code: {"description": _WHY[code], "content": {"application/json": {"schema": ref}}} for code in codes
    }


# The statuses most routes share.
READ = (401, 422, 429)  # any viewer (cookie or viewer token) may read
WRITE = (400, 401, 403, 413, 422, 429)  # a logged-in account with the CSRF header


def _sentence(errors: list[dict[str, Any]]) -> str:
    if not errors:
        return "invalid request"
    first = errors[0]
    where = ".".join(first["loc"]) or "request"
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{where}: {first['msg']}{more}"


_NOT_FOUND_PAGE = notice_page(
    "page not found",
    "not-found",
    "<p><strong>This page does not exist.</strong></p>\n"
    '<p><a class="button" href="/">Go to the board</a></p>',
)


def wants_html(request: Request) -> bool:
    """A browser navigating (it asks for HTML before JSON), not a script or the page's fetch()."""
    accept = request.headers.get("accept", "").lower()
    html = accept.find("text/html")
    if html < 0:
        return False
    json_at = accept.find("application/json")
    return json_at < 0 or html < json_at


def install(app: FastAPI) -> None:
    """The exception handlers: every error in the one shape."""

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        """422 naming the fields, without echoing the input: FastAPI's own handler
        echoes it and fails (500) on a body that is not UTF-8."""
        errors = [
            {
                "loc": [str(x) for x in e.get("loc", ())],
                "msg": str(e.get("msg", "")),
                "type": str(e.get("type", "")),
            }
            for e in exc.errors()
        ]
        return JSONResponse({"detail": _sentence(errors), "errors": errors}, status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> HTMLResponse | JSONResponse:
        headers = dict(exc.headers or {})
        route = request.scope.get("route")
        if exc.status_code == 404 and not isinstance(route, APIRoute) and wants_html(request):
            return HTMLResponse(_NOT_FOUND_PAGE, 404, headers={"Cache-Control": "no-store"})
        detail = exc.detail if isinstance(exc.detail, str) else str(exc.detail)
        return JSONResponse({"detail": detail}, status_code=exc.status_code, headers=headers or None)


class Files(StaticFiles):
    """The dashboard's files, mounted at `/` under every API route. A request whose path is
    an API route's but whose method is not falls through the router to here: it gets the
    route's 405 and `Allow` (the methods the OpenAPI document gives that path), not a 404
    or the files' `GET, HEAD`."""

    def __init__(self, *args: Any, app: FastAPI, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.api = app
        self._methods: list[tuple[re.Pattern[str], str]] | None = None

    def allowed(self, path: str) -> str | None:
        if self._methods is None:
            self._methods = [
                (compile_path(template)[0], ", ".join(sorted(m.upper() for m in ops)))
                for template, ops in self.api.openapi().get("paths", {}).items()
            ]
        return next((allow for regex, allow in self._methods if regex.match(path)), None)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and (allow := self.allowed(scope.get("path", ""))):
            raise StarletteHTTPException(405, headers={"Allow": allow})
        await super().__call__(scope, receive, send)
