"""What reached the board from a fleet's scripted agents, as a viewer's live stream
(`GET /api/stream`, SSE) delivered it, and when.

The server's history keeps state changes only; the fleet's agents change their `msg`
with every report (`<host>/<n> <seq> <time written>`), so the stream is where each
report shows up: the same events the dashboard turns into cards, which makes the
stream's arrival time the "card" proxy of bench/fleet.py (no browser: 500 cards in
Chromium would cost this 2-core machine more than the fleet itself). A stream the
server ends (`reset`) is resumed from its last event id, as browsers do.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass

from support.fleet import parse_msg


@dataclass(frozen=True, slots=True)
class Seen:
    host: str
    label: str  # the agent's pane label, host/n
    seq: int
    written: float  # when the agent wrote it (its own clock: this machine's)
    received: float  # when the stream delivered it here

    @property
    def key(self) -> tuple[str, int, float]:
        return self.label, self.seq, self.written


class StreamWatch(threading.Thread):
    """A viewer's live stream in a thread, recording each fleet report once."""

    def __init__(self, url: str, token: str) -> None:
        super().__init__(daemon=True)
        self.url = url
        self.token = token
        self.seen: dict[tuple[str, int, float], Seen] = {}
        self.lock = threading.Lock()
        self.stopping = False
        self.error: BaseException | None = None
        self.connected = threading.Event()

    def run(self) -> None:
        import httpx

        last_id: str | None = None
        while not self.stopping:
            headers = {"Authorization": f"Bearer {self.token}"}
            if last_id is not None:
                headers["Last-Event-ID"] = last_id
            try:
                with httpx.stream(
                    "GET", self.url + "/api/stream", headers=headers, timeout=httpx.Timeout(10, read=None)
                ) as r:
                    self.connected.set()
                    data: list[str] = []
                    for line in r.iter_lines():
                        if self.stopping:
                            return
                        if line.startswith("id:"):
                            last_id = line[3:].strip()
                        elif line.startswith("data:"):
                            data.append(line[5:].strip())
                        elif line == "" and data:
                            self._event(json.loads("\n".join(data)), time.time())
                            data = []
            except (httpx.HTTPError, OSError, ValueError) as exc:
                self.error = exc
                time.sleep(0.5)

    def _event(self, ev: dict, now: float) -> None:
        with self.lock:
            for p in ev.get("panes", []):
                m = parse_msg(p.get("msg"))
                if m is not None and m not in self.seen:
                    self.seen[m] = Seen(p["host"], m[0], m[1], m[2], now)

    def keys(self, host: str | None = None) -> set[tuple[str, int, float]]:
        with self.lock:
            return {k for k, s in self.seen.items() if host is None or s.host == host}

    def all(self) -> list[Seen]:
        with self.lock:
            return list(self.seen.values())

    def stop(self) -> None:
        self.stopping = True
