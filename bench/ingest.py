"""Ingest benchmark: K collectors x M panes sending reports at a rate to `paneboard serve`,
with S live-stream (SSE) clients reading.

Prints, per row, sustained reports/s ingested, p50/p99 delay from a report leaving its
collector to its arrival at every SSE client, the server's peak memory and CPU per
report, and the cores used by the server(s), the SSE readers and the bench collectors
(all three share the machine). Rows, in one run: the batched writer on SQLite and on
PostgreSQL; the baseline, the same with the writer committing one operation per
transaction (PANEBOARD_WRITER_BATCH=1), i.e. what batching buys; and on PostgreSQL 2
and 4 `serve` processes on one database (LISTEN/NOTIFY fan-out), collectors and SSE
clients spread round-robin over them, beside the single process.

    uv run python bench/ingest.py                       # everything, goal settings (~3 min)
    PB_BENCH_SHORT=1 uv run python bench/ingest.py      # the same rows, 6 s each
    uv run python bench/ingest.py --db sqlite --rate 2000 3000 4000 5000 --no-baseline
    PB_BENCH_PROFILE=/tmp/prof.txt uv run python bench/ingest.py --db sqlite --no-baseline

Goal on a 2-core machine: 5,000 reports/s with p99 <= 250 ms to 100 SSE clients. The SSE
clients run in their own process and read raw sockets; only one report in
`--probe-every` carries a timestamp (found with bytes.find, so the readers cost
little), and every client measures every probe. `--rate` takes several rates (a sweep:
where p99 crosses 250 ms). PB_BENCH_PROFILE=FILE samples the (first) server of each row
with py-spy during the measured window and writes the top of its profile to
FILE.<row> (e.g. FILE.sqlite-10000-compared-1p-batch4000). Runtime is
bounded: warm-up + duration per row.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine import cpu_seconds, machine_line, profile, short, unwind_on_signals, wait_healthy

PG_ADMIN = os.environ.get("PANEBOARD_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --- the SSE readers (a child process) ----------------------------------------------------
class SSEReader(asyncio.Protocol):
    """One live-stream client: reads every byte the server sends and times every probe.

    The readers stand for browsers on other machines, but here they share the server's
    two cores, so they are kept cheap: a protocol fed by the loop (no StreamReader and no
    `wait_for` task per read, which cost the readers 0.58 of a core at 10,000 reports/s),
    one `find` pass over each frame for the probes, nothing else parsed."""

    def __init__(self, request: bytes, stats: dict[str, Any], start_at: float, closed: asyncio.Future[None]):
        self.request = request
        self.stats = stats
        self.lat: list[float] = stats["lat"]
        self.start_at = start_at
        self.closed = closed
        self.parts: list[bytes] = []

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        transport.write(self.request)

    def data_received(self, data: bytes) -> None:
        now = time.time()
        self.stats["bytes"] += len(data)
        # A frame (~0.3 MB at 10,000 reports/s) arrives in several reads: keep them apart
        # and look for the frames' end only in what is new (and the byte before it), so a
        # frame costs one copy and one scan, not one per read.
        before = self.parts[-1][-1:] if self.parts else b""
        end = (before + data).rfind(b"\n\n") - len(before)
        if end < -1:
            self.parts.append(data)
            return
        frames = b"".join([*self.parts, data[: end + 2]])
        self.parts = [data[end + 2 :]] if end + 2 < len(data) else []
        if now < self.start_at:
            return
        i = frames.find(b'"msg":"p')
        while i >= 0:
            j = frames.find(b'"', i + 8)
            with contextlib.suppress(ValueError):
                self.lat.append(now - float(frames[i + 8 : j]))
            i = frames.find(b'"msg":"p', j)

    def eof_received(self) -> bool | None:
        self.stats["eof"] += 1
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.closed.done():
            self.closed.set_result(None)


async def sse_client(port: int, token: str, until: float, stats: dict[str, Any], start_at: float) -> None:
    loop = asyncio.get_running_loop()
    request = (
        f"GET /api/stream HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\n"
        "Accept: text/event-stream\r\n\r\n".encode()
    )
    closed: asyncio.Future[None] = loop.create_future()
    transport, _ = await loop.create_connection(
        lambda: SSEReader(request, stats, start_at, closed), "127.0.0.1", port
    )
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(asyncio.shield(closed), max(0.1, until - time.time()))
    transport.close()


def sse_worker(ports: list[int], token: str, clients: int, until: float, start_at: float, out: str) -> None:
    stats: dict[str, Any] = {"lat": [], "bytes": 0, "eof": 0}

    async def main() -> None:
        await asyncio.gather(
            *(sse_client(ports[i % len(ports)], token, until, stats, start_at) for i in range(clients))
        )

    asyncio.run(main())
    Path(out).write_text(json.dumps(stats))


# --- the collectors (this process) -----------------------------------------------------------
def _encode(message: dict[str, Any]) -> str:
    """A message as the collector encodes it (the wire's own encoder, msgspec): 1.6 us a
    report against 14.9 with `json.dumps`, which made the bench's collectors take 0.15 of
    a core more than the real ones would, on the cores they share with the server."""
    from paneboard_protocol import wire

    return wire.encode(message)


def evidence_template() -> dict[str, Any]:
    from paneboard_protocol.classifier import PaneClassifier
    from paneboard_protocol.events import StatusReport

    c = PaneClassifier()
    now = time.time()
    c.set_process(now, "claude", 100, observable=True)
    c.feed(now, [StatusReport(0, None, "working", app="claude-code")])
    return c.evidence()


async def collector(
    port: int,
    token: str,
    idx: int,
    panes: int,
    rate: float,
    until: float,
    probe_every: int,
    counters: dict[str, int],
) -> None:
    import websockets

    evidence = evidence_template()
    record = evidence["records"][0]
    base = {
        "session": "main",
        "window": "0:agent",
        "agent": "claude",
        "kind": None,
        "source": "protocol",
        "observable": True,
        "title": None,
        "progress": None,
        "since": None,
        "process": "claude",
        "records": [],
        "evidence": evidence,
    }
    async with websockets.connect(
        f"ws://127.0.0.1:{port}/api/ingest",
        additional_headers={"Authorization": f"Bearer {token}"},
        max_size=1 << 22,
        compression=None,
        ping_interval=None,  # an overloaded server stops reading (backpressure): no pongs
    ) as ws:
        await ws.send(json.dumps({"type": "hello", "stream": uuid.uuid4().hex, "version": "bench"}))
        json.loads(await ws.recv())
        host = f"host{idx}"
        snap = [
            {
                **base,
                "key": {"host": host, "tmux": "default", "pane": f"%{p}"},
                "state": "idle",
                "msg": "r",
                "t": time.time(),
            }
            for p in range(panes)
        ]
        seq = 1
        await ws.send(
            json.dumps(
                {
                    "type": "snapshot",
                    "seq": seq,
                    "t": time.time(),
                    "hosts": {host: {"reachable": True}},
                    "panes": snap,
                }
            )
        )

        async def drain() -> None:
            async for _ in ws:
                pass

        reader = asyncio.create_task(drain())
        try:
            await _send_loop(ws, rate, until, panes, probe_every, counters, base, evidence, record, host, seq)
        except websockets.ConnectionClosed as exc:
            counters["disconnects"] = counters.get("disconnects", 0) + 1
            print(f"collector {idx}: {exc}", file=sys.stderr)
        reader.cancel()


async def _send_loop(
    ws: Any,
    rate: float,
    until: float,
    panes: int,
    probe_every: int,
    counters: dict[str, int],
    base: dict[str, Any],
    evidence: dict[str, Any],
    record: dict[str, Any],
    host: str,
    seq: int,
) -> None:
    states = ["working", "blocked", "working", "idle", "done"]
    tick = 0.01
    per_tick = rate * tick
    owed = 0.0
    n = 0
    nxt = time.monotonic()
    while time.time() < until:
        owed += per_tick
        k = int(owed)
        owed -= k
        if k:
            ops = []
            now = time.time()
            for _ in range(k):
                n += 1
                p = n % panes
                st = states[(n // panes) % len(states)]
                msg = f"p{now:.6f}" if n % probe_every == 0 else "r"
                kind = "permission" if st == "blocked" else None
                # The evidence must say what the report says: the server re-derives the
                # state from it (as it does for a real collector's reports).
                rec = {**record, "state": st, "kind": kind, "msg": msg, "updated": now, "seq": n}
                update = {
                    **base,
                    "key": {"host": host, "tmux": "default", "pane": f"%{p}"},
                    "state": st,
                    "kind": kind,
                    "msg": msg,
                    "t": now,
                    "evidence": {**evidence, "records": [rec]},
                }
                ops.append({"op": "pane", "update": update})
            seq += 1
            await ws.send(_encode({"type": "delta", "seq": seq, "ops": ops}))
            counters["sent"] += k
        nxt += tick
        await asyncio.sleep(max(0.0, nxt - time.monotonic()))


def counters_of(port: int, token: str) -> tuple[float, float]:
    """(reports ingested, writer transactions committed) so far, from `/metrics`."""
    import httpx

    text = httpx.get(f"http://127.0.0.1:{port}/metrics", headers={"Authorization": f"Bearer {token}"}).text
    got = {"paneboard_reports_total": 0.0, "paneboard_commits_total": 0.0}
    for line in text.splitlines():
        name = line.split(" ", 1)[0]
        if name in got:
            got[name] = float(line.split()[-1])
    return got["paneboard_reports_total"], got["paneboard_commits_total"]


def peak_rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))]


# --- one configuration --------------------------------------------------------------------------
def prepare_db(kind: str, tmp: Path, python: str) -> tuple[str, Any]:
    """A fresh database brought up by the migrations of the checkout that will serve it
    (`python`'s): a compared, older checkout cannot read a schema newer than its own."""

    def upgrade(url: str) -> None:
        code = "import sys; from paneboard_server.store.migrate import upgrade; upgrade(sys.argv[1])"
        subprocess.run([python, "-c", code, url], check=True)

    if kind == "sqlite":
        url = f"sqlite:///{tmp / 'bench.db'}"
        upgrade("sqlite+aiosqlite:///" + str(tmp / "bench.db"))
        return url, lambda: None
    import asyncpg
    from sqlalchemy.engine import make_url

    name = f"pb_bench_{uuid.uuid4().hex[:8]}"
    admin = make_url(PG_ADMIN).set(drivername="postgresql").render_as_string(hide_password=False)

    async def run(sql: str) -> None:
        conn = await asyncpg.connect(admin)
        try:
            await conn.execute(sql)
        finally:
            await conn.close()

    asyncio.run(run(f'CREATE DATABASE "{name}"'))
    url = make_url(PG_ADMIN).set(database=name).render_as_string(hide_password=False)
    upgrade(url.replace("postgresql://", "postgresql+asyncpg://"))
    return url, lambda: asyncio.run(run(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


def make_tokens(url: str, collectors: int) -> tuple[list[str], str]:
    from paneboard_server.auth import accounts
    from paneboard_server.store.database import create_engine, resolve_url

    async def go() -> tuple[list[str], str]:
        engine = create_engine(resolve_url(url))
        try:
            cols = [await accounts.create_token(engine, f"c{i}", "collector") for i in range(collectors)]
            return cols, await accounts.create_token(engine, "bench", "viewer")
        finally:
            await engine.dispose()

    return asyncio.run(go())


def start_server(url: str, batch: int, tmp: Path, i: int, python: str) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    env = {**os.environ, "PANEBOARD_WRITER_BATCH": str(batch)}
    log = open(tmp / f"server{i}.log", "wb")  # noqa: SIM115
    proc = subprocess.Popen(
        # another checkout may carry newer migrations: let its server bring the schema up
        [python, "-m", "paneboard.cli", "serve", "--port", str(port), "--db", url]
        + (["--migrate"] if python != sys.executable else []),
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
        start_new_session=True,
    )
    return proc, port


def run_one(
    kind: str, args: argparse.Namespace, batch: int, servers: int = 1, rate: float = 0, python: str = ""
) -> dict[str, Any]:
    """One configuration: `servers` processes on one database (PostgreSQL when more than
    one), collectors and SSE clients spread round-robin over them."""
    rate = rate or args.rate[0]
    python = python or sys.executable
    tmp = Path(tempfile.mkdtemp(prefix="pb-bench-"))
    url, cleanup = prepare_db(kind, tmp, python)
    procs: list[subprocess.Popen[bytes]] = []
    try:
        col_tokens, viewer = make_tokens(url, args.collectors)
        ports = []
        for i in range(servers):
            proc, port = start_server(url, batch, tmp, i, python)
            procs.append(proc)
            ports.append(port)
        for i, (proc, port) in enumerate(zip(procs, ports, strict=True)):
            wait_healthy(f"http://127.0.0.1:{port}", proc, tmp / f"server{i}.log", timeout=30)
        t_start = time.time() + 1.0
        start_at = t_start + args.warmup
        until = start_at + args.duration
        out = tmp / "sse.json"
        sse = subprocess.Popen(
            [
                sys.executable,
                __file__,
                "--_sse-worker",
                ",".join(map(str, ports)),
                viewer,
                str(args.sse),
                str(until),
                str(start_at),
                str(out),
            ]
        )
        time.sleep(1.0)
        counters = {"sent": 0}
        cpu: dict[str, float] = {}

        def ingested() -> tuple[float, float]:
            each = [counters_of(p, viewer) for p in ports]
            return sum(r for r, _ in each), sum(c for _, c in each)

        async def load() -> tuple[float, float]:
            tasks = [
                collector(
                    ports[i % servers],
                    col_tokens[i],
                    i,
                    args.panes,
                    rate / args.collectors,
                    until,
                    args.probe_every,
                    counters,
                )
                for i in range(args.collectors)
            ]
            gather = asyncio.gather(*tasks)
            while time.time() < start_at:
                await asyncio.sleep(0.05)
            before = await asyncio.to_thread(ingested)
            cpu["server"] = sum(cpu_seconds(p.pid) for p in procs)
            cpu["sse"] = cpu_seconds(sse.pid)
            cpu["self"] = time.process_time()
            side = "compared" if python != sys.executable else "this"
            profile(procs[0].pid, args.duration, f"{kind}-{rate:g}-{side}-{servers}p-batch{batch}")
            await gather
            return before

        before, commits_before = asyncio.run(load())
        after, commits_after = ingested()
        cpu_used = sum(cpu_seconds(p.pid) for p in procs) - cpu["server"]
        sse_cpu = cpu_seconds(sse.pid) - cpu["sse"]
        self_cpu = time.process_time() - cpu["self"]
        sse.wait(args.duration + 30)
        stats = json.loads(out.read_text())
        if os.environ.get("PB_BENCH_DEBUG"):
            print({k: v for k, v in stats.items() if k != "lat"}, file=sys.stderr)
        lat = stats["lat"]
        return {
            "db": kind,
            "batch": batch,
            "servers": servers,
            "offered": rate,
            "reports_per_s": (after - before) / args.duration,
            "p50_ms": pct(lat, 0.5) * 1000,
            "p99_ms": pct(lat, 0.99) * 1000,
            "samples": len(lat),
            "sse_mb_per_s": stats["bytes"] / args.duration / 1e6,
            "eof": stats["eof"],
            "peak_rss_mb": max(peak_rss_mb(p.pid) for p in procs),
            "batches_per_s": (commits_after - commits_before) / args.duration,
            "cpu_us_per_report": cpu_used / max(1.0, after - before) * 1e6,
            "server_cpu_share": cpu_used / args.duration,
            "sse_cpu_share": sse_cpu / args.duration,
            "collectors_cpu_share": self_cpu / args.duration,
            "load": os.getloadavg()[0],
            "python": python,
        }
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
        cleanup()
        if os.environ.get("PB_BENCH_KEEP"):
            print("kept", tmp, file=sys.stderr)
        else:
            shutil.rmtree(tmp, ignore_errors=True)


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--_sse-worker":
        ports, token, clients, until, start_at, out = sys.argv[2:8]
        sse_worker(
            [int(p) for p in ports.split(",")], token, int(clients), float(until), float(start_at), out
        )
        return 0
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--collectors", type=int, default=10)
    p.add_argument("--panes", type=int, default=100, help="panes per collector")
    p.add_argument(
        "--rate", type=float, nargs="+", default=[5000], help="reports/s offered, all collectors together"
    )
    p.add_argument("--sse", type=int, default=100, help="SSE clients")
    p.add_argument("--duration", type=float, default=short(15, 6))
    p.add_argument("--warmup", type=float, default=short(3, 2))
    p.add_argument("--probe-every", type=int, default=20)
    p.add_argument("--db", choices=["sqlite", "postgres", "both"], default="both")
    p.add_argument("--servers", type=int, nargs="+", default=[1, 2, 4], help="process counts on PostgreSQL")
    p.add_argument("--no-baseline", action="store_true", help="skip the one-commit-per-operation baseline")
    p.add_argument(
        "--compare-python",
        default="",
        help="also run the batched single-process rows with this interpreter's paneboard "
        "(e.g. another checkout's .venv/bin/python): before/after in one run",
    )
    args = p.parse_args()
    unwind_on_signals()
    print(machine_line("start"), flush=True)
    kinds = ["sqlite", "postgres"] if args.db == "both" else [args.db]
    rows = []
    for kind in kinds:
        for rate in args.rate:
            if args.compare_python:
                rows.append(run_one(kind, args, 4000, 1, rate, args.compare_python))
            rows.append(run_one(kind, args, 4000, 1, rate))
        if not args.no_baseline:
            rows.append(run_one(kind, args, 1, 1, args.rate[-1]))
        if kind == "postgres":
            for n in args.servers:
                if n > 1:
                    rows.append(run_one(kind, args, 4000, n, args.rate[-1]))
    print(
        f"\n{args.collectors} collectors x {args.panes} panes, {args.sse} SSE clients, {args.duration:.0f} s "
        "measured per row (goal: 5000/s offered with p99 <= 250 ms)"
    )
    head = (
        f"{'db':<9}{'writer':<20}{'offered':>8}{'reports/s':>10}{'p50 ms':>9}{'p99 ms':>9}{'probes':>8}"
        f"{'SSE MB/s':>9}{'RSS MB':>7}{'batch/s':>8}{'us/rep':>7}{'srv':>6}{'sse':>6}{'col':>6}{'load':>6}"
    )
    print(head)
    for r in rows:
        label = "baseline: 1/commit" if r["batch"] == 1 else f"batched, {r['servers']} proc"
        if r["python"] != sys.executable:
            label = "compared: " + label
        print(
            f"{r['db']:<9}{label:<20}{r['offered']:>8.0f}{r['reports_per_s']:>10.0f}{r['p50_ms']:>9.1f}"
            f"{r['p99_ms']:>9.1f}{r['samples']:>8}{r['sse_mb_per_s']:>9.1f}{r['peak_rss_mb']:>7.0f}{r['batches_per_s']:>8.1f}"
            f"{r['cpu_us_per_report']:>7.0f}{r['server_cpu_share']:>6.2f}{r['sse_cpu_share']:>6.2f}"
            f"{r['collectors_cpu_share']:>6.2f}{r['load']:>6.1f}"
        )
    print("batch/s: the writer's transactions committed a second (each one SSE frame to every reader);")
    print("us/rep: server CPU time per ingested report (incl. its SSE fan-out), all processes together;")
    print("srv/sse/col: cores used by the server process(es), the SSE readers and the bench collectors;")
    print("load: 1-min load average at the end of the row. The three share the machine's cores with")
    print("anything else running, so on a busy machine their sum bounds what the first row can reach.")
    print(machine_line("end"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
