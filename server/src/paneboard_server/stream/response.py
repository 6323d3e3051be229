"""The live stream's response class: a client dropped for not reading is one log line.

sse-starlette raises `SendTimeoutError` out of the response when one send blocks past
`send_timeout` (the client stopped reading), and uvicorn then logs the whole
traceback, ~130 lines per slow client. The stream's own cleanup (the generator's
`finally`) has already run by then; all that is left to say is who was dropped.
"""

from __future__ import annotations

import logging

from sse_starlette import EventSourceResponse
from sse_starlette.sse import SendTimeoutError
from starlette.types import Receive, Scope, Send

log = logging.getLogger("paneboard.stream")


class QuietEventSource(EventSourceResponse):
    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        except SendTimeoutError:
            client = scope.get("client") or ("?", 0)
            log.info(
                "live stream to %s:%s dropped: not reading for %.0f s",
                client[0],
                client[1],
                self.send_timeout or 0,
            )
        except OSError as exc:  # the peer went away mid-send
            client = scope.get("client") or ("?", 0)
            log.info("live stream to %s:%s ended: %s", client[0], client[1], type(exc).__name__)
