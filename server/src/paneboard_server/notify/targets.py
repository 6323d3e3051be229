"""Where the server may send a Web Push: public https endpoints only.

A push endpoint is a URL a logged-in user hands the server, which then POSTs to it on
every notable change, so without a check it is a way to make the server probe
internal addresses. The rule: `https`, and every address the host resolves to is
globally routable (`ipaddress`'s `is_global`, plus the ranges this Python's table
still calls global but that lead inside a network: 6to4 2002::/16 and its relay
192.88.99.0/24, NAT64 64:ff9b::/96 and 64:ff9b:1::/48, multicast). So loopback,
private, CGNAT 100.64.0.0/10 (Tailscale), link-local, documentation and benchmark
ranges, reserved and unspecified addresses are all refused; an IPv4-mapped IPv6
address is judged as its IPv4 address.

`push_allow_local = true` in `[notify]` lifts the address rule and allows plain http:
for tests and a push service on one's own network. Otherwise the check runs when a
subscription is made, and the HTTP client's resolver applies it again to every
connection it opens (`safe_resolver`), so the address actually connected to is one
that passed, however DNS has changed since. Redirects are never followed
(`webpush.send`), so a public endpoint cannot hand the server an inner one.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from typing import Any
from urllib.parse import urlsplit

# Ranges `is_global` of Python 3.11 calls global although they reach inside a network.
_NOT_GLOBAL = tuple(
    ipaddress.ip_network(n)
    for n in (
        "2002::/16",  # 6to4: carries an IPv4 address, 2002:7f00:1:: is 127.0.0.1
        "192.88.99.0/24",  # the 6to4 relay anycast (deprecated, RFC 7526)
        "64:ff9b::/96",  # NAT64 well-known prefix: 64:ff9b::7f00:1 is 127.0.0.1 through the gateway
        "64:ff9b:1::/48",  # NAT64 local-use prefix (RFC 8215)
    )
)


class TargetRefused(ValueError):
    """The endpoint is not one the server may send to; the message says why."""


def is_public(addr: str) -> bool:
    """May the server open a connection to this address (text, scope id allowed)?"""
    try:
        ip = ipaddress.ip_address(addr.split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if not ip.is_global or ip.is_multicast:
        return False
    return not any(ip.version == n.version and ip in n for n in _NOT_GLOBAL)


def check_url(endpoint: str, allow_local: bool) -> tuple[str, int]:
    """The endpoint's host and port, or TargetRefused for a scheme it may not use."""
    u = urlsplit(endpoint)
    allowed = ("https", "http") if allow_local else ("https",)
    if u.scheme not in allowed or not u.hostname:
        raise TargetRefused("push endpoint must be an https:// URL")
    try:
        port = u.port or (443 if u.scheme == "https" else 80)
    except ValueError as exc:
        raise TargetRefused("push endpoint has a bad port") from exc
    return u.hostname, port


async def check_endpoint(endpoint: str, allow_local: bool) -> None:
    """TargetRefused unless the endpoint may be sent to (resolving its host)."""
    host, port = check_url(endpoint, allow_local)
    if allow_local:
        return
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise TargetRefused(f"push endpoint host {host!r} does not resolve") from exc
    addrs = {str(info[4][0]) for info in infos}
    if not addrs or not all(is_public(a) for a in addrs):
        raise TargetRefused(f"push endpoint host {host!r} is not a public address")


def safe_resolver() -> Any:
    """An aiohttp resolver that refuses to connect to a non-public address: what it
    returns is what the connector connects to, so this is the check at send time."""
    from aiohttp.resolver import DefaultResolver

    class PublicOnly(DefaultResolver):  # type: ignore[valid-type,misc]  # aiohttp picks its class at import
        async def resolve(
            self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
        ) -> list[Any]:
            found = await super().resolve(host, port, family)
            if not found or not all(is_public(str(r["host"])) for r in found):
                raise OSError(f"push endpoint host {host!r} is not a public address")
            return list(found)

    return PublicOnly()
