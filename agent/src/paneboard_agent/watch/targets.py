"""What the collector is told to watch (`TmuxTarget`) and how (`Options`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from paneboard_protocol.events import Rejected
from paneboard_protocol.rules import RuleSet

from paneboard_agent.tmux import DEFAULT_SHELLS, DEFAULT_TRANSPORTS
from paneboard_agent.transport import Transport
from paneboard_agent.uplink import PaneKey
from paneboard_agent.watch.tracker import REREAD, SETTLE

#: told of each report a pane wrote that the spec discards: (pane, t, why), for `--explain`
Discarded = Callable[[PaneKey, float, Rejected], None]


@dataclass(frozen=True)
class Options:
    poll_interval: float = 1.0
    settle: float = SETTLE  # quiet time before a pane's screen is captured
    reread: float = REREAD  # an animating pane's screen is re-read at most this often (0: off)
    pause_after: int = 5  # seconds tmux may buffer a pane for us before pausing it
    transports: Sequence[str] = DEFAULT_TRANSPORTS
    shells: frozenset[str] = DEFAULT_SHELLS
    rules: RuleSet | None = None  # every pane's classifier's screen rules (None: none)
    backoff_min: float = 1.0
    backoff_max: float = 60.0
    captures_at_once: int = 4  # concurrent capture-pane per host (each is a channel over SSH)
    wait_for_tmux: bool = False  # no tmux server at start: wait for one instead of failing
    discarded: Discarded | None = None  # --explain: where each discarded report is said
    # False (diagnostics only, bench/e2e.py): a report goes to the classifier at once,
    # without first re-reading the pane's foreground process
    hold_reports: bool = True


@dataclass
class TmuxTarget:
    """One tmux server to watch, and through which transport."""

    transport: Transport
    socket: str | None = None  # tmux -L
    socket_path: str | None = None  # tmux -S
    include: Sequence[str] = ()
    exclude: Sequence[str] = ()
    screens: bool = True  # a page may see this server's screens (--no-screens / screens = false)
    allow_input: bool = False  # answers may be typed into its panes (--allow-input)

    @property
    def label(self) -> str:
        return self.socket_path or self.socket or "default"
