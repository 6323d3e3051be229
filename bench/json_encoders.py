"""JSON encoders side by side for the live stream's change frame: the stdlib, orjson
(what `hub.sse_frame` used on the pane dicts `Pane.api()` built) and msgspec on the
same dicts, and what the server does now: a `PaneView` per pane (`Pane.view`) encoded
by msgspec.

The frame is the hub's: `{"rev", "panes": [...], "gone"}` with 100 panes. Prints
microseconds per frame and per pane (best of 15 rounds, process CPU time, so other load
on the machine matters little), encoding alone and building plus encoding (the dict as
the server built it before views: `msgspec.structs.asdict` less the fields the API
leaves out, plus the host's; the view with `Pane.view`), and checks that every
encoder's bytes are the stdlib's. Stops by itself in a few seconds.
"""

from __future__ import annotations

import json
import sys
import time
import timeit
from pathlib import Path
from typing import Any

import msgspec
import orjson
from paneboard_protocol import pane as pane_def
from paneboard_protocol.views import StreamChange
from paneboard_server.panes.model import Host, Pane

sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine import machine_line, short

HOST = Host(1, 1, "build-03")
NOW = time.time()


def pane(i: int) -> Pane:
    return Pane(
        id=i,
        host_id=1,
        tmux="default",
        pane=f"%{i}",
        session="main",
        window="0:agent",
        agent="claude",
        state="working",
        kind=None,
        source="protocol",
        observable=True,
        process="claude",
        msg=f"editing src/módulo_{i}.py \u2014 step {i}",
        rev=100000 + i,
        since=NOW,
        last_seen=NOW,
        records=(
            {
                "id": "r1",
                "state": "working",
                "app": "claude-code",
                "msg": "editing",
                "updated": NOW,
                "seq": i,
            },
        ),
        evidence={"osc": {"state": "working", "t": NOW}},
    )


_NOT_API = tuple(
    f.name for f in msgspec.structs.fields(Pane) if f.name not in {"id", "tmux", "pane", *pane_def.API_FIELDS}
)


def as_dict(p: Pane, host: Host, collector: str | None) -> dict[str, Any]:
    """A pane as the server built it before views (`Pane.api` and `Core.api`)."""
    out = msgspec.structs.asdict(p)
    for name in _NOT_API:
        del out[name]
    reachable = host.reachable
    out["host"] = host.name
    out["collector"] = collector
    out["reachable"] = reachable
    out["stale"] = not reachable
    out["unreachable_since"] = host.unreachable_since if not reachable else None
    out["input"] = False
    return out


def main() -> int:
    print(machine_line("start"))
    panes = [pane(i) for i in range(100)]
    body = {"rev": 123456, "panes": [as_dict(p, HOST, "laptop") for p in panes], "gone": [7, 9]}
    views = StreamChange(rev=123456, panes=[p.view(HOST, "laptop") for p in panes], gone=[7, 9])
    std_bytes = json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()
    enc = msgspec.json.Encoder()

    def dicts_then(encode: Any) -> Any:
        return lambda: encode(
            {"rev": 123456, "panes": [as_dict(p, HOST, "laptop") for p in panes], "gone": [7, 9]}
        )

    def views_then_msgspec() -> bytes:
        return enc.encode(
            StreamChange(rev=123456, panes=[p.view(HOST, "laptop") for p in panes], gone=[7, 9])
        )

    rows: list[tuple[str, Any]] = [
        ("stdlib json, dicts", lambda: json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()),
        ("orjson, dicts", lambda: orjson.dumps(body)),
        ("msgspec, dicts", lambda: enc.encode(body)),
        ("msgspec, views", lambda: enc.encode(views)),
        ("build dicts + orjson", dicts_then(orjson.dumps)),
        ("build views + msgspec", views_then_msgspec),
    ]
    rounds = int(short(15, 5))
    base = None
    print(f"{len(std_bytes)} bytes per 100-pane frame")
    for name, fn in rows:
        same = fn() == std_bytes
        t = min(timeit.repeat(fn, number=200, repeat=rounds, timer=time.process_time)) / 200
        base = base or t
        print(f"{name:<24}{t * 1e6:9.1f} us/frame{t * 1e4:8.2f} us/pane{base / t:7.1f}x  same bytes: {same}")
    print(machine_line("end"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
