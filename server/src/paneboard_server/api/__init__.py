"""Every HTTP and WebSocket route, by part, and the access rules they share (`access.py`).

The top of the server: its routes read the running `Services`, so nothing below
imports api. The entry point is the route modules themselves, each one part's
`make_router` (`app.ROUTERS` puts them in order), plus `errors` (one error shape,
`errors.install`, `errors.Files`), `typed` (typed answers: `typed.answer`, `typed.ok`,
`typed.install`; the views are `views.py`'s and the protocol's) and `pages`
(`pages.web_dir`, the dashboard's files).
"""

from . import (
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

__all__ = [
    "errors",
    "health",
    "ingest",
    "login",
    "metrics",
    "notify",
    "pages",
    "pair",
    "panes",
    "screens",
    "seen",
    "stats",
    "stream",
    "typed",
]
