"""WAL benchmark: how many database pages the writer writes a report, and which index
writes them.

On SQLite every commit appends each page the batch dirtied to the WAL, and a checkpoint
later copies each of them into the database file; at 10,000 reports/s the checkpoints,
not the fan-out, set the p99 of `bench/ingest.py`. Both costs go
with the pages a batch touches, and a report that lands in a random place of an index
(a pane's rows, keyed by pane) touches a page of its own once the index outgrows a
batch. This runs the writer in process on the workload of `bench/writer.py` (every
report a new state: a history row, a records rewrite and a ledger step), with automatic
checkpoints off, and prints the WAL pages written per report as the tables grow,
with the schema as it is and with each named index dropped (a what-if: the queries
that use them are not run here).

    uv run python bench/wal.py
    uv run python bench/wal.py --drop ix_history_pane --drop ix_waits_pane,ix_waits_pane_end
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine import machine_line, short
from writer import Reports

#: a WAL frame's header; the frame is that and one page
FRAME_HEADER = 24


async def measure(drop: list[str], stages: int, per_stage: int, batch: int) -> list[float]:
    """WAL pages per report in each stage of `per_stage` batches, the WAL emptied before
    each stage."""
    from paneboard_server.panes.writer import write
    from sqlalchemy import event

    async def prepare(conn: Any) -> None:
        for name in drop:
            await conn.exec_driver_sql(f'DROP INDEX "{name}"')

    work = Reports(panes=100, collectors=10)
    core = await work.open(prepare)

    @event.listens_for(work.engine.sync_engine, "connect")
    def _no_autocheckpoint(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.execute("PRAGMA wal_autocheckpoint=0")

    await work.engine.dispose()  # the pooled connections reopen with the pragma
    async with work.engine.connect() as c:
        frame = FRAME_HEADER + int((await c.exec_driver_sql("PRAGMA page_size")).scalar_one())
    wal = Path(f"{work.db}-wal")
    out = []
    for _ in range(stages):
        async with work.engine.connect() as c:
            await c.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
        before = wal.stat().st_size
        for _ in range(per_stage):
            await write(core, work.batch(batch))
        out.append((wal.stat().st_size - before) / frame / (per_stage * batch))
    await work.engine.dispose()
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--drop", action="append", default=[], help="indexes to drop, comma-separated; repeatable")
    p.add_argument("--stages", type=int, default=0, help="default 8 (4 in short mode)")
    p.add_argument("--batch", type=int, default=500, help="reports per batch (~50 ms at 10,000/s)")
    a = p.parse_args()
    stages = a.stages or int(short(8, 4))
    per_stage = 40
    print(machine_line("start"), flush=True)
    print(f"\n10 collectors x 100 panes, batches of {a.batch} reports; WAL pages a report per")
    print(f"stage of {per_stage * a.batch:,} reports, as history grows (stage 1 starts empty)")
    variants = [[], *([d for d in group.split(",") if d] for group in a.drop)]
    labels = ["schema as is" if not drop else "without " + ", ".join(drop) for drop in variants]
    width = max(len(label) for label in labels) + 2
    for drop, label in zip(variants, labels, strict=True):
        pages = asyncio.run(measure(drop, stages, per_stage, a.batch))
        print(f"{label:<{width}}" + " ".join(f"{x:5.2f}" for x in pages), flush=True)
    print(machine_line("end"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
