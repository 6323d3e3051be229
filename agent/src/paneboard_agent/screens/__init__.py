"""Screens of watched panes and answers typed into them: the only writes to a pane.

`PaneScreens` (one per tmux server, owned by the watcher) captures the panes a page
looks at and types an answer only when every check passes; what it sends goes to a
`Side` (the uplink's `send_side`) given when it is made; the collector tells it of
classification changes. It reads the watcher through the protocols in `screens`
(`ScreensOwner`), so it imports nothing of `paneboard_agent.watch`.
"""

from paneboard_agent.screens.screens import PaneScreens, ScreensOwner, Side

__all__ = ["PaneScreens", "ScreensOwner", "Side"]
