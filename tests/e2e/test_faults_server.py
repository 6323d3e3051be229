"""The server SIGKILLed under load and restarted on the same port and database.

* Acknowledged means stored: a collector of our own (the wire protocol spoken by hand,
  so we know exactly which message each ack covers) streams changes as fast as the
  server acks them; after the kill every change of every acked message is in the
  history, and the server's welcome on reconnect knows the acked seq.
* The real collector (tmux behind sshd) reconnects and resends by itself.
* Viewers resume without gaps: a Python SSE client reconnects with Last-Event-ID and
  ends with exactly the server's view (every pane, same rev and state); the page in
  Chromium reconnects by itself (EventSource sends Last-Event-ID) and shows a change
  made after the restart, without reloading.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest
import websockets
from support.reports import pane_report
from support.wait import wait_for

from .stack import Beating, open_board, wait_card

pytestmark = [pytest.mark.browser, pytest.mark.tmux, pytest.mark.sshd]

LOAD_PANES = 5


def update(pane: str, state: str, msg: str) -> dict[str, Any]:
    return pane_report(
        pane, state, host="load", t=time.time(), window="0", agent="claude", msg=msg, source="protocol"
    ).wire_json()


class LoadCollector:
    """Streams deltas (one op per load pane, state and msg changing every time) with a
    window of 32 unacked messages, until its connection dies."""

    def __init__(self, url: str, token: str) -> None:
        self.url = url.replace("http://", "ws://") + "/api/ingest"
        self.token = token
        self.acked = 0
        self.sent: dict[int, list[str]] = {}  # seq -> the msgs it carried
        self.welcome: dict[str, Any] | None = None

    async def connect(self) -> Any:
        ws = await websockets.connect(self.url, additional_headers={"Authorization": f"Bearer {self.token}"})
        await ws.send(json.dumps({"type": "hello", "protocol": 1, "stream": "load-1", "hosts": ["load"]}))
        self.welcome = json.loads(await ws.recv())
        return ws

    async def run(self, stop: threading.Event) -> None:
        ws = await self.connect()
        panes = [f"%{i}" for i in range(LOAD_PANES)]
        await ws.send(
            json.dumps(
                {
                    "type": "snapshot",
                    "seq": 1,
                    "t": time.time(),
                    "hosts": {"load": {"reachable": True, "error": None}},
                    "panes": [update(p, "idle", "start") for p in panes],
                }
            )
        )

        async def reader() -> None:
            async for raw in ws:
                m = json.loads(raw)
                if m.get("type") == "ack":
                    self.acked = max(self.acked, m["seq"])

        task = asyncio.create_task(reader())
        seq = 1
        try:
            while not stop.is_set() and not task.done():
                if seq - self.acked >= 32:
                    await asyncio.sleep(0.005)
                    continue
                seq += 1
                state = ("working", "blocked")[seq % 2]
                msgs = [f"s{seq}{p}" for p in panes]
                self.sent[seq] = msgs
                ops = [
                    {"op": "pane", "update": update(p, state, m)} for p, m in zip(panes, msgs, strict=True)
                ]
                await ws.send(json.dumps({"type": "delta", "seq": seq, "ops": ops}))
                await asyncio.sleep(0.01)
        except websockets.ConnectionClosed:
            pass
        await asyncio.wait([task], timeout=5)
        task.cancel()


class SSEViewer(threading.Thread):
    """A viewer's stream that reconnects with Last-Event-ID; keeps the panes it saw."""

    def __init__(self, url: str, token: str) -> None:
        super().__init__(daemon=True)
        self.url, self.token = url, token
        self.view: dict[int, dict[str, Any]] = {}
        self.last_id: str | None = None
        self.connects = 0
        self.resumed = 0
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            headers = {"Authorization": f"Bearer {self.token}"}
            if self.last_id:
                headers["Last-Event-ID"] = self.last_id
            try:
                with httpx.stream(
                    "GET", self.url + "/api/stream", headers=headers, timeout=httpx.Timeout(5, read=None)
                ) as r:
                    if r.status_code != 200:
                        time.sleep(0.2)
                        continue
                    self.connects += 1
                    self._read(r)
            except httpx.HTTPError:
                time.sleep(0.2)

    def _read(self, r: httpx.Response) -> None:
        ev: dict[str, Any] = {}
        for line in r.iter_lines():
            if self.done.is_set():
                return
            if line == "":
                if "data" in ev:
                    self._apply(ev)
                ev = {}
            elif not line.startswith(":"):
                k, _, v = line.partition(":")
                ev[k] = v[1:] if v.startswith(" ") else v

    def _apply(self, ev: dict[str, Any]) -> None:
        d = json.loads(ev["data"])
        if ev.get("event") == "snapshot":
            self.view = {p["id"]: p for p in d["panes"]}
        elif ev.get("event") == "change":
            self.resumed += bool(d.get("resumed"))
            for p in d["panes"]:  # a change always carries both lists (server hub.py)
                self.view[p["id"]] = p
            for g in d["gone"]:
                self.view.pop(g, None)
        if ev.get("id"):
            self.last_id = ev["id"]


def test_server_killed_under_load_loses_no_acked_change_and_viewers_resume(stack_factory, browser) -> None:
    stack = stack_factory(grace=30)
    beat = Beating(stack, "beat", "working", "before")
    page = open_board(browser, stack)
    page.evaluate("window.__sameDocument = true")
    wait_card(page, beat.id, "working")
    viewer = SSEViewer(stack.url, stack.viewer_token)
    viewer.start()

    load = LoadCollector(stack.url, stack.second_token)
    stop = threading.Event()
    with ThreadPoolExecutor(1) as pool:  # Playwright's sync API holds this thread's loop
        running = pool.submit(asyncio.run, load.run(stop))
        wait_for(lambda: load.acked >= 60, timeout=60, what="the load collector's acks")
        stack.kill_server()
        running.result(30)
    acked = load.acked
    assert acked >= 60

    stack.start_server()
    # every change the server acknowledged before the kill is in its history
    rows = {p["pane"]: p for p in stack.panes() if p["host"] == "load"}
    assert len(rows) == LOAD_PANES
    for pane, row in rows.items():
        msgs = {e["msg"] for e in stack.history(row["id"])}
        missing = [s for s in range(2, acked + 1) if f"s{s}{pane}" not in msgs]
        assert not missing, f"{pane}: acked seqs missing from history: {missing[:10]}"
    # and the server knows where the stream stood
    again = LoadCollector(stack.url, stack.second_token)

    async def hello() -> None:
        ws = await again.connect()
        await ws.close()

    with ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, hello()).result(30)
    assert again.welcome is not None and again.welcome["acked"] >= acked, again.welcome

    # the real collector comes back by itself; a change made now reaches both viewers
    beat.set("blocked", "after the restart")
    wait_for(
        lambda: (r := stack.pane_row(beat.pane)) and r["state"] == "blocked",
        timeout=60,
        what=f"the real collector resending\n{stack.log('collector1')}",
    )
    wait_card(page, beat.id, "blocked", timeout=60_000)
    assert page.evaluate("window.__sameDocument") is True  # resumed, not reloaded

    # the page's board is the server's, pane for pane: nothing missed across the gap
    def page_matches() -> bool:
        words = dict(
            page.eval_on_selector_all(
                ".card", "els => els.map(e => [e.dataset.id, e.querySelector('.word').textContent])"
            )
        )
        server = {str(p["id"]): p["state"] for p in stack.panes()}
        return set(words) == set(server) and all(words[i] == st for i, st in server.items() if st)

    wait_for(page_matches, timeout=30, what="the page's cards to equal the server's panes")

    def same_view() -> bool:
        server = {p["id"]: (p["rev"], p["state"]) for p in stack.panes()}
        mine = {i: (p["rev"], p["state"]) for i, p in viewer.view.items()}
        return server == mine

    wait_for(same_view, timeout=30, what="the SSE viewer's view to equal the server's")
    assert viewer.connects >= 2 and viewer.resumed >= 1
    viewer.done.set()
    page.context.close()
