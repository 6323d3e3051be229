"""What the writer's chain reads and changes of the live pane state, as one typed view.

The batch view (`tx.py`), the operations (`commands.py`), the SQL (`flush.py`), the
ledger's bookkeeping and the writer loop (`writer.py`) all work on the state `Core`
holds. They name it through these protocols rather than through `Core` itself, so the
chain imports downward only (model → state → tx → commands → flush → writer → core)
and `Core` is checked by mypy to be what they expect wherever it is passed in.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Protocol

from paneboard_protocol.views import PaneView
from sqlalchemy.ext.asyncio import AsyncEngine

from ..config import Config
from ..stream import Hub
from .model import Host, Pane
from .staleness import Deadlines


class PaneState(Protocol):
    """The committed mirror as one batch sees it: read, plus the caches a flush fills."""

    cfg: Config
    is_pg: bool
    instance: str
    rev: int
    evicted_rev: int
    hosts: dict[int, Host]
    host_ids: dict[tuple[int, str], int]
    panes: dict[int, Pane]
    pane_ids: dict[tuple[int, str, str], int]
    host_owner: dict[str, int]
    sessions: set[tuple[int, str, str]]
    gone_order: dict[int, OrderedDict[int, None]]
    open_waits: set[int] | None
    waits_opened: dict[int, int]
    collector_rows: set[int] | None
    deadlines: Deadlines
    stats: dict[str, int]

    def live_count(self, collector_id: int) -> int: ...

    def collector_name(self, collector_id: int) -> str | None: ...


class WriterState(PaneState, Protocol):
    """What the writer loop needs besides: its queue, the engine, where commits go."""

    engine: AsyncEngine
    clock: Callable[[], float]
    hub: Hub
    room: asyncio.Event
    writer_error: tuple[float, str] | None
    batch_started: float | None
    listeners: list[Callable[[list[Any]], Any]]

    @property
    def queue(self) -> asyncio.Queue[Any]: ...

    def put_host(self, h: Host) -> None: ...

    def put_pane(self, p: Pane) -> None: ...

    def view(self, p: Pane) -> PaneView: ...
