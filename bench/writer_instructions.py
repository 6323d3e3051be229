"""The writer's instructions a report, counted under valgrind: a figure the machine's speed
does not move.

On the shared two-core machine the same writer's CPU a report moves by ±10 % from one
run to the next, more than any one of its remaining costs, so a change of 1-3 % cannot
be told apart in time. A count of instructions can: `valgrind --tool=callgrind` runs
the writer of `bench/writer.py` in process (10 collectors x 100 panes, batches of 500
reports, every report a new state), once writing 5 batches and once 25, and the
difference divided by the 10,000 reports between them is the writer's instructions a
report, start-up and the workload's own making left out. It comes out the same to
~0.3 % run after run. Each run takes a few minutes (valgrind is ~50x slower).

    uv run python bench/writer_instructions.py
    uv run python bench/writer_instructions.py --compare-python /tmp/base/.venv/bin/python

Needs `valgrind` on PATH (`apt-get install valgrind`).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine import machine_line

BATCH = 500
BUILT = 25  # batches made by every run, whatever it writes: the runs differ only in writing
FEW, MANY = 5, 25
_COLLECTED = re.compile(rb"Collected : (\d+)")


async def _write(batches: int) -> None:
    """The child: the workload of `bench/writer.py`, `batches` of it written."""
    from paneboard_server.panes.writer import write
    from paneboard_server.serve import tune_gc
    from writer import Reports  # bench/writer.py

    work = Reports(100, 10)
    core = await work.open()
    built = [work.batch(BATCH) for _ in range(BUILT)][:batches]
    tune_gc()  # the collector thresholds `paneboard serve` runs its writer with
    for ops in built:
        await write(core, ops)
    await work.engine.dispose()


def _instructions(python: str, batches: int) -> int:
    """Instructions of one child run under callgrind (its whole life)."""
    with tempfile.TemporaryDirectory(prefix="pb-callgrind-") as tmp:
        res = subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                f"--callgrind-out-file={tmp}/out",
                python,
                str(Path(__file__).resolve()),
                "--one",
                str(batches),
            ],
            capture_output=True,
            env={**os.environ, "PYTHONHASHSEED": "0"},  # the same dict layouts every run
            check=True,
        )
    found = _COLLECTED.search(res.stderr)
    if found is None:
        raise RuntimeError(f"no count from valgrind: {res.stderr[-500:]!r}")
    return int(found.group(1))


def per_report(python: str, pool: ThreadPoolExecutor) -> float:
    few, many = pool.map(lambda n: _instructions(python, n), (FEW, MANY))
    return (many - few) / ((MANY - FEW) * BATCH)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--compare-python", default="", help="also count with this interpreter (before/after)")
    p.add_argument("--one", type=int, help=argparse.SUPPRESS)  # a child: write this many batches
    a = p.parse_args()
    if a.one is not None:
        asyncio.run(_write(a.one))
        return 0
    if shutil.which("valgrind") is None:
        print("valgrind is not installed (apt-get install valgrind)", file=sys.stderr)
        return 2
    print(machine_line("start"), flush=True)
    pythons = [("this", sys.executable)] + ([("compared", a.compare_python)] if a.compare_python else [])
    print(f"the writer alone, 10 collectors x 100 panes, batches of {BATCH}: {MANY} - {FEW} batches")
    with ThreadPoolExecutor(2) as pool:  # the two runs of a checkout side by side
        for name, python in pythons:
            print(f"{name:<10} {per_report(python, pool):>10,.0f} instructions a report", flush=True)
    print(machine_line("end"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
