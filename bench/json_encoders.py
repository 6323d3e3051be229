"""JSON encoders side by side for the live stream's change frame: the stdlib (what the
server used), orjson (what `hub.sse_frame` uses now) and msgspec (when installed:
`uv run --with msgspec python bench/json_encoders.py`).

The frame is the hub's: `{"rev", "panes": [...], "gone"}` with 100 panes shaped as
`Pane.api()` returns them. Prints microseconds per frame and per pane (best of 15
rounds, process CPU time, so other load on the machine matters little) and checks that
every encoder's bytes are the stdlib's. Stops by itself in a few seconds.
"""

from __future__ import annotations

import json
import sys
import time
import timeit
from pathlib import Path
from typing import Any

import orjson
from paneboard_protocol import pane as pane_def

sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine import machine_line, short


def pane(i: int) -> dict[str, Any]:
    d: dict[str, Any] = dict.fromkeys(pane_def.API_FIELDS)
    now = time.time()
    d.update(
        id=i,
        host="build-03",
        tmux="default",
        pane=f"%{i}",
        session="main",
        window="0:agent",
        agent="claude",
        state="working",
        source="protocol",
        observable=True,
        process="claude",
        msg=f"editing src/módulo_{i}.py \u2014 step {i}",
        rev=100000 + i,
        since=now,
        last_seen=now,
        records=[
            {"id": "r1", "state": "working", "app": "claude-code", "msg": "editing", "updated": now, "seq": i}
        ],
    )
    return d


def main() -> int:
    print(machine_line("start"))
    body = {"rev": 123456, "panes": [pane(i) for i in range(100)], "gone": [7, 9]}
    std_bytes = json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()
    encoders: list[tuple[str, Any]] = [
        ("stdlib json", lambda: json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()),
        ("orjson", lambda: orjson.dumps(body)),
    ]
    try:
        import msgspec

        enc = msgspec.json.Encoder()
        encoders.append(("msgspec", lambda: enc.encode(body)))
    except ImportError:
        print("(msgspec not installed: uv run --with msgspec ... to compare it too)")
    rounds = int(short(15, 5))
    base = None
    print(f"{len(std_bytes)} bytes per 100-pane frame")
    for name, fn in encoders:
        same = fn() == std_bytes
        t = min(timeit.repeat(fn, number=200, repeat=rounds, timer=time.process_time)) / 200
        base = base or t
        print(f"{name:<12}{t * 1e6:9.1f} us/frame{t * 1e4:8.2f} us/pane{base / t:7.1f}x  same bytes: {same}")
    print(machine_line("end"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
