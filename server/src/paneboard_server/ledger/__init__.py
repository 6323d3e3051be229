"""Time waiting on you: the ledger derived from history, its table and the stats.

The intervals (`intervals.py`, pure: `Event`, `Interval`, `derive`, `step`, `order`,
`WAITING`, `Waiting`), which the writer keeps in `waits` (panes/waits.py); `mark_answered`, the
answer feature's mark on a block; the stats page's figures (`stats.py`: `Query`,
`options`, `fetch`, `compute`, `overlapping`), added up by the database for the API
(`aggregate.py`) and cached per range (`cache.py`); the demo's sample week (`seed_sample`).
"""

from . import aggregate
from .cache import AnswerCache
from .intervals import WAITING, Event, Interval, Waiting, derive, order, step
from .seed import seed_sample
from .stats import Query, compute, fetch, options, overlapping
from .store import mark_answered

__all__ = [
    "WAITING",
    "AnswerCache",
    "Event",
    "Interval",
    "Query",
    "Waiting",
    "aggregate",
    "compute",
    "derive",
    "fetch",
    "mark_answered",
    "options",
    "order",
    "overlapping",
    "seed_sample",
    "step",
]
