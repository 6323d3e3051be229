"""A pane flooding 100 MB of output with 10,000 reports a second, beside quiet panes.

Proves, on the whole real path (tmux behind sshd, collector, server):
* the collector's memory stays bounded (its RSS, sampled all along, grows by less
  than COLLECTOR_GROWTH_MB: no buffer follows the flood's size);
* other panes keep working: each change of a quiet pane made during the flood reaches
  the server (the figures are printed; their delay *goal* is measured by
  `bench/e2e.py --flood`, not asserted here: timed assertions on a shared 2-core
  machine would be flaky);
* the server is not flooded: reports are coalesced per pane, so what reaches the
  server (its `paneboard_reports` counter and the flood pane's history rows) is a
  small fraction of what the pane wrote;
* nothing is left wrong: the flood's last report (`done`, `final`) is what the board
  shows at the end.
"""

from __future__ import annotations

import re
import sys
import threading
import time
from pathlib import Path

import pytest
from support.wait import wait_for

from .stack import Beating

pytestmark = [pytest.mark.tmux, pytest.mark.sshd]

FLOOD = Path(__file__).with_name("flood.py")
MB = 100
RATE = 10_000
COLLECTOR_GROWTH_MB = 64


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        m = re.search(r"VmRSS:\s+(\d+) kB", f.read())
    return int(m.group(1)) / 1024 if m else 0.0


class Sampler(threading.Thread):
    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid, self.peak, self.stop = pid, 0.0, threading.Event()

    def run(self) -> None:
        while not self.stop.wait(0.1):
            try:
                self.peak = max(self.peak, rss_mb(self.pid))
            except OSError:
                return


def reports_counter(stack) -> float:
    import urllib.request

    req = urllib.request.Request(
        stack.url + "/metrics", headers={"Authorization": f"Bearer {stack.viewer_token}"}
    )
    with urllib.request.urlopen(req, timeout=10) as r:
        text = r.read().decode()
    return float(re.search(r"^paneboard_reports_total (\S+)$", text, re.M).group(1))


def test_flooding_pane_leaves_collector_bounded_and_server_coalesced(stack_factory) -> None:
    stack = stack_factory(grace=30)
    quiet = [Beating(stack, f"q{i}", "idle", "waiting") for i in range(2)]
    wait_for(lambda: all(stack.pane_row(q.pane)["state"] == "idle" for q in quiet), timeout=30, what="quiet")
    time.sleep(1)  # let start-up allocations settle before the baseline
    base = rss_mb(stack.collector.pid)
    sampler = Sampler(stack.collector.pid)
    sampler.start()
    before = reports_counter(stack)

    log = stack.tmp / "flood.log"
    flood_pane, flood_id = stack.new_pane("flood", f"exec {sys.executable} {FLOOD} {MB} {RATE} {log}")
    delays = []
    for i in range(6):  # the quiet panes change while the flood runs
        q = quiet[i % 2]
        state = ("blocked", "working")[i % 2 == 1]
        t0 = time.time()
        q.set(state, f"change {i}")
        wait_for(
            lambda q=q, i=i: (r := stack.pane_row(q.pane)) and r["msg"] == f"change {i}",
            timeout=30,
            what=f"quiet pane change {i} during the flood",
        )
        delays.append(time.time() - t0)
        if log.exists():
            break
    wait_for(log.exists, timeout=240, what="the flood to finish")
    wrote = dict(zip(*[iter(log.read_text().split())] * 2, strict=True))
    final = wait_for(
        lambda: (r := stack.pane_row(flood_pane)) and r["msg"] == "final" and r,
        timeout=60,
        what="the flood's last report on the board",
    )
    sampler.stop.set()
    sampler.join()
    assert final["state"] == "done"

    reports = int(wrote["reports"])
    ingested = reports_counter(stack) - before
    history = stack.history(flood_id, limit=1000)
    print(
        f"\nflood: wrote {int(wrote['bytes']) >> 20} MB and {reports} reports in {wrote['seconds']} s;"
        f" collector RSS {base:.0f} -> peak {sampler.peak:.0f} MB;"
        f" server ingested {ingested:.0f} pane reports, {len(history)} history rows for the flood pane;"
        f" quiet-pane changes seen after {', '.join(f'{d * 1000:.0f}' for d in delays)} ms"
        " (each includes up to 300 ms of heartbeat interval and a 50 ms API poll)"
    )
    assert int(wrote["bytes"]) >= MB << 20 and reports >= MB * 100
    assert sampler.peak - base < COLLECTOR_GROWTH_MB, (base, sampler.peak)
    assert ingested < reports / 20, (ingested, reports)  # coalesced per pane, not one per report
    assert len(history) < 1000
    assert stack.collector.poll() is None
    # the quiet panes are where they were left, and nothing is duplicated
    rows = stack.panes()
    assert len(rows) == len({(p["host"], p["pane"]) for p in rows}) == 4
