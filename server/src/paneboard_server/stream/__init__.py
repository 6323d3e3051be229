"""The live stream: fan-out of committed changes and a new client's first frames.

`Hub` (one encoded SSE frame per batch, a bounded queue per client; `sse_frame`,
`END`), `SnapshotCache` (a new stream's first frames) and `QuietEventSource` (the
response class).
"""

from .hub import END, Hub, sse_frame
from .response import QuietEventSource
from .snapshots import SnapshotCache

__all__ = ["END", "Hub", "QuietEventSource", "SnapshotCache", "sse_frame"]
