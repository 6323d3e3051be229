"""How the collector reaches a host's tmux: the interface (`base`), this machine
(`local`), and SSH (`ssh`, with the command shell `shell` that only SSH needs).

The interface names are re-exported here because everything above the transports
uses only them; the implementations are imported from their modules, so that
`asyncssh` is loaded only by a collector that watches an SSH host.
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

__all__ = [
    "STDERR_LIMIT",
    "Channel",
    "FatalTransportError",
    "RefusedTransportError",
    "RunResult",
    "Transport",
    "TransportError",
]
