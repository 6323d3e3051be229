"""Where the collector's updates go: the `Sink` seam and its two ends.

`sink` names what crosses the seam (`PaneUpdate`, `PaneKey`, the `Sink` and
`SnapshotSource` protocols, `Reports` for a watcher's outlet, `Commands` for what the
server says back); `pump` hands changes to a sink without making the watcher
wait; `health` measures a watched host's link; `uplink.UplinkSink` sends to
`paneboard serve` over one WebSocket, its bookkeeping the pure `buffer.UplinkBuffer`;
`stdout_sink.StdoutSink` prints JSON lines.
Nothing here imports the parts that watch tmux: they import this.
"""

from paneboard_agent.uplink.buffer import UplinkBuffer
from paneboard_agent.uplink.health import Health, HealthMeter
from paneboard_agent.uplink.pump import Pump
from paneboard_agent.uplink.sink import Commands, PaneKey, PaneUpdate, Reports, Sink, SnapshotSource
from paneboard_agent.uplink.stdout_sink import StdoutSink
from paneboard_agent.uplink.uplink import UplinkSink, ingest_url

__all__ = [
    "Commands",
    "Health",
    "HealthMeter",
    "PaneKey",
    "PaneUpdate",
    "Pump",
    "Reports",
    "Sink",
    "SnapshotSource",
    "StdoutSink",
    "UplinkBuffer",
    "UplinkSink",
    "ingest_url",
]
