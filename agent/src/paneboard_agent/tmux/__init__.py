"""tmux and its control mode: what the collector asks a tmux server and reads back.

The control-mode parser and clients (`control`, `clients`), the questions asked of a
server (`queries`, and `look`: listing and processes in one round trip), what a listing
and the panes' processes say (`panes`, `procfs`), and the one way to read a pane's
screen (`capture`). Everything here goes through a `paneboard_agent.transport`; nothing
here knows what is watched or where updates go (the parts above: watch, screens).
"""

from paneboard_agent.tmux.capture import PaneCapture
from paneboard_agent.tmux.clients import ControlClients
from paneboard_agent.tmux.control import (
    CommandError,
    ControlClient,
    Lost,
    Notice,
    Notification,
    Output,
    Pause,
    parse_version,
    tmux_base,
)

# as a name of its own: `look` is also the module's name, which the package must not hide
from paneboard_agent.tmux.look import look as one_trip_look
from paneboard_agent.tmux.panes import (
    DEFAULT_SHELLS,
    DEFAULT_TRANSPORTS,
    ListingRefused,
    Observation,
    PaneInfo,
    observe,
    session_selected,
)
from paneboard_agent.tmux.procfs import Procs
from paneboard_agent.tmux.queries import list_panes, list_sessions, no_server, processes, with_leaders

__all__ = [
    "DEFAULT_SHELLS",
    "DEFAULT_TRANSPORTS",
    "CommandError",
    "ControlClient",
    "ControlClients",
    "ListingRefused",
    "Lost",
    "Notice",
    "Notification",
    "Observation",
    "Output",
    "PaneCapture",
    "PaneInfo",
    "Pause",
    "Procs",
    "list_panes",
    "list_sessions",
    "no_server",
    "observe",
    "one_trip_look",
    "parse_version",
    "processes",
    "session_selected",
    "tmux_base",
    "with_leaders",
]
