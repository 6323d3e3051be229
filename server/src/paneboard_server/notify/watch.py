"""Which viewers have a tab looking at the board right now.

Tabs report `POST /api/watch {tab, watching}` on every visibility/focus change and
every 20 s. A viewer is watching while some tab of theirs said `watching: true`
less than `ttl` seconds ago; then Web Push is held back because the tab notifies
by itself. Memory is bounded: old tabs are forgotten.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field


@dataclass
class WatchTracker:
    ttl: float = 45.0
    max_tabs: int = 5000
    _tabs: OrderedDict[tuple[str, str], tuple[bool, float]] = field(default_factory=OrderedDict)

    def report(self, viewer: str, tab: str, watching: bool, now: float) -> None:
        key = (viewer, tab[:64])
        self._tabs[key] = (watching, now)
        self._tabs.move_to_end(key)
        while len(self._tabs) > self.max_tabs:
            self._tabs.popitem(last=False)

    def watchers(self, now: float) -> frozenset[str]:
        """Every viewer watching right now (taken when a change happens, so a tab that
        looks away a moment later does not turn an already-seen change into a push)."""
        return frozenset(v for v in {v for v, _ in self._tabs} if self.watching(v, now))

    def watching(self, viewer: str, now: float) -> bool:
        for (v, _tab), (on, at) in list(self._tabs.items()):
            if now - at > self.ttl:
                del self._tabs[(v, _tab)]
                continue
            if v == viewer and on:
                return True
        return False
