"""What goes into a pane's tracker and what comes out: inputs and `Effects`, as values.

`tracker.PaneTracker.step(input)` takes one of the inputs below and returns the
`Effects` of that input: everything the pane needs done, at once. `pane_tasks.PaneTasks`
is the one runner that feeds a tracker and carries its effects out, so no caller has to
remember to ask the tracker afterwards what it wants (a forgotten ask lost an update).
Plain frozen values, so the tracker is tested as tables of input -> effects.
"""

from __future__ import annotations

from dataclasses import dataclass

from paneboard_protocol.events import Event, Rejected
from paneboard_protocol.rules import RuleSet

from paneboard_agent.tmux import Observation, PaneInfo
from paneboard_agent.uplink import PaneUpdate


@dataclass(frozen=True, slots=True)
class Effects:
    """What one input to a tracker asks for.

    `update`: the classification changed, send it (else None). `capture`: start one
    `capture-pane` now and report back with `Captured` (at most one is ever in flight).
    `settle_at` / `deadline_at`: when the runner's timers must fire `Settled` /
    `Deadline` (None: no timer); they are the times as they stand after the input,
    so the runner moves, sets or cancels its timers to match. `look`: a report is held
    that waits for a look at the pane's process taken after it: the watcher polls.
    `discarded`: the reports the pane wrote that the spec discards, for `--explain` to
    say why (only from a tracker made with `explain=True`; they stay discarded)."""

    update: PaneUpdate | None = None
    capture: bool = False
    settle_at: float | None = None
    deadline_at: float | None = None
    look: bool = False
    discarded: tuple[Rejected, ...] = ()


@dataclass(frozen=True, slots=True)
class Wrote:
    """Bytes the pane wrote (`PaneTracker`'s `output`)."""

    now: float
    data: bytes


@dataclass(frozen=True, slots=True)
class Polling:
    """A poll starts: its look at the process serves the reports held so far."""


@dataclass(frozen=True, slots=True)
class Released:
    """The oldest poll started has run (`everything`: no poll is coming)."""

    now: float
    everything: bool = False


@dataclass(frozen=True, slots=True)
class Listed:
    """tmux listed the pane; `obs` its foreground process, when it was looked at."""

    now: float
    info: PaneInfo
    obs: Observation | None


@dataclass(frozen=True, slots=True)
class Skipped:
    """Output of the pane was lost (paused, or a line too long)."""

    now: float


@dataclass(frozen=True, slots=True)
class Disconnected:
    """The link to tmux broke: bytes were missed, timers and captures are void."""


@dataclass(frozen=True, slots=True)
class Settled:
    """The settle time (`Effects.settle_at`) came."""

    now: float


@dataclass(frozen=True, slots=True)
class Deadline:
    """The classifier's deadline (`Effects.deadline_at`) came."""

    now: float


@dataclass(frozen=True, slots=True)
class Captured:
    """A capture finished; `screen` None when tmux failed to give one."""

    now: float
    screen: str | None


@dataclass(frozen=True, slots=True)
class CaptureFailed:
    """The capture could not be run at all (the link broke)."""


@dataclass(frozen=True, slots=True)
class Seen:
    """The user looked at the pane: `done` becomes `idle`."""

    now: float


@dataclass(frozen=True, slots=True)
class RulesChanged:
    """Screen rules were reloaded."""

    now: float
    rules: RuleSet | None


@dataclass(frozen=True, slots=True)
class Restored:
    """Reports read back from the pane's stored state after attaching (`late_state`)."""

    now: float
    events: tuple[Event, ...]


#: every input a tracker takes
Input = (
    Wrote
    | Polling
    | Released
    | Listed
    | Skipped
    | Disconnected
    | Settled
    | Deadline
    | Captured
    | CaptureFailed
    | Seen
    | RulesChanged
    | Restored
)
