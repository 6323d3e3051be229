"""What a running server is made of, typed, in one object: `Services`.

The lifespan (`lifespan.py`) builds it once the database is open and hands it to the
app (`install`); routes ask for it as a dependency (`Svc`), and code holding only the
app (tests, the bench) reads it with `services_of`. Nothing else is kept on
`app.state`, so every part a route touches has a type mypy checks and one place it is
made.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated

from fastapi import Depends, HTTPException
from starlette.applications import Starlette
from starlette.requests import HTTPConnection

from .answers import AnswerDesk, ScreenHub
from .auth import LoginThrottle, Revocation
from .config import Config
from .ingest import IngestRegistry
from .notify import NotifyService
from .panes import Core
from .stream import SnapshotCache

if TYPE_CHECKING:  # imported only on PostgreSQL, where they run (lifespan.py)
    from .answers import Replicas
    from .panes import Fanout


@dataclass(frozen=True)
class Services:
    """Every long-lived part of one running server; made by `lifespan.running`."""

    cfg: Config
    core: Core  # the pane mirror and the one writer
    registry: IngestRegistry  # the collectors connected to this process
    revocation: Revocation  # live streams and sockets to end when credentials go
    snapshots: SnapshotCache  # a new stream's first frames
    notify: NotifyService
    screens: ScreenHub  # the screens pages watch
    answers: AnswerDesk  # answers typed from the board
    login_throttle: LoginThrottle
    login_slots: asyncio.Semaphore  # password checks at once (each one is slow on purpose)
    fanout: Fanout | None = None  # PostgreSQL only: other processes' changes
    replicas: Replicas | None = None  # PostgreSQL only: screens and answers across processes


def install(app: Starlette, svc: Services) -> None:
    """Hand the running services to the app: the one write to `app.state`."""
    app.state.services = svc


def services_of(app: Starlette) -> Services:
    """The app's running services; RuntimeError before its lifespan has started them."""
    svc = getattr(app.state, "services", None)
    if not isinstance(svc, Services):
        raise RuntimeError("the app's services are not running (its lifespan has not started)")
    return svc


def services(conn: HTTPConnection) -> Services:
    """The dependency routes use (`Svc`): a request, or a WebSocket, to its services."""
    try:
        return services_of(conn.app)
    except RuntimeError as exc:
        raise HTTPException(503, "the server is not running") from exc


Svc = Annotated[Services, Depends(services)]
