"""The first frames of a new `/api/stream` connection, from a cached encoding.

Encoding every live pane for each new connection is long work on the event loop with
thousands of panes; 500 clients opening at once (a restart, a wall of screens) stalled
every other request for seconds. Instead the snapshot is encoded at most once per
`refresh` seconds and shared: a connection gets that cached snapshot, and when the
board has moved on since, one `change` frame with the panes changed after it (itself
encoded once per pair of revisions). The client ends up exactly where a fresh
snapshot would have put it, since the hub delivers everything after the current rev.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from paneboard_protocol.views import StreamChange, StreamSnapshot

from .hub import sse_frame


class SnapshotCache:
    def __init__(self, core: Any, refresh: float = 1.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.core = core
        self.refresh = refresh
        self.clock = clock
        self.rev = -1
        self.frame = b""
        self.built_at = float("-inf")
        self._diff: tuple[int, int, bytes] | None = None  # (from rev, to rev, frame)

    def frames(self) -> list[bytes]:
        """The snapshot (and catch-up change) a connection subscribed now must get first."""
        core = self.core
        now, rev = self.clock(), core.rev
        if self.rev != rev and (self.rev < 0 or now - self.built_at >= self.refresh):
            self.frame = sse_frame("snapshot", StreamSnapshot(rev, core.live_views()), rev)
            self.rev, self.built_at, self._diff = rev, now, None
        if self.rev == rev:
            return [self.frame]
        if self._diff is None or self._diff[:2] != (self.rev, rev):
            since = self.rev
            changed = sorted((p for p in core.panes.values() if p.rev > since), key=lambda p: p.rev)
            body = StreamChange(
                rev=rev,
                panes=[core.view(p) for p in changed if p.gone_at is None],
                gone=[p.id for p in changed if p.gone_at is not None],
            )
            self._diff = (since, rev, sse_frame("change", body, rev))
        return [self.frame, self._diff[2]]
