"""A userspace stand-in for `netem` on one link: a TCP relay that delays and "loses".

    python3 linkrelay.py --listen ADDR:PORT --to ADDR:PORT [--delay S] [--loss P] [--control FILE]

This kernel has no `sch_netem` (`tc qdisc add ... netem`: "Specified qdisc kind is
unknown"), so the fleet harness puts this relay in front of each test host's sshd, in
the host's own network namespace: the collector's TCP connection ends here, and the
bytes go on to sshd on the namespace's loopback.

What it models, per direction of each connection:
* a fixed one-way delay: every chunk read is written `delay` seconds later, in order;
* loss as TCP shows it to the application: with probability `loss` per 1448-byte
  segment a chunk is held back one retransmission timeout (Linux: at least 200 ms;
  here 200 ms + the round trip, doubled for each further loss in a row), and since TCP
  delivers in order, everything behind it waits too (head-of-line blocking).

What it does not model: packets (the kernel's TCP between the collector and this relay
sees neither delay nor loss, so its congestion window, RTT estimate and retransmissions
stay those of a perfect link), bandwidth limits, jitter, reordering, duplicate packets,
and connection set-up (the SYN handshake is not delayed; the first bytes are). A real
link drop is `ip link set down` on the veth, not this relay.

`--control FILE`: on SIGHUP the relay re-reads `{"delay": S, "loss": P}` from FILE and
applies it to every byte read from then on (the harness's "10 % loss for a minute").
`--listen-netns NS` listens inside another namespace and connects from this one: the
harness's way to let a collector in the "board" namespace reach a server on this
machine's loopback. Stdlib only: it runs with any python3 in the namespace.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ctypes
import json
import os
import random
import signal
import socket
import sys
import threading
from pathlib import Path

SEGMENT = 1448  # bytes of payload in one Ethernet-sized TCP segment
MIN_RTO = 0.2  # Linux's TCP_RTO_MIN
HIGH_WATER = 4 << 20  # bytes held per direction before the relay stops reading
CLONE_NEWNET = 0x40000000


class Link:
    """The link's current properties (changed on SIGHUP) and its loss dice."""

    def __init__(self, delay: float, loss: float, seed: int | None) -> None:
        self.delay = delay
        self.loss = loss
        self.rng = random.Random(seed)

    def stall(self, nbytes: int) -> float:
        """Extra seconds a chunk of `nbytes` waits: one RTO per lost segment in a row."""
        if self.loss <= 0:
            return 0.0
        segments = max(1, -(-nbytes // SEGMENT))
        p_chunk = 1 - (1 - self.loss) ** segments
        rto, extra = MIN_RTO + 2 * self.delay, 0.0
        while self.rng.random() < p_chunk:
            extra += rto
            rto *= 2
            p_chunk = self.loss  # the retransmission is one segment
        return extra


async def pipe(
    src: asyncio.StreamReader, src_w: asyncio.StreamWriter, dst: asyncio.StreamWriter, link: Link
) -> None:
    """Copy src to dst, each chunk due `delay` (+ a stall) after it was read, in order;
    a dst that fails closes src (`src_w`), so the far side learns of it as it would."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[tuple[float, bytes | None]] = asyncio.Queue()
    held = 0
    room = asyncio.Event()
    room.set()

    async def send() -> None:
        nonlocal held
        while True:
            due, data = await queue.get()
            wait = due - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            if data is None:
                with contextlib.suppress(OSError):
                    if dst.can_write_eof():
                        dst.write_eof()
                return
            try:
                dst.write(data)
                await dst.drain()
            except OSError:
                src_w.close()
                return
            held -= len(data)
            if held < HIGH_WATER:
                room.set()

    sender = asyncio.create_task(send())
    last = 0.0
    try:
        while data := await src.read(65536):
            due = max(loop.time() + link.delay + link.stall(len(data)), last)
            last = due
            held += len(data)
            queue.put_nowait((due, data))
            if held >= HIGH_WATER:
                room.clear()
                await room.wait()
        queue.put_nowait((max(loop.time() + link.delay, last), None))
        await sender
    finally:
        sender.cancel()


def socket_in(ns: str, addr: tuple[str, int]) -> socket.socket:
    """A listening socket made inside network namespace `ns` (a thread joins it with
    setns and ends; the socket stays in the namespace it was made in)."""
    box: list[socket.socket | BaseException] = []

    def make() -> None:
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            fd = os.open(f"/run/netns/{ns}", os.O_RDONLY)
            try:
                if libc.setns(fd, CLONE_NEWNET) != 0:
                    raise OSError(ctypes.get_errno(), f"setns {ns}")
            finally:
                os.close(fd)
            s = socket.create_server(addr, reuse_port=False)
            s.setblocking(False)
            box.append(s)
        except BaseException as exc:
            box.append(exc)

    t = threading.Thread(target=make)
    t.start()
    t.join()
    if isinstance(box[0], BaseException):
        raise box[0]
    return box[0]


async def serve(
    listen: tuple[str, int], to: tuple[str, int], link: Link, listen_ns: str | None = None
) -> None:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_r, up_w = await asyncio.open_connection(*to)
        except OSError:
            writer.close()
            return
        try:
            await asyncio.gather(pipe(reader, writer, up_w, link), pipe(up_r, up_w, writer, link))
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            for w in (writer, up_w):
                w.close()

    if listen_ns:
        server = await asyncio.start_server(handle, sock=socket_in(listen_ns, listen))
    else:
        server = await asyncio.start_server(handle, *listen, reuse_address=True)
    print(f"listening on {listen[0]}:{listen[1]}", flush=True)
    async with server:
        await server.serve_forever()


def _addr(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    return host, int(port)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--listen", type=_addr, required=True)
    ap.add_argument("--to", type=_addr, required=True)
    ap.add_argument("--delay", type=float, default=0.0, help="one-way delay, seconds")
    ap.add_argument("--loss", type=float, default=0.0, help="per-segment loss probability")
    ap.add_argument("--control", type=Path, help="JSON {delay, loss} re-read on SIGHUP")
    ap.add_argument("--seed", type=int)
    ap.add_argument("--listen-netns", metavar="NS", help="listen inside this network namespace")
    args = ap.parse_args()
    link = Link(args.delay, args.loss, args.seed)

    def reload() -> None:
        with contextlib.suppress(OSError, ValueError):
            conf = json.loads(args.control.read_text())
            link.delay = float(conf.get("delay", link.delay))
            link.loss = float(conf.get("loss", link.loss))

    async def run() -> None:
        if args.control is not None:
            asyncio.get_running_loop().add_signal_handler(signal.SIGHUP, reload)
        await serve(args.listen, args.to, link, args.listen_netns)

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(run())
    return 0


if __name__ == "__main__":
    sys.exit(main())
