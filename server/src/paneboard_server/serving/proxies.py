"""Which client a request is from when it came through a trusted reverse proxy.

Behind a proxy every connection's peer is the proxy, so every per-address limit
(connections, login back-off) would count all users as one. `X-Forwarded-For` names
the real client, but anyone can send that header: it is believed only on a connection
whose peer is one of `server.trusted_proxies`, and then only its right-most entry that
is not itself a trusted proxy (the address the outermost trusted proxy saw; entries
left of it were written by the client and prove nothing). This is the rule of
uvicorn's `--forwarded-allow-ips` (ProxyHeadersMiddleware); it is applied here, in the
connection protocol, because the per-address connection cap is counted there, before
any ASGI middleware runs, and one decision must serve both.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

#: A forwarded entry is at most an IPv6 address with brackets and a port.
MAX_ENTRY = 64

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def parse_networks(items: Iterable[str]) -> list[Network]:
    """Addresses or networks (`10.0.0.0/8`); ValueError naming the bad item."""
    out: list[Network] = []
    for item in items:
        try:
            out.append(ipaddress.ip_network(item.strip(), strict=False))
        except ValueError as exc:
            raise ValueError(f"{item!r} is not an IP address or network") from exc
    return out


def _address(entry: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """The address in a forwarded entry (`1.2.3.4`, `1.2.3.4:5`, `[::1]:5`, `::1`)."""
    e = entry.strip()
    if e.startswith("["):
        e = e[1 : e.find("]")] if "]" in e else e
    elif e.count(":") == 1:
        e = e.split(":", 1)[0]
    try:
        return ipaddress.ip_address(e)
    except ValueError:
        return None


class TrustedProxies:
    def __init__(self, networks: Iterable[str]) -> None:
        self.networks = parse_networks(networks)

    def __bool__(self) -> bool:
        return bool(self.networks)

    def trusts(self, host: str) -> bool:
        addr = _address(host)
        return addr is not None and any(addr in n for n in self.networks)

    def client(self, peer: str, forwarded_for: list[bytes]) -> str:
        """The real client of a request from `peer` carrying these X-Forwarded-For values."""
        if not self.trusts(peer) or not forwarded_for:
            return peer
        entries = [e.strip() for v in forwarded_for for e in v.decode("latin-1").split(",")]
        entries = [e for e in entries if e]
        for entry in reversed(entries):
            addr = _address(entry)
            if addr is None or not any(addr in n for n in self.networks):
                return str(addr) if addr is not None else entry[:MAX_ENTRY]
        return str(_address(entries[0])) if entries else peer
