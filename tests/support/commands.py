"""The uplink's `Commands` end for tests that drive an `UplinkSink` without a collector:
it records the panes the server says were seen, so a test can tell `seen` came back."""

from __future__ import annotations

from paneboard_protocol import server_messages as sm
from paneboard_protocol.pane import PaneKey


class SeenRecorder:
    """Takes no answers and carries out no command: only `seen` is recorded."""

    def __init__(self) -> None:
        self.seen: list[tuple[PaneKey, float]] = []

    def input_hosts(self) -> set[str]:
        return set()

    def mark_seen(self, key: PaneKey, t: float) -> None:
        self.seen.append((key, t))

    async def command(self, cmd: sm.PaneCommand) -> None:
        return None
