"""Byte builders for the reports test panes write (the spec's own wire forms)."""

from __future__ import annotations

import base64
import time


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def osc7501(pairs: str) -> bytes:
    return b"\x1b]7501;" + pairs.encode() + b"\x1b\\"


def thinkterm(agent: str, state: str, ts: int | None = None, extra: str = "") -> bytes:
    ts = int(time.time()) if ts is None else ts
    value = f"v1;agent={agent};state={state};ts={ts}{extra}"
    return b"\x1b]1337;SetUserVar=THINKTERM_AGENT=" + b64(value).encode() + b"\x07"


def reporter(*steps: tuple[float, bytes], then_sleep: float = 120) -> str:
    """A python3 program that writes each chunk after its delay, then stays in front."""
    parts = ["import os,time"]
    for delay, data in steps:
        parts.append(f"time.sleep({delay})")
        parts.append(f"os.write(1, bytes.fromhex('{data.hex()}'))")
    parts.append(f"time.sleep({then_sleep})")
    return 'python3 -c "' + "; ".join(parts) + '"'
