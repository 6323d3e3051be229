"""Watching panes and processes: one `TmuxWatcher` per tmux server, one tracker per pane.

`watcher.TmuxWatcher` (sessions, listings, processes, the poll's pace and overlapping
looks) drives one pure `tracker.PaneTracker` per pane: every input goes in through
`pane_tasks.PaneTasks.feed`, which carries out the `effects.Effects` it returns;
`late_state` reads the state panes stored for a collector that attaches late;
`targets` says what to watch (`TmuxTarget`) and how (`Options`).
"""

from paneboard_agent.watch.targets import Options, TmuxTarget
from paneboard_agent.watch.tracker import REREAD, SETTLE
from paneboard_agent.watch.watcher import TmuxWatcher

__all__ = ["REREAD", "SETTLE", "Options", "TmuxTarget", "TmuxWatcher"]
