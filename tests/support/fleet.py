"""A fleet of watched hosts on this machine: one network namespace per host.

Each host (`HostSpec`) is a network namespace (tests/support/netns.py) joined by a
veth pair with a /30 to the collectors' namespace ("board"), or, for a host behind a
jump host, to the jump host's namespace only (so the collector reaches it through
`ProxyJump` and nothing else). Each host also has a pid namespace of its own, with its
own /proc, whose pid 1 is a small shell that reaps orphans: `ps` on a host (the
collector runs one per poll) sees that host's processes only, as on a real machine,
instead of scanning every process of every host on this one. In its namespaces each
host runs its own OpenSSH `sshd` (its own host key, on the namespace's loopback), the
link stand-in `linkrelay.py` on the veth address in front of that sshd (delay and loss
per link, since this kernel has no netem; see its docstring for what it does not
model), and a private tmux server whose panes run `AGENT`, a scripted agent that
writes one OSC 7501 report every `interval` seconds with
`msg = "<host>/<n> <seq> <time>"` and appends `<seq> <time>` to its pane's log: what
was written, and when, to compare with what reached the server.

The harness writes everything the collector needs into its own directory and never
reads or writes the user's: a client key, an OpenSSH client config (`ssh_config`, one
`Host` alias per host, `ProxyJump` where one is behind a jump host, strict host keys
from the harness's `known_hosts`), and the collector's TOML (`agent_config()`, split
into several collectors' with `parts`).

`close()` always removes every namespace and process it made; namespaces are named
`pbf-<pid>-<host>`, and `netns.sweep()` (run by `start()`) removes a dead run's.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from support import netns
from support.sshd import SESSION_ENV, SSHD, _keygen
from support.tmux import TmuxServer
from support.wait import wait_for

RELAY = Path(__file__).with_name("linkrelay.py")
BOARD = "board"  # the collectors' namespace
SSH_PORT = 22

#: the scripted agent: AGENT LOG INTERVAL LABEL. $EPOCHREALTIME (bash 5) is taken just
#: before the write; a random first pause spreads a host's panes over the interval.
AGENT = r"""
log=$1 every=$2 label=$3 seq=0
rm -f "$log.wait"; mkfifo "$log.wait"; exec 3<>"$log.wait"; rm -f "$log.wait"  # read -t: a sleep, no fork
read -r -u 3 -t "$(awk -v r=$RANDOM -v e="$every" 'BEGIN { print r / 32768 * e }')"
while :; do
  seq=$((seq + 1)); t=$EPOCHREALTIME
  msg=$(printf '%s %d %s' "$label" "$seq" "$t" | base64 -w0)
  printf '\033]7501;state=working:app=fleet:msg=%s\033\\' "$msg"
  printf '%d %s\n' "$seq" "$t" >> "$log"
  read -r -u 3 -t "$every"
done
"""

#: a host's pid 1: reaps what its daemons leave behind (bash waits for any child)
INIT = "trap 'exit 0' TERM; while :; do sleep 86400 & wait; done"


@dataclass(frozen=True)
class LinkClass:
    """A link's one-way delay (seconds) and per-segment loss, as the relay applies them."""

    name: str
    delay: float = 0.0
    loss: float = 0.0

    @property
    def rtt(self) -> float:
        return 2 * self.delay


@dataclass(frozen=True)
class HostSpec:
    name: str
    link: LinkClass = LinkClass("lan")
    panes: int = 1
    jump: str | None = None  # the name of the host this one is reached through (ProxyJump)


@dataclass
class Host:
    spec: HostSpec
    index: int
    ns: str
    dir: Path
    addr: str  # where the collector (or the jump host) connects: the relay
    peer_ns: str  # the namespace at the link's other end: the board's, or the jump host's
    peer_dev: str  # the link's end there, for `ip link set down`
    host_key: Path
    tmux: NsTmux
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    init: int = 0  # the host's pid 1 (its pid here); sshd and tmux run in its namespaces
    link_delay: float = 0.0
    link_loss: float = 0.0

    @property
    def name(self) -> str:
        return self.spec.name

    def logs(self) -> list[Path]:
        return sorted(self.dir.glob("pane-*.log"))


class NsTmux(TmuxServer):
    """A tmux server started inside a host's namespaces (its panes' programs live there);
    commands reach it by its socket file, which namespaces do not separate."""

    def __init__(self, ns: str, name: str) -> None:
        super().__init__(name)
        self.ns = ns

    def start_panes(self, enter: list[str], commands: list[str]) -> None:
        """One session `main`, one window per command, made in a single tmux call run
        through `enter` (into the host's namespaces)."""
        args = [*enter, *self.base(), "new-session", "-d", "-s", "main"]
        args += ["-x", "120", "-y", "40", commands[0]]
        for c in commands[1:]:
            args += [";", "new-window", "-d", "-t", "main:", c]
        res = subprocess.run(args, capture_output=True, text=True, env=self.env, timeout=30)
        if res.returncode != 0:
            raise RuntimeError(f"tmux in {self.ns}: {res.stderr.strip()}")
        # no self.pid: tmux would give it as its own pid namespace numbers it


class Fleet:
    """Hosts in namespaces, their sshd, relay and tmux; the client-side files to reach them."""

    def __init__(self, root: Path, specs: list[HostSpec], interval: float = 2.0) -> None:
        names = [s.name for s in specs]
        if len(set(names)) != len(names) or BOARD in names or len(specs) > 250:
            raise ValueError(f"host names must be unique, not {BOARD!r}, and at most 250 hosts")
        for s in specs:
            if s.jump is not None and s.jump not in names:
                raise ValueError(f"{s.name}: jump host {s.jump} is not in the fleet")
        self.root = root
        self.specs = specs
        self.interval = interval
        self.token = secrets.token_hex(2)  # names veths: IFNAMSIZ leaves 15 characters
        self.hosts: dict[str, Host] = {}
        self.client_key = root / "client_ed25519"
        self.ssh_config = root / "ssh_config"
        self.known_hosts = root / "known_hosts"
        self.agent_script = root / "agent.sh"
        self.board_ns = netns.ns_name(BOARD)  # the collector's machine
        self.procs: list[subprocess.Popen[bytes]] = []  # this namespace's (exposed ports)

    # -- life cycle ----------------------------------------------------------------------

    def start(self) -> Fleet:
        """Sweep dead runs, then build every host; on any failure remove what was made."""
        why = netns.unavailable()
        if why:
            raise RuntimeError(why)
        netns.sweep()
        self.root.mkdir(parents=True, exist_ok=True)
        try:
            _keygen(self.client_key)
            self.agent_script.write_text(AGENT)
            netns.add(self.board_ns)
            for i, spec in enumerate(self.specs):
                self.hosts[spec.name] = self._make(i, spec)
            for spec in sorted(self.specs, key=lambda s: s.jump is not None):  # jump hosts first
                self._boot(self.hosts[spec.name])
            self._write_client_files()
        except BaseException:
            self.close()
            raise
        return self

    def _make(self, i: int, spec: HostSpec) -> Host:
        ns = netns.ns_name(spec.name)
        d = self.root / spec.name
        d.mkdir(parents=True, exist_ok=True)
        netns.add(ns)
        near, far = f"pbf{self.token}r{i}", f"pbf{self.token}n{i}"
        if spec.jump is None:
            peer_ns, net = self.board_ns, f"10.231.{i}"
        else:
            peer_ns, net = netns.ns_name(spec.jump), f"10.232.{i}"
        netns.veth(peer_ns, near, f"{net}.1", ns, far, f"{net}.2")
        key = d / "host_ed25519"
        _keygen(key)
        (d / "authorized_keys").write_text(Path(f"{self.client_key}.pub").read_text())
        (d / "sshd_config").write_text(
            "\n".join(
                [
                    f"Port {SSH_PORT}",
                    "ListenAddress 127.0.0.1",
                    f"HostKey {key}",
                    "UsePAM no",
                    "StrictModes no",
                    "PermitRootLogin yes",
                    f"AuthorizedKeysFile {d / 'authorized_keys'}",
                    "PasswordAuthentication no",
                    "KbdInteractiveAuthentication no",
                    "AllowTcpForwarding yes",
                    "PidFile none",
                    "MaxSessions 20",
                    "MaxStartups 100:30:200",
                    "LogLevel ERROR",
                    SESSION_ENV,
                    "",
                ]
            )
        )
        tmux = NsTmux(ns, f"{netns.PREFIX}{os.getpid()}-{spec.name}")
        return Host(
            spec,
            i,
            ns,
            d,
            f"{net}.2",
            peer_ns,
            near,
            key,
            tmux,
            link_delay=spec.link.delay,
            link_loss=spec.link.loss,
        )

    def enter(self, host: Host) -> list[str]:
        """The prefix that runs a command on the host: its network, pid and mount
        namespaces (its own /proc, so `ps` there lists the host's processes only, as on
        a machine of its own, and costs what it would there)."""
        return ["nsenter", "-t", str(host.init), "-p", "-m", "-n", "--"]

    def _spawn(self, host: Host, what: str, argv: list[str], pid_ns: bool = True) -> subprocess.Popen[bytes]:
        log = (host.dir / f"{what}.log").open("ab")
        p = subprocess.Popen(
            [*(self.enter(host) if pid_ns else ["ip", "netns", "exec", host.ns]), *argv],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        host.procs[what] = p
        return p

    def _boot(self, host: Host) -> None:
        """pid 1, sshd, the link relay and tmux with its scripted agents: the host, up."""
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
        init = self._spawn(
            host, "init", ["unshare", "--pid", "--fork", "--mount-proc", "bash", "-c", INIT], pid_ns=False
        )
        host.init = wait_for(
            lambda: _child(init.pid), timeout=20, what=f"pid 1 of {host.name}", interval=0.02
        )
        self._spawn(host, "sshd", [SSHD, "-D", "-e", "-f", str(host.dir / "sshd_config")])
        control = host.dir / "link.json"
        control.write_text(json.dumps({"delay": host.link_delay, "loss": host.link_loss}))
        self._spawn(
            host,
            "relay",
            [
                sys.executable,
                str(RELAY),
                "--listen",
                f"{host.addr}:{SSH_PORT}",
                "--to",
                f"127.0.0.1:{SSH_PORT}",
                "--delay",
                str(host.link_delay),
                "--loss",
                str(host.link_loss),
                "--control",
                str(control),
            ],
            pid_ns=False,  # `ip netns exec` execs it: its pid is the Popen's, for SIGHUP
        )
        commands = [
            f"exec bash {self.agent_script} {host.dir / f'pane-{n}.log'} {self.interval} {host.name}/{n}"
            for n in range(host.spec.panes)
        ]
        host.tmux.start_panes(self.enter(host), commands)
        for what, where, addr in (("sshd", host.ns, "127.0.0.1"), ("relay", host.peer_ns, host.addr)):
            wait_for(
                lambda what=what, where=where, addr=addr: (
                    self._check(host, what) and netns.listening(where, addr, SSH_PORT)
                ),
                timeout=20,
                what=f"{what} of {host.name} listening on {addr}:{SSH_PORT}",
                interval=0.1,
            )

    def _check(self, host: Host, what: str) -> bool:
        p = host.procs[what]
        if p.poll() is not None:
            log = (host.dir / f"{what}.log").read_text(errors="replace")[-2000:]
            raise RuntimeError(f"{what} of {host.name} exited: {log}")
        return True

    def close(self) -> None:
        """Everything this fleet made: processes, tmux sockets, namespaces (hidden hosts
        first, their veths live in the jump host's namespace too)."""
        for host in sorted(self.hosts.values(), key=lambda h: h.spec.jump is None):
            with contextlib.suppress(Exception):
                netns.delete(host.ns)
            for p in host.procs.values():
                with contextlib.suppress(Exception):
                    p.wait(5)
            host.tmux.socket_path().unlink(missing_ok=True)
        left = netns.ours()
        for name in [*(spec.name for spec in self.specs), BOARD]:  # the board; a host half-built
            if (ns := netns.ns_name(name)) in left:
                netns.delete(ns)
        for p in self.procs:
            with contextlib.suppress(ProcessLookupError):
                p.kill()
            p.wait(10)

    # -- the client side ---------------------------------------------------------------

    def _write_client_files(self) -> None:
        lines, known = [], []
        for h in self.hosts.values():
            lines += [
                f"Host {h.name}",
                f"  HostName {h.addr}",
                f"  Port {SSH_PORT}",
                "  User root",
                f"  IdentityFile {self.client_key}",
                "  IdentitiesOnly yes",
                f"  UserKnownHostsFile {self.known_hosts}",
                "  BatchMode yes",
            ]
            if h.spec.jump:
                lines.append(f"  ProxyJump {h.spec.jump}")
            kind, blob = Path(f"{h.host_key}.pub").read_text().split()[:2]
            known.append(f"{h.name},{h.addr} {kind} {blob}")
        self.ssh_config.write_text("\n".join(lines) + "\n")
        self.known_hosts.write_text("\n".join(known) + "\n")

    def agent_config(self, parts: int = 1, poll_interval: float = 1.0) -> list[Path]:
        """The collector's TOML, every host by its alias; `parts` collectors get the
        hosts round-robin (a jump host's hidden hosts need no jump host entry of their
        own: the ssh config reaches them through it)."""
        out = []
        for k in range(parts):
            body = [f"poll_interval = {poll_interval}", f"ssh_config = {json.dumps(str(self.ssh_config))}"]
            for h in list(self.hosts.values())[k::parts]:
                body += [
                    "",
                    "[[hosts]]",
                    f"host = {json.dumps(h.name)}",
                    f"tmux_socket = {json.dumps(h.tmux.name)}",
                ]
            path = self.root / f"agent-{k + 1}.toml"
            path.write_text("\n".join(body) + "\n")
            out.append(path)
        return out

    def ssh(self, host: str, command: str) -> list[str]:
        """An OpenSSH client command line to `host` through the harness's config, run
        on the board (the collector's namespace)."""
        return self.on_board(["ssh", "-F", str(self.ssh_config), host, command])

    def on_board(self, argv: list[str]) -> list[str]:
        """`argv` run in the board's namespace, where the collectors run: it reaches each
        host over its link, and nothing else (no default route: the sandbox's gateway
        would accept any connection, and a dropped link would not look dropped)."""
        return ["ip", "netns", "exec", self.board_ns, *argv]

    def expose(self, port: int) -> None:
        """This machine's 127.0.0.1:PORT (the server) on the board's 127.0.0.1:PORT,
        through a relay with no delay, so collectors on the board reach it."""
        log = (self.root / f"expose-{port}.log").open("ab")
        p = subprocess.Popen(
            [
                sys.executable,
                str(RELAY),
                "--listen",
                f"127.0.0.1:{port}",
                "--listen-netns",
                self.board_ns,
                "--to",
                f"127.0.0.1:{port}",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        self.procs.append(p)
        wait_for(
            lambda: p.poll() is None and netns.listening(self.board_ns, "127.0.0.1", port),
            timeout=20,
            what=f"port {port} exposed on the board ({(self.root / f'expose-{port}.log').read_text()})",
            interval=0.1,
        )

    # -- faults --------------------------------------------------------------------------

    def link(self, host: str, up: bool) -> None:
        """`ip link set up|down` on the host's link (its end on the collector's side)."""
        h = self.hosts[host]
        netns.link(h.peer_ns, h.peer_dev, up)

    def set_link(self, host: str, delay: float | None = None, loss: float | None = None) -> None:
        """Change the relay's delay/loss for bytes read from now on (SIGHUP to the relay)."""
        h = self.hosts[host]
        h.link_delay = h.link_delay if delay is None else delay
        h.link_loss = h.link_loss if loss is None else loss
        (h.dir / "link.json").write_text(json.dumps({"delay": h.link_delay, "loss": h.link_loss}))
        os.kill(self._relay_pid(h), signal.SIGHUP)

    def _relay_pid(self, h: Host) -> int:
        # `ip netns exec` execs its command: the Popen's pid is the relay's
        return h.procs["relay"].pid

    def reboot(self, host: str) -> None:
        """Every process of the host killed at once (sshd, the relay, tmux and its
        agents: the connection's far end vanishes), then the host booted again."""
        h = self.hosts[host]
        netns.kill_all(h.ns)
        for p in h.procs.values():
            p.wait(10)
        h.tmux.socket_path().unlink(missing_ok=True)
        self._boot(h)

    # -- what was written ----------------------------------------------------------------

    def written(self, host: str) -> dict[str, list[tuple[int, float]]]:
        """Per pane label (`host/n`), the (seq, time) of every report its agent wrote;
        a reboot starts a pane's seq again, its log goes on."""
        out: dict[str, list[tuple[int, float]]] = {}
        for log in self.hosts[host].logs():
            label = f"{host}/{log.stem.split('-', 1)[1]}"
            rows = []
            for line in log.read_text().splitlines():
                seq, _, t = line.partition(" ")
                if seq.isdigit() and t:
                    rows.append((int(seq), float(t)))
            out[label] = rows
        return out


def parse_msg(msg: str | None) -> tuple[str, int, float] | None:
    """A fleet agent's msg (`host/n seq time`) as (label, seq, time), else None."""
    parts = (msg or "").split()
    if len(parts) != 3 or not parts[1].isdigit():
        return None
    try:
        return parts[0], int(parts[1]), float(parts[2])
    except ValueError:
        return None


def _child(pid: int) -> int | None:
    """The first child of process `pid` (unshare's: the host's pid 1), once it exists."""
    try:
        kids = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return None
    return int(kids[0]) if kids else None
