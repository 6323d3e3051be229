"""The FastAPI application: `create_app(cfg, url)` builds it, `serve.py` runs it.

The app is its parts put together: the lifespan (`lifespan.running`) makes the
server's `Services` and installs them for the routes; each part's routes come from its
own router, included in the order their paths are matched (the dashboard's files,
mounted at `/`, last); errors have one shape (`api/errors.py`); `Guard` bounds every
request (`serving/middleware.py`).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from fastapi import APIRouter, FastAPI

from . import __version__
from .api import (
    errors,
    health,
    ingest,
    login,
    metrics,
    notify,
    pages,
    pair,
    panes,
    screens,
    seen,
    stats,
    stream,
    typed,
)
from .config import Config
from .lifespan import running
from .services import install
from .serving import Guard

#: Every part's routes (each module's `make_router`), in the order paths are matched;
#: the dashboard's files, mounted at `/`, come after them all.
ROUTERS: tuple[Callable[[], APIRouter], ...] = (
    ingest.make_router,
    panes.make_router,
    seen.make_router,
    stream.make_router,
    health.make_router,
    metrics.make_router,
    login.make_router,
    pages.make_router,
    pair.make_router,
    notify.make_router,
    stats.make_router,
    screens.make_router,
)


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
    typed.install(app)
    for make_router in ROUTERS:
        app.include_router(make_router())
    d = pages.web_dir()
    if d is not None:
        app.mount("/", errors.Files(directory=d, app=app), name="web")
    app.add_middleware(Guard, max_body=cfg.limits.max_body_bytes)
    return app
