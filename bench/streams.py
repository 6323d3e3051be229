"""Benchmark: /healthz latency while many /api/stream connections open at once.

    uv run python bench/streams.py [--panes 5000] [--streams 200] [--server-python PY]

Starts a real `paneboard serve` on a throw-away SQLite, fills it with `--panes` live
panes through one collector, then opens `--streams` SSE connections at once (each
reads its first frame and stays open) while a collector keeps changing a pane, and
meanwhile measures /healthz one request after another. Prints the /healthz median and
max beside the baseline (the same measurement with no streams opening). To measure
another version of the server, pass that checkout's interpreter as `--server-python`
(e.g. `/work/main/.venv/bin/python`). The streams open and close in $BENCH_ROUNDS
rounds (3), and the server's RSS is printed before, with and after each, to show
whether memory comes back after the clients leave. Bounded: about 20-60 s.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import websockets
from machine import unwind_on_signals, wait_healthy


def cli(py: str, db: str, *args: str) -> str:
    env = {**os.environ, "PANEBOARD_DB": db}
    return subprocess.run(
        [py, "-m", "paneboard.cli", *args], env=env, capture_output=True, text=True, check=True, timeout=120
    ).stdout.strip()


def pane(i: int, msg: str) -> dict[str, object]:
    return {
        "key": {"host": "bench", "tmux": "default", "pane": f"%{i}"},
        "session": "main",
        "window": "0",
        "agent": "claude",
        "state": "working",
        "kind": None,
        "msg": msg,
        "t": time.time(),
        "source": "protocol",
        "observable": True,
    }


def healthz_while(url: str, until: threading.Event) -> list[float]:
    """/healthz one request after another, from its own thread (and connection), so
    the benchmark's own stream reading does not delay the measurement."""
    out = []
    with httpx.Client(timeout=120) as c:
        while not until.is_set():
            t = time.perf_counter()
            c.get(url + "/healthz")
            out.append(time.perf_counter() - t)
            time.sleep(0.01)
    return out


ROUNDS = int(
    os.environ.get("BENCH_ROUNDS", "1" if os.environ.get("PB_BENCH_SHORT", "") not in ("", "0") else "3")
)


def rss_mb(pid: int) -> float:
    """The server's resident memory, from /proc (what the issue's "RSS is not given back" measured)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def run(
    url: str, viewer: str, collector: str, panes: int, streams: int, pid: int
) -> tuple[list[float], list[float], dict[str, float]]:
    ws = await websockets.connect(
        url.replace("http", "ws") + "/api/ingest",
        additional_headers={"Authorization": f"Bearer {collector}"},
        max_size=1 << 26,
        ping_interval=None,  # a blocked server must not make the benchmark's collector give up
    )
    await ws.send(json.dumps({"type": "hello", "stream": "bench", "version": "bench"}))
    await ws.recv()
    seq = 1
    body = [pane(i, f"pane {i} " + "x" * 60) for i in range(panes)]
    await ws.send(json.dumps({"type": "snapshot", "seq": seq, "t": time.time(), "panes": body}))
    while json.loads(await ws.recv()).get("seq") != seq:
        pass

    rss = {"before": rss_mb(pid)}
    stop = threading.Event()
    baseline_task = asyncio.create_task(asyncio.to_thread(healthz_while, url, stop))
    await asyncio.sleep(3)
    stop.set()
    baseline = await baseline_task

    async def churn(done: threading.Event) -> None:
        nonlocal seq
        while not done.is_set():
            seq += 1
            op = {"op": "pane", "update": pane(seq % panes, f"change {seq}")}
            await ws.send(json.dumps({"type": "delta", "seq": seq, "t": time.time(), "ops": [op]}))
            await asyncio.sleep(0.05)

    limits = httpx.Limits(max_connections=streams + 10)
    loaded: list[float] = []
    for round_ in range(1, ROUNDS + 1):  # later rounds shows whether what the first kept is reused or leaks
        async with httpx.AsyncClient(timeout=httpx.Timeout(120), limits=limits) as c:
            opened: list[object] = []

            async def open_one(c: httpx.AsyncClient = c, opened: list[object] = opened) -> None:
                cm = c.stream("GET", url + "/api/stream", headers={"Authorization": f"Bearer {viewer}"})
                r = await cm.__aenter__()
                async for _ in r.aiter_bytes():
                    break  # the first frame arrived
                opened.append(cm)

            done = threading.Event()
            measuring = asyncio.create_task(asyncio.to_thread(healthz_while, url, done))
            churner = asyncio.create_task(churn(done))
            await asyncio.gather(*(open_one() for _ in range(streams)))
            done.set()
            if round_ == 1:
                loaded = await measuring
            else:
                await measuring
            await churner
            rss[f"open {round_}"] = rss_mb(pid)
            for cm in opened:
                await cm.__aexit__(None, None, None)  # type: ignore[attr-defined]  # httpx stream context
        await asyncio.sleep(3)  # the server notices the closed streams and lets their queues go
        rss[f"after {round_}"] = rss_mb(pid)
    await ws.close()
    return baseline, loaded, rss


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--panes", type=int, default=5000)
    ap.add_argument("--streams", type=int, default=200)  # under the per-address cap (256)
    ap.add_argument("--server-python", default=sys.executable)
    ap.add_argument("--port", type=int, default=18777)
    args = ap.parse_args()
    unwind_on_signals()
    py = args.server_python
    with tempfile.TemporaryDirectory() as tmp:
        db = str(Path(tmp) / "bench.db")
        cli(py, db, "db", "upgrade")
        collector = cli(py, db, "token", "create", "bench")
        viewer = cli(py, db, "token", "create", "wall", "--viewer")
        cfg = Path(tmp) / "c.toml"
        cfg.write_text(f"[limits]\nmax_message_bytes = {1 << 26}\n")
        log = open(Path(tmp) / "server.log", "wb")  # noqa: SIM115 - the server process owns it
        url = f"http://127.0.0.1:{args.port}"
        srv = subprocess.Popen(
            [py, "-m", "paneboard.cli", "serve", "--port", str(args.port), "--config", str(cfg)],
            env={**os.environ, "PANEBOARD_DB": db},
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            try:
                wait_healthy(url, srv, Path(tmp) / "server.log")
            except RuntimeError as exc:
                print(exc, file=sys.stderr)
                return 1
            t = time.perf_counter()
            baseline, loaded, rss = asyncio.run(
                run(url, viewer, collector, args.panes, args.streams, srv.pid)
            )
            took = time.perf_counter() - t
        finally:
            srv.terminate()
            srv.wait(10)
    ms = 1000
    print(f"machine at end: {os.cpu_count()} cores, load {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"{args.panes} panes, {args.streams} streams opening at once (run {took:.1f} s)")
    print(f"{'':24}{'median':>10}{'max':>10}{'n':>6}")
    for name, xs in (("/healthz, baseline", baseline), ("/healthz, streams open", loaded)):
        print(f"{name:24}{statistics.median(xs) * ms:>8.1f}ms{max(xs) * ms:>8.1f}ms{len(xs):>6}")
    print("server RSS (MB): " + ", ".join(f"{k} {v:.0f}" for k, v in rss.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
