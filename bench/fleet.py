"""Fleet benchmark: one collector (or several) watching N hosts over links of different
delay and loss, each host a network namespace with its own sshd and tmux.

    uv run python bench/fleet.py [--hosts 50] [--panes 10] [--interval 5]
        [--classes lan:1:0:20,wan:40:0:20,far:150:0.01:10] [--jumped 5]
        [--seconds 30] [--runs 3] [--collectors 1 2] [--no-faults] [--json FILE]

Needs root (ip netns). The harness is tests/support/fleet.py: per host a namespace, a
veth pair to the collectors' namespace ("board"), sshd, the link stand-in
tests/support/linkrelay.py (this kernel has no netem: a fixed one-way delay per direction
and loss as RTO stalls; see its docstring for what it does not model), and a tmux
server whose `--panes` scripted agents each write an OSC 7501 report every
`--interval` seconds, logging when. A class `NAME:RTT_MS:LOSS:COUNT` gives COUNT hosts
links of that round trip (half of it each way) and per-segment loss. The last
`--jumped` hosts are reached through the first host (`ProxyJump`, their path is both
links). One `paneboard agent --config` (every host by its alias in the harness's private
ssh config) feeds one `paneboard serve` (SQLite); `--collectors 1 2` repeats everything
with the hosts split round-robin over two collectors (two tokens, one server).

Printed, per collector layout, median of `--runs` windows of `--seconds` (spread in
brackets):
* report -> server's live stream (SSE; the card's data, no browser) p50/p99 per link
  class, beside the goal (p99 <= one RTT + 150 ms) and the transport baseline in the
  same run: report -> a plain OpenSSH client (`ssh HOST tmux -C attach`, read-only)
  through the same relay, one host per class;
* reports written in the window that never reached the stream;
* the collector's CPU (% of one core) and RSS per watched host, the server's CPU and RSS,
  and the fleet's own processes (sshd, tmux, agents, relays) for scale.
Then the faults, all at once on three hosts of the slowest lossless class: the link
dropped for 30 s (`ip link set down` on its veth), a reboot (every process of the host
killed, then started again), 10 % loss for 60 s: when the server showed the host
unreachable (goal: within twice the 15 s SSH keepalive), when it was back, and the
reports written while the link was up that never reached the stream.
"""

from __future__ import annotations

import argparse
import base64
import json
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

from machine import cpu_seconds, machine_line, short, unwind_on_signals  # noqa: E402
from support import netns  # noqa: E402
from support.fleet import Fleet, HostSpec, LinkClass, parse_msg  # noqa: E402
from support.fleetstack import FleetStack  # noqa: E402
from support.fleetwatch import StreamWatch  # noqa: E402

KEEPALIVE = 15.0  # paneboard_agent.transport.ssh.SSHTarget.keepalive_interval
GOAL_EXTRA_MS = 150.0
MSG = re.compile(rb"msg=([A-Za-z0-9+/=]+)")


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, max(0, round(q * (len(s) - 1))))]


def med(values: list[float]) -> str:
    vals = [v for v in values if v == v]
    if not vals:
        return "n/a"
    m = statistics.median(vals)
    if len(vals) == 1:
        return f"{m:.1f}"
    return f"{m:.1f} ({min(vals):.1f}-{max(vals):.1f})"


def parse_classes(text: str) -> list[tuple[LinkClass, int]]:
    out = []
    for part in text.split(","):
        name, rtt_ms, loss, count = part.split(":")
        out.append((LinkClass(name, delay=float(rtt_ms) / 2000, loss=float(loss)), int(count)))
    return out


def specs_for(classes: list[tuple[LinkClass, int]], hosts: int, panes: int, jumped: int) -> list[HostSpec]:
    """`hosts` hosts over the classes in their proportions; the last `jumped` behind the first."""
    total = sum(c for _, c in classes)
    specs: list[HostSpec] = []
    for k, (link, count) in enumerate(classes):
        n = round(count * hosts / total) if k < len(classes) - 1 else hosts - len(specs)
        specs += [HostSpec(f"{link.name}{i + 1:02d}", link, panes) for i in range(n)]
    bastion = specs[0].name
    for i in range(len(specs) - jumped, len(specs)):
        if i > 0:
            specs[i] = HostSpec(specs[i].name, specs[i].link, panes, jump=bastion)
    return specs


def klass(spec: HostSpec) -> str:
    return f"{spec.link.name} via jump" if spec.jump else spec.link.name


def class_rtt(fleet: Fleet, spec: HostSpec) -> float:
    rtt = spec.link.rtt
    if spec.jump:
        rtt += fleet.hosts[spec.jump].spec.link.rtt
    return rtt


class RawWatch(threading.Thread):
    """The transport baseline: OpenSSH's client running `tmux -C attach` (read-only) on
    one host, through the same relay, noting when each report's bytes arrive."""

    def __init__(self, fleet: Fleet, host: str) -> None:
        super().__init__(daemon=True)
        sock = fleet.hosts[host].tmux.name
        self.proc = subprocess.Popen(
            fleet.ssh(host, f"tmux -L {sock} -C attach -t =main -f read-only,ignore-size"),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self.seen: dict[tuple[str, int, float], float] = {}

    def run(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            now = time.time()
            if not line.startswith(b"%output"):
                continue
            data = re.sub(rb"\\([0-7]{3})", lambda m: bytes([int(m.group(1), 8)]), line)
            for m in MSG.finditer(data):
                try:
                    parsed = parse_msg(base64.b64decode(m.group(1)).decode())
                except ValueError:
                    continue
                if parsed is not None:
                    self.seen.setdefault(parsed, now)

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait(10)


def rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def fleet_cpu(fleet: Fleet) -> float:
    """CPU seconds of every process now in the hosts' namespaces (sshd, tmux, agents,
    relays; the living ones: short-lived forks count only through their parents' waits)."""
    total = 0.0
    for h in fleet.hosts.values():
        for pid in netns.pids(h.ns):
            c = cpu_seconds(pid)
            if c == c:
                total += c
    return total


@dataclass
class Window:
    delays: dict[str, list[float]] = field(default_factory=dict)  # class -> ms
    raw: dict[str, list[float]] = field(default_factory=dict)
    lost: int = 0
    written: int = 0
    collector_cpu: float = 0.0  # % of one core per host
    collector_rss: float = 0.0  # MB per host
    server_cpu: float = 0.0  # % of one core
    server_rss: float = 0.0
    fleet_cpu: float = 0.0  # % of one core, whole fleet


def written_in(fleet: Fleet, host: str, lo: float, hi: float) -> set[tuple[str, int, float]]:
    return {(label, s, t) for label, rows in fleet.written(host).items() for s, t in rows if lo <= t < hi}


def window(
    stack: FleetStack, watch: StreamWatch, raws: dict[str, RawWatch], seconds: float, settle: float
) -> Window:
    fleet = stack.fleet
    pids = [p.pid for p in stack.collectors]
    c0 = [cpu_seconds(p) for p in pids]
    s0, f0, t0 = cpu_seconds(stack.server.pid), fleet_cpu(fleet), time.time()
    time.sleep(seconds)
    t1 = time.time()
    c1 = [cpu_seconds(p) for p in pids]
    s1, f1 = cpu_seconds(stack.server.pid), fleet_cpu(fleet)
    time.sleep(settle)  # what was written by t1 has time to arrive
    w = Window()
    n = len(fleet.hosts)
    w.collector_cpu = 100 * (sum(c1) - sum(c0)) / (t1 - t0) / n
    w.collector_rss = sum(rss_mb(p) for p in pids) / n
    w.server_cpu = 100 * (s1 - s0) / (t1 - t0)
    w.server_rss = rss_mb(stack.server.pid)
    w.fleet_cpu = 100 * (f1 - f0) / (t1 - t0)
    seen = {s.key: s for s in watch.all()}
    for h in fleet.hosts.values():
        k = klass(h.spec)
        for key in written_in(fleet, h.name, t0, t1):
            w.written += 1
            got = seen.get(key)
            if got is None:
                w.lost += 1
            else:
                w.delays.setdefault(k, []).append(1000 * (got.received - key[2]))
            raw = raws.get(h.name)
            if raw is not None and key in raw.seen:
                w.raw.setdefault(k, []).append(1000 * (raw.seen[key] - key[2]))
    return w


@dataclass
class Fault:
    kind: str
    host: str
    start: float = 0.0
    end: float = 0.0  # when the fault was taken away
    unreachable: float | None = None  # seconds after start
    back: float | None = None  # seconds after end
    lost: int = 0
    want: int = 0
    # each lost report (at most 10): (pane, seq, seconds written before the fault
    # started, delay of the same pane's next report that did arrive): a next report late
    # by more than the interval came in with the lost one (two reports of a pane in one
    # look: the collector sends the pane's state, the latest)
    missing: list[tuple[str, int, float, float | None]] = field(default_factory=list)


def faults(stack: FleetStack, watch: StreamWatch, hosts: list[str], steady_from: float) -> list[Fault]:
    """Link drop (30 s), reboot, 10 % loss (60 s), at once, on three hosts."""
    fleet = stack.fleet
    drop, boot, lossy = (
        Fault("link down 30 s", hosts[0]),
        Fault("reboot", hosts[1]),
        Fault("10% loss 60 s", hosts[2]),
    )
    base_loss = fleet.hosts[lossy.host].link_loss
    t = time.time()
    for f in (drop, boot, lossy):
        f.start = t
    fleet.link(drop.host, up=False)
    fleet.set_link(lossy.host, loss=0.10)
    fleet.reboot(boot.host)
    boot.end = time.time()
    drop_up, loss_end = t + short(30, 30), t + short(60, 60)
    deadline = loss_end + 180
    while time.time() < deadline:
        now = time.time()
        if drop.end == 0.0 and now >= drop_up:
            fleet.link(drop.host, up=True)
            drop.end = now
        if lossy.end == 0.0 and now >= loss_end:
            fleet.set_link(lossy.host, loss=base_loss)
            lossy.end = now
        rows = {h["name"]: h for h in stack.api("/api/hosts")}
        for f in (drop, boot, lossy):
            h = rows.get(f.host, {})
            if f.unreachable is None and not h.get("reachable", True):
                f.unreachable = now - f.start
            if f.unreachable is not None and f.end and f.back is None and h.get("reachable"):
                f.back = now - f.end
        settled = all(f.back is not None or f.unreachable is None for f in (drop, boot, lossy))
        if drop.end and lossy.end and settled and now > loss_end + 5:
            break
        time.sleep(0.25)
    time.sleep(10)  # reports written after the hosts came back: time to be written and arrive
    seen = watch.keys()
    for f in (drop, boot, lossy):
        hi = time.time() - 5
        if f.unreachable is None:  # never lost: everything it wrote counts
            want = written_in(fleet, f.host, steady_from, hi)
        else:
            back_at = f.end + (f.back or 0.0)
            margin = class_rtt(fleet, fleet.hosts[f.host].spec) + 1.0
            want = written_in(fleet, f.host, steady_from, f.start - margin) | written_in(
                fleet, f.host, back_at, hi
            )
        f.want, f.lost = len(want), len(want - seen)
        got = {s.key: s for s in watch.all()}
        for label, seq, t in sorted(want - seen)[:10]:
            later = sorted(k for k in got if k[0] == label and k[2] > t)
            nxt = got[later[0]] if later else None
            f.missing.append((label, seq, t - f.start, nxt.received - nxt.written if nxt else None))
    return [drop, boot, lossy]


def run_layout(fleet: Fleet, tmp: Path, collectors: int, args: argparse.Namespace) -> dict[str, Any]:
    stack = FleetStack(tmp / f"stack-{collectors}", fleet, grace=60)
    stack.tmp.mkdir(parents=True, exist_ok=True)
    raws: dict[str, RawWatch] = {}
    try:
        t = time.time()
        stack.start_fleet(collectors=collectors, timeout=300)
        up = time.time() - t
        print(f"  {collectors} collector(s): every host's panes on the board after {up:.1f} s", flush=True)
        watch = stack.watch()
        for spec in fleet.specs:  # one host per class, and one behind the jump host
            if klass(spec) not in {klass(fleet.hosts[h].spec) for h in raws}:
                raws[spec.name] = RawWatch(fleet, spec.name)
                raws[spec.name].start()
        time.sleep(args.interval + 2)  # every agent has reported since the stream connected
        steady_from = time.time()
        wins = [window(stack, watch, raws, args.seconds, settle=5) for _ in range(args.runs)]
        out: dict[str, Any] = {"collectors": collectors, "up_s": up, "windows": [w.__dict__ for w in wins]}
        print_windows(fleet, collectors, wins)
        if args.faults:
            lossless = [
                s
                for s in fleet.specs
                if not s.jump and s.link.loss == 0 and s.name != fleet.specs[0].name and s.name not in raws
            ]
            slowest = max(s.link.rtt for s in lossless)
            pick = [s.name for s in lossless if s.link.rtt == slowest][-3:]
            if len(pick) == 3:
                fs = faults(stack, watch, pick, steady_from)
                print_faults(fs)
                out["faults"] = [f.__dict__ for f in fs]
        return out
    finally:
        for r in raws.values():
            r.stop()
        stack.close()


def print_windows(fleet: Fleet, collectors: int, wins: list[Window]) -> None:
    classes = []
    for s in fleet.specs:
        if klass(s) not in classes:
            classes.append(klass(s))
    print(f"\n  report -> live stream, {collectors} collector(s), median of {len(wins)} (spread), ms")
    print(
        f"  {'class':<16} {'rtt':>5} {'p50':>18} {'p99':>18} {'goal p99':>9} {'ssh p50':>16} {'ssh p99':>16}"
    )
    for k in classes:
        spec = next(s for s in fleet.specs if klass(s) == k)
        rtt = 1000 * class_rtt(fleet, spec)
        p50 = med([pct(w.delays.get(k, []), 0.5) for w in wins])
        p99 = med([pct(w.delays.get(k, []), 0.99) for w in wins])
        r50 = med([pct(w.raw.get(k, []), 0.5) for w in wins])
        r99 = med([pct(w.raw.get(k, []), 0.99) for w in wins])
        print(f"  {k:<16} {rtt:5.0f} {p50:>18} {p99:>18} {rtt + GOAL_EXTRA_MS:9.0f} {r50:>16} {r99:>16}")
    print(
        f"  written {med([w.written for w in wins])}, never on the stream {med([w.lost for w in wins])};"
        f" collector CPU {med([w.collector_cpu for w in wins])} % of a core per host,"
        f" RSS {med([w.collector_rss for w in wins])} MB per host;"
        f" server CPU {med([w.server_cpu for w in wins])} %, RSS {med([w.server_rss for w in wins])} MB;"
        f" fleet processes {med([w.fleet_cpu for w in wins])} %",
        flush=True,
    )


def print_faults(fs: list[Fault]) -> None:
    print(f"\n  faults at once (goal: unreachable within {2 * KEEPALIVE:g} s, back by itself, none lost)")
    for f in fs:
        un = f"{f.unreachable:.1f} s" if f.unreachable is not None else "never"
        back = f"{f.back:.1f} s after the fault ended" if f.back is not None else "-"
        print(f"  {f.kind:<16} {f.host:<8} unreachable after {un:<8} back {back:<30} lost {f.lost}/{f.want}")
        for label, seq, at, nxt in f.missing:
            after = f"{nxt:.2f} s" if nxt is not None else "never"
            print(f"    lost {label} #{seq}, written {at:+.1f} s after the fault began; next's delay {after}")
    print(flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--hosts", type=int, default=int(short(50, 12)))
    ap.add_argument("--panes", type=int, default=int(short(10, 4)))
    ap.add_argument("--interval", type=float, default=5.0, help="seconds between one agent's reports")
    ap.add_argument("--classes", default="lan:1:0:20,wan:40:0:20,far:150:0.01:10")
    ap.add_argument("--jumped", type=int, default=5, help="hosts reached through the first (ProxyJump)")
    ap.add_argument("--seconds", type=float, default=short(30, 15))
    ap.add_argument("--runs", type=int, default=int(short(3, 2)))
    ap.add_argument("--collectors", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--no-faults", dest="faults", action="store_false")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    why = netns.unavailable()
    if why:
        print(f"fleet benchmark: {why}", file=sys.stderr)
        return 2
    unwind_on_signals()  # namespaces and processes are removed on SIGTERM/SIGINT too
    print(machine_line("start"), flush=True)
    specs = specs_for(parse_classes(args.classes), args.hosts, args.panes, args.jumped)
    print(
        f"fleet: {len(specs)} hosts x {args.panes} panes, one report per pane every {args.interval:g} s,"
        f" {sum(1 for s in specs if s.jump)} behind {specs[0].name} (ProxyJump); classes {args.classes}",
        flush=True,
    )
    results: dict[str, Any] = {"args": {k: str(v) for k, v in vars(args).items()}, "layouts": []}
    with tempfile.TemporaryDirectory(prefix="pb-fleet-") as tmp:
        fleet = Fleet(Path(tmp) / "fleet", specs, interval=args.interval)
        try:
            t = time.time()
            fleet.start()
            print(f"fleet up in {time.time() - t:.1f} s", flush=True)
            for n in args.collectors:
                results["layouts"].append(run_layout(fleet, Path(tmp), n, args))
        finally:
            fleet.close()
    print(machine_line("end"))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
