"""Benchmark: `GET /api/panes` on a board of many panes, this checkout beside another revision.

    uv run python bench/api_panes.py [--panes 5000] [--requests 40] [--baseline main]

Starts a real `paneboard serve` on a throw-away SQLite, fills it with `--panes` live
panes through one collector (each with a record and a message with non-ASCII text),
then asks `GET /api/panes` `--requests` times, one after another, and `GET
/api/panes/{id}` as often. Prints each route's median and p90 latency and the server's
CPU time per request (utime + stime from /proc, so other load on the machine matters
less), and the answer's size. With `--baseline REV` the same runs against the server as
it was at git revision REV (its sources and migrations first on PYTHONPATH,
`collector.py`'s `baseline_tree`), in alternating rounds, and checks that both answer the same bytes
(the panes' `last_seen`, the server's own clock, set aside). Bounded: about a minute.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import websockets
from collector import baseline_tree
from machine import cpu_seconds, machine_line, short, unwind_on_signals, wait_healthy

T = 1_900_000_000.0  # every report's time: the same panes in every run


def cli(env: dict[str, str], db: str, *args: str) -> str:
    return subprocess.run(
        [sys.executable, "-m", "paneboard.cli", *args],
        env={**env, "PANEBOARD_DB": db},
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout.strip()


def pane(i: int) -> dict[str, object]:
    return {
        "key": {"host": f"build-{i % 7}", "tmux": "default", "pane": f"%{i}"},
        "session": "main",
        "window": "0:agent",
        "agent": "claude",
        "state": ("working", "blocked", "done", "idle")[i % 4],
        "kind": "question" if i % 4 == 1 else None,
        "msg": f"editing src/módulo_{i}.py — step {i}",
        "t": T,
        "since": T - i,
        "source": "protocol",
        "observable": True,
        "title": "✳ Claude Code",
        "progress": i % 101,
        "records": [{"id": "r1", "state": "working", "app": "claude-code", "updated": T, "seq": i}],
    }


async def fill(url: str, collector: str, panes: int) -> None:
    ws = await websockets.connect(
        url.replace("http", "ws") + "/api/ingest",
        additional_headers={"Authorization": f"Bearer {collector}"},
        max_size=1 << 26,
        ping_interval=None,
    )
    await ws.send(json.dumps({"type": "hello", "stream": "bench", "version": "bench"}))
    await ws.recv()
    await ws.send(
        json.dumps({"type": "snapshot", "seq": 1, "t": T, "panes": [pane(i) for i in range(panes)]})
    )
    while json.loads(await ws.recv()).get("seq") != 1:
        pass
    await ws.close()


def measure(url: str, viewer: str, pid: int, path: str, n: int) -> tuple[list[float], float, bytes]:
    """`n` requests one after another: their latencies, the server's CPU per request, the last body."""
    headers = {"Authorization": f"Bearer {viewer}"}
    out: list[float] = []
    body = b""
    with httpx.Client(timeout=60, headers=headers) as c:
        c.get(url + path).raise_for_status()  # warm: the first answer builds what later ones reuse
        cpu = cpu_seconds(pid)
        for _ in range(n):
            t = time.perf_counter()
            r = c.get(url + path)
            out.append(time.perf_counter() - t)
            r.raise_for_status()
            body = r.content
        cpu = (cpu_seconds(pid) - cpu) / n
    return out, cpu, body


def baseline_server(rev: str, dest: Path) -> dict[str, str]:
    """The server as it was at `rev` (`collector.py`'s `baseline_tree`), with that
    revision's migrations beside its sources, where a checkout's server finds them."""
    env = baseline_tree(rev, dest)
    tar = subprocess.run(
        ["git", "-C", str(Path(__file__).resolve().parents[1]), "archive", rev, "migrations"],
        check=True,
        capture_output=True,
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=tar, check=True)
    return env


def one_server(env: dict[str, str], panes: int, requests: int, port: int) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as tmp:
        db = str(Path(tmp) / "bench.db")
        cli(env, db, "db", "upgrade")
        collector = cli(env, db, "token", "create", "bench")
        viewer = cli(env, db, "token", "create", "wall", "--viewer")
        cfg = Path(tmp) / "c.toml"
        cfg.write_text(f"[limits]\nmax_message_bytes = {1 << 26}\n")
        url = f"http://127.0.0.1:{port}"
        with open(Path(tmp) / "server.log", "wb") as log:
            srv = subprocess.Popen(
                [sys.executable, "-m", "paneboard.cli", "serve", "--port", str(port), "--config", str(cfg)],
                env={**env, "PANEBOARD_DB": db},
                stdout=log,
                stderr=subprocess.STDOUT,
            )
            try:
                wait_healthy(url, srv, Path(tmp) / "server.log")
                asyncio.run(fill(url, collector, panes))
                all_ = measure(url, viewer, srv.pid, "/api/panes", requests)
                one = measure(url, viewer, srv.pid, "/api/panes/1", requests)
            finally:
                srv.terminate()
                srv.wait(10)
    return {"all": all_, "one": one}


def same_bytes(a: bytes, b: bytes) -> bool:
    """Equal but for `last_seen`, the time the server received the report."""
    at = re.compile(rb'"last_seen":[0-9.e+-]+')
    return at.sub(b'"last_seen":0', a) == at.sub(b'"last_seen":0', b)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--panes", type=int, default=5000)
    ap.add_argument("--requests", type=int, default=int(short(40, 10)))
    ap.add_argument("--rounds", type=int, default=int(short(2, 1)))
    ap.add_argument("--baseline", help="a git revision to measure beside this checkout (e.g. main)")
    ap.add_argument("--port", type=int, default=18779)
    args = ap.parse_args()
    unwind_on_signals()
    print(machine_line("start"))
    with tempfile.TemporaryDirectory() as base_dir:
        who: list[tuple[str, dict[str, str]]] = [("now", dict(os.environ))]
        if args.baseline:
            who.append((args.baseline[:10], baseline_server(args.baseline, Path(base_dir))))
        runs: dict[str, list[dict[str, object]]] = {name: [] for name, _ in who}
        for _ in range(args.rounds):
            for name, env in who:
                runs[name].append(one_server(env, args.panes, args.requests, args.port))
    ms = 1000
    print(f"{args.panes} panes, {args.requests} requests a route a round, {args.rounds} round(s)")
    print(f"{'who':<12}{'route':<18}{'median':>10}{'p90':>10}{'server CPU':>14}{'bytes':>12}")
    for name, rs in runs.items():
        for route, key in (("/api/panes", "all"), ("/api/panes/1", "one")):
            lat = [x for r in rs for x in r[key][0]]  # type: ignore[index]
            cpu = statistics.median(r[key][1] for r in rs)  # type: ignore[index]
            size = len(rs[-1][key][2])  # type: ignore[index]
            p90 = statistics.quantiles(lat, n=10)[-1]
            print(f"{name:<12}{route:<18}{statistics.median(lat) * ms:>8.2f}ms{p90 * ms:>8.2f}ms"
                  f"{cpu * ms:>12.2f}ms{size:>12}")  # fmt: skip
    if args.baseline:
        base = runs[who[1][0]][-1]
        now = runs["now"][-1]
        for key in ("all", "one"):
            same = same_bytes(now[key][2], base[key][2])  # type: ignore[index]
            print(f"same bytes as {who[1][0]} ({key}): {same}")
    print(machine_line("end"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
