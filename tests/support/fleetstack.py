"""A fleet (tests/support/fleet.py) watched the way a user would: one `paneboard serve`
and one or more `paneboard agent --config agent-K.toml` processes, each collector with
a collector token of its own, every host reached by its alias in the harness's ssh
config. The server side is the suite's full-stack harness (support/stack.py) without
its own tmux or sshd.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from support.fleet import Fleet
from support.fleetwatch import StreamWatch
from support.stack import PANEBOARD, Paneboard
from support.wait import wait_for


class FleetStack(Paneboard):
    """server <- collectors <- the fleet's hosts."""

    def __init__(self, tmp: Path, fleet: Fleet, *, template: Path | None = None, grace: float = 30.0) -> None:
        super().__init__(tmp, server={"grace_period": grace}, template=template)
        self.fleet = fleet
        self.collectors: list[Any] = []
        self.watches: list[StreamWatch] = []

    def start_fleet(
        self, collectors: int = 1, poll_interval: float = 1.0, timeout: float = 120
    ) -> FleetStack:
        """The server, then `collectors` collectors splitting the hosts between them;
        returns once every host's panes are on the board, reachable."""
        self.start(collector=False)
        self.fleet.expose(self.port)
        tokens = [self.collector_token, self.second_token, *self._more_tokens(collectors - 2)]
        for k, config in enumerate(self.fleet.agent_config(collectors, poll_interval)):
            name = f"collector{k + 1}"
            args = [*PANEBOARD, "agent", "--server", self.url, "--config", str(config)]
            self.env["PANEBOARD_TOKEN"] = tokens[k]
            self.collectors.append(self._spawn(name, self.fleet.on_board(args)))
        self.env.pop("PANEBOARD_TOKEN", None)
        want = {h.name: h.spec.panes for h in self.fleet.hosts.values()}
        wait_for(
            lambda: self._all_up(want),
            timeout=timeout,
            what=f"every host's panes on the board\n{self.log('collector1')}",
            interval=0.5,
        )
        return self

    def _more_tokens(self, n: int) -> list[str]:
        if n <= 0:
            return []
        from paneboard_server.auth import accounts
        from paneboard_server.store.database import create_engine, resolve_url

        async def go() -> list[str]:
            engine = create_engine(resolve_url(str(self.db)))
            try:
                return [await accounts.create_token(engine, f"c{k + 3}", "collector") for k in range(n)]
            finally:
                await engine.dispose()

        return asyncio.run(go())

    def _all_up(self, want: dict[str, int]) -> bool:
        for p in self.collectors:
            if p.poll() is not None:
                raise AssertionError(f"a collector exited\n{self.log('collector1')}")
        seen: dict[str, int] = {}
        for p in self.panes():
            if p["reachable"]:
                seen[p["host"]] = seen.get(p["host"], 0) + 1
        return all(seen.get(h, 0) >= n for h, n in want.items())

    def host_status(self, name: str) -> dict[str, Any] | None:
        """The host's row in `GET /api/hosts` (reachable, unreachable_since, rtt, ...)."""
        return next((h for h in self.api("/api/hosts") if h["name"] == name), None)

    def host_panes(self, name: str) -> list[dict[str, Any]]:
        return [p for p in self.panes() if p["host"] == name]

    def watch(self) -> StreamWatch:
        """A viewer's live stream, recording each fleet report (fleetwatch.py); started,
        connected, and stopped by `close()`."""
        w = StreamWatch(self.url, self.viewer_token)
        w.start()
        if not w.connected.wait(30):
            raise AssertionError(f"the live stream did not connect: {w.error}")
        self.watches.append(w)
        return w

    def close(self) -> None:
        for w in self.watches:
            w.stop()
        super().close()
