"""Writer benchmark: the server's single writer alone, in process, on SQLite.

The ingest benchmark's latency is set by the writer's cycle (a report waits for the batch
in flight, then its own), and the cycle by the writer's time per report: at 10,000
reports/s every microsecond of it is 1 % of the one core. This measures that time with
nothing else on the event loop: K collectors' messages of M reports each, shaped as
`bench/ingest.py` sends them (every report a new state, so a history row, a records
rewrite and a ledger step each), committed in batches of B reports, and prints the
wall-clock and CPU microseconds per report, split into the operations' apply, the SQL
(`flush`, the commit) and the after-commit work (mirror, stream, listeners).

    uv run python bench/writer.py                 # 3 runs, median and spread
    uv run python bench/writer.py --compare-python /tmp/base/.venv/bin/python
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ingest import evidence_template
from machine import machine_line


class Reports:
    """The writer's in-process workload: a fresh migrated SQLite database, a loaded `Core`
    with one live-stream client, and collectors' messages shaped as `bench/ingest.py`
    sends them. Shared with `bench/wal.py`."""

    def __init__(self, panes: int, collectors: int) -> None:
        self.panes = panes
        self.collectors = collectors
        self.n: dict[int, int] = {}  # reports sent, per collector (each its own count)

    async def open(self, prepare: Any = None) -> Any:
        """Create the database (then `prepare(conn)`, e.g. to drop an index), the
        collectors' tokens and the core; commit every pane's first snapshot."""
        from paneboard_server.auth import accounts
        from paneboard_server.config import Config
        from paneboard_server.panes import writer
        from paneboard_server.panes.core import Core
        from paneboard_server.store.database import create_engine
        from paneboard_server.store.migrate import upgrade
        from paneboard_server.stream.hub import Hub
        from sqlalchemy import text

        self.dir = Path(tempfile.mkdtemp(prefix="pb-writer-"))
        self.db = self.dir / "w.db"
        url = f"sqlite+aiosqlite:///{self.db}"
        await asyncio.to_thread(upgrade, url)
        self.engine = create_engine(url)
        for i in range(self.collectors):
            await accounts.create_token(self.engine, f"c{i}", "collector")
        async with self.engine.begin() as c:
            self.ids = [r[0] for r in (await c.execute(text("SELECT id FROM tokens ORDER BY id"))).all()]
            if prepare is not None:
                await prepare(c)
        self.core = Core(self.engine, Config())
        await self.core.load()
        self.core.hub = Hub()
        self.core.hub.subscribe()  # one live-stream client, so the change frame is built
        self.evidence = evidence_template()
        self.seqs = dict.fromkeys(self.ids, 0)
        await writer.write(self.core, [self.message(cid, 0, True) for cid in self.ids])
        return self.core

    def batch(self, reports: int, per_message: int = 10) -> list[Any]:
        """Messages of `per_message` reports each, round-robin over the collectors."""
        ids = self.ids
        return [self.message(ids[i % len(ids)], per_message, False) for i in range(reports // per_message)]

    def message(self, cid: int, count: int, snapshot: bool) -> Any:
        from paneboard_protocol.pane import PaneKey, PaneUpdate, State
        from paneboard_server.panes.commands import Ingest

        record = self.evidence["records"][0]
        states: list[State] = ["working", "blocked", "working", "idle", "done"]
        now = time.time()
        ups = []
        for k in range(self.panes if snapshot else count):
            # Counted per collector, as bench/ingest.py's collectors count: a batch's
            # reports then spread over every collector's panes, as they do there (one
            # count for all had a batch of 500 reports land on 100 panes of 1,000).
            n = self.n[cid] = self.n.get(cid, 0) + 1
            p = k if snapshot else n % self.panes
            st: State = "idle" if snapshot else states[(n // self.panes) % len(states)]
            kind = "permission" if st == "blocked" else None
            rec = {**record, "state": st, "kind": kind, "msg": "r", "updated": now, "seq": n}
            ups.append(
                PaneUpdate(
                    key=PaneKey(f"host{cid}", "default", f"%{p}"),
                    session="main",
                    window="0:agent",
                    agent="claude",
                    state=st,
                    kind=kind,
                    msg="r",
                    source="protocol",
                    observable=True,
                    t=now,
                    process="claude",
                    evidence={**self.evidence, "records": [rec]},
                )
            )
        self.seqs[cid] += 1
        return Ingest(
            cid,
            "s",
            self.seqs[cid],
            "bench",
            snapshot_hosts=({f"host{cid}": _host()} if snapshot else None),
            panes=ups,
        )


async def measure(batches: int, batch: int, panes: int, collectors: int) -> dict[str, float]:
    from paneboard_server.panes import writer
    from paneboard_server.serve import tune_gc

    work = Reports(panes, collectors)
    core = await work.open()
    tune_gc()  # the collector thresholds `paneboard serve` runs its writer with
    phases = {"apply": 0.0, "flush": 0.0, "after": 0.0}
    real_flush, real_commit = writer.flush, writer._commit

    async def timed_flush(c: Any, tx: Any) -> None:
        t = time.perf_counter()
        await real_flush(c, tx)
        phases["flush"] += time.perf_counter() - t

    def timed_commit(c: Any, tx: Any) -> None:
        t = time.perf_counter()
        real_commit(c, tx)
        phases["after"] += time.perf_counter() - t

    # timed stand-ins for the writer's two phases, same signatures
    writer.flush, writer._commit = timed_flush, timed_commit  # type: ignore[assignment]
    wall = cpu = 0.0
    reports = 0
    for _ in range(batches):
        ops = work.batch(batch)
        t0, c0 = time.perf_counter(), time.process_time()
        await writer.write(core, ops)
        wall += time.perf_counter() - t0
        cpu += time.process_time() - c0
        reports += sum(len(o.panes) for o in ops)
    await work.engine.dispose()
    us = 1e6 / reports
    out = {"wall": wall * us, "cpu": cpu * us, **{k: v * us for k, v in phases.items()}}
    out["apply"] = out["wall"] - out["flush"] - out["after"]  # begin/apply/commit
    return out


def _host() -> Any:
    from paneboard_protocol.wire import HostState

    return HostState(True)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--batches", type=int, default=60)
    p.add_argument("--batch", type=int, default=1000, help="reports per batch")
    p.add_argument("--panes", type=int, default=100, help="panes per collector")
    p.add_argument("--collectors", type=int, default=10)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--compare-python", default="", help="also run with this interpreter (before/after)")
    p.add_argument("--one", action="store_true", help=argparse.SUPPRESS)  # a child: one run, JSON out
    a = p.parse_args()
    if a.one:
        print(json.dumps(asyncio.run(measure(a.batches, a.batch, a.panes, a.collectors))))
        return 0
    print(machine_line("start"), flush=True)
    pythons = [("this", sys.executable)] + ([("compared", a.compare_python)] if a.compare_python else [])
    results: dict[str, list[dict[str, float]]] = {name: [] for name, _ in pythons}
    args = ["--one", "--batches", str(a.batches), "--batch", str(a.batch), "--panes", str(a.panes)]
    args += ["--collectors", str(a.collectors)]
    here = str(Path(__file__).resolve())
    for _ in range(a.runs):  # interleaved, so a busy stretch of the machine hits both
        for name, python in pythons:
            res = subprocess.run([python, here, *args], capture_output=True, text=True, check=True)
            results[name].append(json.loads(res.stdout.strip().splitlines()[-1]))
    print(f"\n{a.collectors} collectors x {a.panes} panes, batches of {a.batch} reports, {a.runs} runs")
    print(f"{'code':<10}" + "".join(f"{k + ' us':>16}" for k in ("wall", "cpu", "apply", "flush", "after")))
    for name, runs in results.items():
        cells = []
        for k in ("wall", "cpu", "apply", "flush", "after"):
            vals = [r[k] for r in runs]
            cells.append(f"{statistics.median(vals):>7.1f} ({min(vals):.0f}-{max(vals):.0f})")
        print(f"{name:<10}" + "".join(f"{c:>16}" for c in cells))
    print("per report: median (min-max) of the runs; apply includes BEGIN and COMMIT")
    print(machine_line("end"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
