"""Benchmark: /healthz latency while clients ask for a year of stats (issue #40, finding 3).

    uv run python bench/stats_loop.py [--waits 300000] [--clients 4] [--seconds 30] [--server-python PY]

Starts a real `paneboard serve` on a throw-away SQLite (or `--pg URL`, a database that
this creates and drops) holding `--waits` ledger rows over the last year, then measures
/healthz one request after another, first alone and then while `--clients` clients
each ask `GET /api/stats` for the last 366 days, one request after another, each for a
range of its own (a `to` a few seconds apart), so no answer comes from the cache, for at
least `--seconds` and until each client has had an answer. Prints
/healthz p50/p99/max alone and under the stats load, and the stats requests' median. To
measure another version of the server, pass that checkout's interpreter as
`--server-python` (e.g. `/work/main/.venv/bin/python`).
"""

from __future__ import annotations

import argparse
import itertools
import os
import random
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
from machine import machine_line, unwind_on_signals

DAY = 86400.0
HOSTS = 10
PANES = 50
AGENTS = ("claude", "codex", "gemini", "aider", "opencode", None)
FILES = ("parser", "store", "api", "cli")
PROMPTS = (
    "Allow edit of 'src/{f}.py' ({n} lines)?",
    "Run `pytest -q tests/test_{f}.py`?",
    "Allow `git push origin feature-{n}`?",
    "Which branch should I rebase onto?",
    "Keep the old API for {n} more release(s)?",
    "Log in to continue (token expired)",
)


def cli(py: str, db: str, *args: str) -> str:
    env = {**os.environ, "PANEBOARD_DB": db}
    return subprocess.run(
        [py, "-m", "paneboard.cli", *args], env=env, capture_output=True, text=True, check=True, timeout=300
    ).stdout.strip()


def ledger(n: int, now: float) -> list[tuple[object, ...]]:
    """`n` waits over the year before `now`: mostly minutes long, some over midnight, a few open."""
    rng = random.Random(40)
    rows = []
    for _ in range(n):
        h, p = rng.randrange(HOSTS), rng.randrange(PANES)
        start = now - 365 * DAY + rng.random() * 365 * DAY
        length = rng.expovariate(1 / 300) if rng.random() < 0.97 else rng.random() * 2 * DAY
        end: float | None = start + length
        if end is not None and (end > now or rng.random() < 0.001):
            end = None
        ended = None if end is None else rng.choice(("answered", "answered", "answered", "cancelled", "gone"))
        msg = rng.choice(PROMPTS).format(f=rng.choice(FILES), n=rng.randrange(200))
        state = "blocked" if rng.random() < 0.8 else "done"
        kind = rng.choice(("permission", "question", "auth"))
        agent = AGENTS[(h + p) % len(AGENTS)]
        where = (f"host{h}", "default", f"%{p}", f"work{p % 4}")
        rows.append((*where, agent, state, kind, msg, start, end, ended))
    return rows


def seed(db: str, pg: str | None, rows: list[tuple[object, ...]]) -> None:
    cols = "host, tmux, pane, session, agent, state, kind, msg, start_t, end_t, ended"
    if pg is None:
        conn = sqlite3.connect(db)
        conn.executemany(f"INSERT INTO waits ({cols}) VALUES ({', '.join('?' * 11)})", rows)
        conn.commit()
        conn.close()
        return
    import asyncio

    import asyncpg

    async def go() -> None:
        c = await asyncpg.connect(pg)
        await c.copy_records_to_table("waits", records=rows, columns=[x.strip() for x in cols.split(",")])
        await c.execute("ANALYZE waits")
        await c.close()

    asyncio.run(go())


def healthz_while(url: str, until: threading.Event) -> list[float]:
    """/healthz one request after another, on its own thread and connection."""
    out = []
    with httpx.Client(timeout=60) as c:
        while not until.is_set():
            t = time.perf_counter()
            r = c.get(url + "/healthz")
            out.append(time.perf_counter() - t)
            assert r.status_code == 200, r.text
    return out


def stats_while(url: str, token: str, now: float, offsets: itertools.count[int], until: threading.Event,
                out: list[float]) -> None:  # fmt: skip
    with httpx.Client(timeout=600, headers={"Authorization": f"Bearer {token}"}) as c:
        while not until.is_set():
            to = now - next(offsets)  # a range of its own: never served from the cache
            t = time.perf_counter()
            r = c.get(url + "/api/stats", params={"from": to - 366 * DAY, "to": to})
            out.append(time.perf_counter() - t)
            assert r.status_code == 200, r.text


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def measure(url: str, token: str, now: float, clients: int, seconds: float) -> dict[str, list[float]]:
    stop = threading.Event()
    alone: list[float] = []
    t = threading.Thread(target=lambda: alone.extend(healthz_while(url, stop)))
    t.start()
    time.sleep(min(5.0, seconds / 3))
    stop.set()
    t.join()
    stop = threading.Event()
    loaded: list[float] = []
    stats: list[float] = []
    offsets = itertools.count(1)
    askers = [threading.Thread(target=stats_while, args=(url, token, now, offsets, stop, stats))
              for _ in range(clients)]  # fmt: skip
    for a in askers:
        a.start()
    time.sleep(0.5)  # the first requests are under way
    t = threading.Thread(target=lambda: loaded.extend(healthz_while(url, stop)))
    t.start()
    # Until every client's first answer is in (however long that takes on a loaded
    # machine): a window shorter than a request would see only part of its work.
    t_end = time.monotonic() + seconds
    while time.monotonic() < t_end or len(stats) < clients:
        time.sleep(0.2)
    stop.set()
    t.join()
    for a in askers:
        a.join()
    return {"alone": alone, "loaded": loaded, "stats": stats}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--waits", type=int, default=300_000)
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--server-python", default=sys.executable)
    ap.add_argument("--pg", help="a PostgreSQL database URL to use (its waits are added to)")
    ap.add_argument("--port", type=int, default=18791)
    args = ap.parse_args()
    unwind_on_signals()
    print(machine_line(), flush=True)
    py = args.server_python
    now = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        db = args.pg or str(Path(tmp) / "bench.db")
        cli(py, db, "db", "upgrade")
        viewer = cli(py, db, "token", "create", "wall", "--viewer")
        t0 = time.perf_counter()
        pg = args.pg and args.pg.replace("postgresql+asyncpg://", "postgresql://")
        seed(db, pg, ledger(args.waits, now))
        print(f"{args.waits} waits seeded in {time.perf_counter() - t0:.1f} s", flush=True)
        cfg = Path(tmp) / "c.toml"
        cfg.write_text("[retention]\nmax_age_days = 400\n")  # the year stays
        log = open(Path(tmp) / "server.log", "wb")  # noqa: SIM115 - the server process owns it
        url = f"http://127.0.0.1:{args.port}"
        srv = subprocess.Popen(
            [py, "-m", "paneboard.cli", "serve", "--port", str(args.port), "--config", str(cfg)],
            env={**os.environ, "PANEBOARD_DB": db},
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            deadline = time.monotonic() + 120
            while True:
                try:
                    if httpx.get(url + "/healthz", timeout=1).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                if time.monotonic() > deadline or srv.poll() is not None:
                    print("server did not start", file=sys.stderr)
                    return 1
                time.sleep(0.1)
            got = measure(url, viewer, now, args.clients, args.seconds)
        finally:
            srv.terminate()
            srv.wait(10)
    ms = 1000
    print(machine_line(), flush=True)
    print(f"server: {py}; {args.waits} waits; {args.clients} clients, a year of stats, {args.seconds:g} s")
    print(f"{'':28}{'p50':>10}{'p99':>10}{'max':>10}{'n':>6}")
    for name, xs in (("/healthz alone", got["alone"]), ("/healthz, stats asked", got["loaded"]),
                     ("/api/stats (a year)", got["stats"])):  # fmt: skip
        print(f"{name:28}{statistics.median(xs) * ms:>8.1f}ms{pct(xs, 0.99) * ms:>8.1f}ms"
              f"{max(xs) * ms:>8.1f}ms{len(xs):>6}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
