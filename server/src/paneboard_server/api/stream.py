"""`GET /api/stream`: the live stream (Server-Sent Events, docs/wire.md).

A new stream starts with a snapshot (the cached first frames, `snapshots.py`) or, with
`Last-Event-ID`, with only what changed since; then one `change` frame per committed
batch from the hub. A client too slow for its bounded queue gets `reset`; revoked
credentials end the stream with `revoked`. Each credential may hold at most
`limits.max_streams_per_credential` streams (counted by `conn_limits.py`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import APIRouter, HTTPException, Query, Request
from paneboard_protocol.views import StreamChange, StreamEnd, StreamSnapshot

from ..services import Services, Svc
from ..serving import SLOT
from ..stream import END, QuietEventSource, sse_frame
from .access import Viewer
from .errors import READ, responses
from .typed import schema

#: The most of a stream's first frames handed to the server at once (bytes).
FIRST_PIECE = 64 * 1024

#: One event of the stream, as a client's parser reads it (`event`, `data` and `id`
#: lines; pings are comments, not events). OpenAPI 3.1 has no keyword for the items of
#: a stream (3.2's `itemSchema`): there, a `text/event-stream` schema describes each
#: event, and a plain string would say each event is text, which no parser gives. The
#: JSON in `data` is one of the stream's views (`contentSchema`, JSON Schema's keyword
#: for what a string holds): a snapshot, a change, or why the stream ends.
EVENT = {
    "type": "object",
    "properties": {
        "event": {"type": "string", "enum": ["snapshot", "change", "reset", "revoked"]},
        "data": {
            "type": "string",
            "contentMediaType": "application/json",
            "contentSchema": {"anyOf": [schema(StreamSnapshot), schema(StreamChange), schema(StreamEnd)]},
            "description": "the event's JSON object (docs/wire.md)",
        },
        "id": {"type": "string", "pattern": "^[0-9]+$", "description": "the revision, for `Last-Event-ID`"},
        "retry": {"type": "integer", "minimum": 0},
    },
    "required": ["event", "data"],
    "additionalProperties": False,
}


def make_router() -> APIRouter:
    r = APIRouter()

    @r.get(
        "/api/stream",
        summary="Server-Sent Events: a snapshot, then changes",
        response_class=QuietEventSource,
        responses={
            200: {
                "description": "An endless `text/event-stream`: `snapshot`, then `change` events "
                "(docs/wire.md); `reset` or `revoked` ends it",
                "content": {"text/event-stream": {"schema": EVENT}},
            },
            **responses(*READ, e429="More live streams than `limits.max_streams_per_credential`"),
        },
    )
    async def stream(
        request: Request, svc: Svc, who: Viewer, last_event_id: Annotated[int | None, Query(ge=0)] = None
    ) -> QuietEventSource:
        lim = svc.cfg.limits
        slot = request.scope.get(SLOT)  # conn_limits.py: the connection's count moves to `who`
        if slot is not None and not slot.authenticated(f"{who.kind}:{who.id}"):
            raise HTTPException(
                429,
                f"{lim.max_streams_per_credential} live streams are open with these credentials",
                headers={"Retry-After": "5"},
            )
        header = request.headers.get("last-event-id")
        resume = last_event_id
        if header is not None:
            try:
                resume = int(header)
            except ValueError:
                resume = None
        core = svc.core
        revocation = svc.revocation
        sub = core.hub.subscribe()

        def end(_why: str) -> None:
            core.hub.unsubscribe(sub)
            sub.end()

        holder = revocation.hold(who, end, "live stream")
        first = _first_frames(svc, resume)

        async def gen() -> AsyncIterator[bytes | memoryview]:
            try:
                # The first frames are the cache's, shared by every stream: sent a
                # piece at a time, so that a stream holds no copy of its own (the
                # server's write buffers take at most a piece, then wait for the
                # client), not the whole snapshot per client until the client has read it.
                while first:
                    frame = memoryview(first.pop(0))
                    for at in range(0, len(frame), FIRST_PIECE):
                        yield frame[at : at + FIRST_PIECE]
                    del frame
                while True:
                    if sub.dropped and sub.queue.empty():
                        yield sse_frame("reset", StreamEnd("client too slow: reconnect and resume"))
                        return
                    item = await sub.queue.get()
                    if item is END:
                        yield sse_frame("revoked", StreamEnd("credentials revoked: log in again"))
                        return
                    yield item[1]
            finally:
                core.hub.unsubscribe(sub)
                revocation.release(holder)

        return QuietEventSource(
            gen(),
            ping=lim.sse_ping,
            send_timeout=lim.sse_send_timeout,
            headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
        )

    return r


def _first_frames(svc: Services, resume: int | None) -> list[bytes]:
    """What a stream starts with: the changes since `resume`, or else a full snapshot."""
    core = svc.core
    start = core.rev
    # Panes evicted from memory since `resume` cannot be listed as gone: full snapshot.
    if resume is not None and 0 < resume <= start and resume >= core.evicted_rev:
        changed = [p for p in core.panes.values() if p.rev > resume]
        return [sse_frame(
            "change",
            StreamChange(
                rev=start,
                resumed=True,
                panes=[core.view(p) for p in sorted(changed, key=lambda p: p.rev) if p.gone_at is None],
                gone=[p.id for p in changed if p.gone_at is not None],
            ),
            start,
        )]  # fmt: skip
    return list(svc.snapshots.frames())
