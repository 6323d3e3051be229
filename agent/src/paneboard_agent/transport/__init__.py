"""How the collector reaches a host's tmux: the interface (`base`), this machine
(`local`), and SSH (`ssh`, with the command shell `shell` that only SSH needs).

The interface names and this machine's transport are re-exported here; SSH's are
imported from their modules (by `paneboard agent` alone), so that `asyncssh` is loaded
only by a collector that watches an SSH host.
"""

from paneboard_agent.transport.base import (
    STDERR_LIMIT,
    Channel,
    FatalTransportError,
    RefusedTransportError,
    RunResult,
    Transport,
    TransportError,
)
from paneboard_agent.transport.local import LocalTransport

__all__ = [
    "STDERR_LIMIT",
    "Channel",
    "FatalTransportError",
    "LocalTransport",
    "RefusedTransportError",
    "RunResult",
    "Transport",
    "TransportError",
]
