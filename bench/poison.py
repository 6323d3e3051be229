"""Poison benchmark: an honest collector's ack rate alone, then beside a peer that sends
poison messages as fast as the server refuses them (a seq past 64 bits, NUL in a pane key,
in a msg and in a record, NaN in evidence), on SQLite and PostgreSQL.

    uv run python bench/poison.py                 # both databases, 2 x (2.5 s + 2.5 s)
    uv run python bench/poison.py --db sqlite --duration 3

The honest collector keeps `--window` deltas in flight (one pane op each) and counts the
sequence numbers acknowledged; if the server closes it, it reconnects and counts the
close. Goal: its rate beside the poisoner within 10 % of its rate alone, never closed.
`--refused-only` sends only what the server refuses (a snapshot refused each time);
`log/16s` is the server's log lines about the poisoner per 16 s beside it (the server
backs off a token refused again and again, and logs a burst once).
Phases alternate (alone, beside, alone, beside) after a 1 s warm-up, so load from other
processes on the machine hits both alike. Runtime: under a minute by default.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from ingest import free_port, make_tokens, prepare_db
from machine import machine_line, short, unwind_on_signals


def pane(host: str, pane_id: str, **extra: Any) -> dict[str, Any]:
    return {
        "key": {"host": host, "tmux": "default", "pane": pane_id},
        "session": "main",
        "window": "0",
        "agent": "claude",
        "state": "working",
        "kind": None,
        "msg": None,
        "source": None,
        "observable": True,
        "t": time.time(),
        **extra,
    }


POISON = [
    {"type": "snapshot", "seq": 18446744073709551616, "t": 1.7e9, "panes": [pane("evil", "%1")]},
    {"type": "snapshot", "seq": 1, "t": 1.7e9, "panes": [pane("evil", "%\x001")]},
    {"type": "snapshot", "seq": 1, "t": 1.7e9, "panes": [pane("evil", "%1", msg="a\x00b")]},
    {"type": "snapshot", "seq": 1, "t": 1.7e9, "panes": [pane("evil", "%1", records=[{"msg": "\x00"}])]},
    {"type": "snapshot", "seq": 1, "t": 1.7e9, "panes": [pane("evil", "%1", evidence={"x": float("nan")})]},
]


async def _connect(url: str, token: str, stream: str) -> Any:
    import websockets

    ws = await websockets.connect(url, additional_headers={"Authorization": f"Bearer {token}"})
    await ws.send(json.dumps({"type": "hello", "protocol": 1, "stream": stream}))
    await ws.recv()
    return ws


async def honest(url: str, token: str, until: float, window: int, out: dict[str, int]) -> None:
    import websockets

    n = 0
    while time.time() < until:
        n += 1
        ws = await _connect(url, token, f"honest{n}")
        seq = acked = 1
        await ws.send(
            json.dumps({"type": "snapshot", "seq": 1, "t": time.time(), "panes": [pane("good", "%0")]})
        )
        try:
            while time.time() < until:
                while seq - acked < window:
                    seq += 1
                    op = {"op": "pane", "update": pane("good", f"%{seq % 100}", msg=f"m{seq}")}
                    await ws.send(json.dumps({"type": "delta", "seq": seq, "ops": [op]}))
                m = json.loads(await asyncio.wait_for(ws.recv(), max(0.05, until - time.time())))
                if m.get("type") == "ack":
                    out["acks"] += m["seq"] - acked
                    acked = m["seq"]
        except TimeoutError:
            pass
        except websockets.ConnectionClosed:
            out["closed"] += 1
        await ws.close()


REFUSED = [POISON[0], POISON[1], POISON[4]]  # the ones refused, not cleaned


async def poisoner(
    url: str, token: str, until: float, out: dict[str, int], refused_only: bool = False
) -> None:
    """One poison message per connection: refused ones end in a close, cleaned ones
    (NUL in a msg or a record is removed on ingest) in an ack. A connection the server
    delays is given up at the phase's end."""
    import websockets

    kinds = REFUSED if refused_only else POISON
    i = 0
    while time.time() < until:
        i += 1
        try:
            ws = await asyncio.wait_for(_connect(url, token, f"evil{i}"), max(0.01, until - time.time()))
        except (TimeoutError, websockets.ConnectionClosed):
            continue
        await ws.send(json.dumps(kinds[i % len(kinds)]))
        try:
            while json.loads(await asyncio.wait_for(ws.recv(), 5)).get("type") != "ack":
                pass
            out["cleaned"] += 1
            await ws.close()
        except websockets.ConnectionClosed:
            out["refused"] += 1


def _poison_process(url: str, token: str, until: float, refused_only: bool, q: Any) -> None:
    out = {"refused": 0, "cleaned": 0}
    asyncio.run(poisoner(url, token, until, out, refused_only))
    q.put(out)


def run(kind: str, args: argparse.Namespace) -> dict[str, float]:
    tmp = Path(tempfile.mkdtemp(prefix="pb-poison-"))
    url, cleanup = prepare_db(kind, tmp, sys.executable)
    server = None
    try:
        tokens, _ = make_tokens(url, 2)
        port = free_port()
        log = open(tmp / "server.log", "wb")  # noqa: SIM115
        server = subprocess.Popen(
            [sys.executable, "-m", "paneboard.cli", "serve", "--port", str(port), "--db", url],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        import httpx

        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise SystemExit(f"server did not start: {(tmp / 'server.log').read_text()[-2000:]}")
            time.sleep(0.1)
        ws_url = f"ws://127.0.0.1:{port}/api/ingest"

        async def phase(with_poison: bool) -> tuple[dict[str, int], dict[str, int]]:
            until = time.time() + args.duration
            h = {"acks": 0, "closed": 0}
            p = {"refused": 0, "cleaned": 0}
            jobs = [honest(ws_url, tokens[0], until, args.window, h)]
            if with_poison and args.own_process:
                # As an attacker runs: its own process, at its own pace.
                ctx = multiprocessing.get_context("spawn")
                q = ctx.Queue()
                proc = ctx.Process(
                    target=_poison_process, args=(ws_url, tokens[1], until, args.refused_only, q)
                )
                proc.start()
                await asyncio.gather(*jobs)
                p = await asyncio.to_thread(q.get)
                proc.join()
                return h, p
            if with_poison:
                jobs.append(poisoner(ws_url, tokens[1], until, p, args.refused_only))
            await asyncio.gather(*jobs)
            return h, p

        saved = args.duration
        args.duration = 1.0
        asyncio.run(phase(False))  # warm-up, not counted
        args.duration = saved
        total = {"alone": 0.0, "beside": 0.0, "closed": 0.0, "poison": 0.0, "log": 0.0}
        for _ in range(args.rounds):  # interleaved, so a noisy neighbour hits both alike
            alone, _ = asyncio.run(phase(False))
            beside, p = asyncio.run(phase(True))
            total["alone"] += alone["acks"]
            total["beside"] += beside["acks"]
            total["closed"] += beside["closed"] + alone["closed"]
            total["poison"] += p["refused"] + p["cleaned"]
        spent = args.duration * args.rounds
        total["log"] = (tmp / "server.log").read_text(errors="replace").count("collector c1:") * 16
        return {k: (v if k == "closed" else v / spent) for k, v in total.items()}
    finally:
        if server is not None:
            server.send_signal(signal.SIGTERM)
            try:
                server.wait(10)
            except subprocess.TimeoutExpired:
                server.kill()
        cleanup()
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--db", choices=["sqlite", "postgres", "both"], default="both")
    p.add_argument("--duration", type=float, default=short(2.5, 1.5), help="seconds per phase")
    p.add_argument("--rounds", type=int, default=2, help="alone/beside pairs per database")
    p.add_argument("--window", type=int, default=32, help="honest deltas in flight")
    p.add_argument("--refused-only", action="store_true", help="only poison the server refuses")
    p.add_argument("--own-process", action="store_true", help="the poisoner in a process of its own")
    args = p.parse_args()
    unwind_on_signals()
    kinds = ["sqlite", "postgres"] if args.db == "both" else [args.db]
    print(machine_line("start"))
    print(
        f"{'db':<10} {'alone acks/s':>13} {'beside acks/s':>14} {'ratio':>7} {'closed':>7} {'poison/s':>9}"
        f" {'log/16s':>8}"
    )
    for kind in kinds:
        r = run(kind, args)
        ratio = r["beside"] / r["alone"] if r["alone"] else 0.0
        print(
            f"{kind:<10} {r['alone']:>13.0f} {r['beside']:>14.0f} {ratio:>7.2f} "
            f"{r['closed']:>7.0f} {r['poison']:>9.0f} {r['log']:>8.0f}",
            flush=True,
        )
    print(machine_line("end"))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    raise SystemExit(main())
