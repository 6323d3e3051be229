"""A new live stream's first frames (the board's snapshot, the same cached bytes for
every stream) reach the server in pieces of at most `FIRST_PIECE` bytes: a stream holds
no copy of its own, and the server's write buffers take at most a piece before they wait
for the client. Handed over whole, 500 streams opening at once each buffered their own
copy of a snapshot of megabytes (issue #40: 778 MB at peak, 390 MB at rest after)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from ledger_helpers import Clock, reports, update
from paneboard_server.app import create_app
from paneboard_server.config import Config
from paneboard_server.services import services_of
from paneboard_server.store.database import resolve_url
from pbserver import make_tokens

T = 1_900_000_000.0
FIRST_PIECE = 64 * 1024  # api/stream.py's


async def first_event(app: Any, token: str) -> list[bytes]:
    """The body messages of GET /api/stream up to the end of its first event; then the
    client goes away."""
    pieces: list[bytes] = []
    got, gone = asyncio.Event(), asyncio.Event()
    sent_request = False

    async def receive() -> dict[str, Any]:
        nonlocal sent_request
        if not sent_request:
            sent_request = True
            return {"type": "http.request", "body": b"", "more_body": False}
        await gone.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.body" and message.get("body"):
            pieces.append(bytes(message["body"]))
            if b"\n\n" in b"".join(pieces):
                got.set()

    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET", "scheme": "http",
        "path": "/api/stream", "raw_path": b"/api/stream", "root_path": "", "query_string": b"",
        "headers": [(b"host", b"t"), (b"authorization", f"Bearer {token}".encode())],
        "client": ("127.0.0.1", 5000), "server": ("127.0.0.1", 80),
    }  # fmt: skip
    task = asyncio.create_task(app(scope, receive, send))
    await asyncio.wait_for(got.wait(), 60)
    gone.set()
    await asyncio.wait_for(task, 60)
    return pieces


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_the_snapshot_goes_out_in_pieces_not_a_copy_per_stream(db_url: str) -> None:
    async def go() -> None:
        tokens = await make_tokens(db_url)
        app = create_app(Config(), resolve_url(db_url), clock=Clock(T))
        async with app.router.lifespan_context(app):
            core = services_of(app).core
            text = "Allow edit of a file whose name is long enough to matter? " * 8
            await reports(core, [update(f"h{i % 5}", f"%{i}", "blocked", kind="permission", msg=text, t=T)
                                 for i in range(600)])  # fmt: skip
            pieces = await first_event(app, tokens["viewer"])
        body = b"".join(pieces)
        head = body.partition(b"\n\n")[0]
        assert b"event: snapshot" in head
        data = json.loads(head.split(b"data: ", 1)[1])
        assert len(data["panes"]) == 600
        assert len(head) > 4 * FIRST_PIECE  # the snapshot is big enough to be cut
        assert max(len(p) for p in pieces) <= FIRST_PIECE + 64  # a piece, plus at most a ping

    asyncio.run(go())
