"""ASGI middleware: request-body size limit and security headers.

The body limit is enforced on the bytes actually received (a lying or absent
Content-Length cannot get around it); the headers give every response a strict
Content-Security-Policy the dashboard is written to (no inline script or style).
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; manifest-src 'self'; worker-src 'self'; "
    "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
# Swagger UI needs inline script and its CDN assets; only /docs gets this policy.
DOCS_CSP = (
    "default-src 'self'; script-src 'self' 'unsafe-inline' https://cdn.jsdelivr.net; "
    "style-src 'self' 'unsafe-inline' https://cdn.jsdelivr.net; "
    "img-src 'self' data: https://fastapi.tiangolo.com; "
    "connect-src 'self'; frame-ancestors 'none'"
)


class Guard:
    def __init__(self, app: ASGIApp, max_body: int) -> None:
        self.app = app
        self.max_body = max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path: str = scope.get("path", "")
        csp = DOCS_CSP if path in {"/docs", "/redoc"} else CSP
        extra = [
            (b"content-security-policy", csp.encode()),
            (b"x-content-type-options", b"nosniff"),
            (b"referrer-policy", b"no-referrer"),
            (b"x-frame-options", b"DENY"),
            (b"cross-origin-opener-policy", b"same-origin"),
        ]
        for name, value in scope.get("headers", []):
            if name == b"content-length":
                try:
                    too_big = int(value) > self.max_body
                except ValueError:
                    too_big = True
                if too_big:
                    await _reply_413(send, self.max_body, extra)
                    return
        received = 0
        started = False
        rejected = False

        async def limited_receive() -> Message:
            nonlocal received, started, rejected
            if rejected:
                return {"type": "http.disconnect"}
            msg = await receive()
            if msg["type"] == "http.request":
                received += len(msg.get("body", b""))
                if received > self.max_body:
                    # Answer now and tell the application the client went away: whatever it
                    # does with the truncated body, nothing it sends reaches the client.
                    rejected = True
                    if not started:
                        started = True
                        await _reply_413(send, self.max_body, extra)
                    return {"type": "http.disconnect"}
            return msg

        async def send_with_headers(msg: Message) -> None:
            nonlocal started
            if rejected:
                return
            if msg["type"] == "http.response.start":
                started = True
                headers = list(msg.get("headers", []))
                present = {k.lower() for k, _ in headers}
                headers += [(k, v) for k, v in extra if k not in present]
                msg = {**msg, "headers": headers}
            await send(msg)

        try:
            await self.app(scope, limited_receive, send_with_headers)
        except Exception:
            if not rejected:
                raise


async def _reply_413(send: Send, limit: int, extra: list[tuple[bytes, bytes]]) -> None:
    body = f'{{"detail":"request body too large (limit {limit} bytes)"}}'.encode()
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *extra,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
