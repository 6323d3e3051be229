"""uvicorn's server, telling the application the moment a stop is asked for.

On SIGTERM or SIGINT uvicorn stops taking connections, then waits for every request in
flight. A screen's long poll holds its request up to 25 s, so a stop would wait that
long (or meet a supervisor's stop timeout and be killed before the application's own
shutdown ran). `handle_exit` is the method uvicorn installs for those signals; after
uvicorn's own handling, `on_exit` runs on the event loop, where it may end the polls.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from types import FrameType

import uvicorn


class StoppingServer(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, on_exit: Callable[[], None]) -> None:
        super().__init__(config)
        self.on_exit = on_exit

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        super().handle_exit(sig, frame)
        try:  # a signal handler runs on the loop's thread, between its steps
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # not serving yet: nothing waits
        loop.call_soon_threadsafe(self.on_exit)
