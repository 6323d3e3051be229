"""Where the server may send a Web Push: public https endpoints only.

A push endpoint is a URL a logged-in user hands the server, which then POSTs to it on
every notable change, so without a check it is a way to make the server probe
internal addresses. The rule: `https`, and every address the host resolves to is a
public one (no loopback, private, link-local, multicast, reserved or unspecified
address). `push_allow_local = true` in `[notify]` lifts both (plain http, local
targets): for tests and a push service on one's own network. The check runs when a
subscription is made and again before every send (the host may resolve elsewhere by
then), and the HTTP client's resolver applies it to every connection it opens, so a
DNS answer that changes between check and connect cannot get around it.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from typing import Any
from urllib.parse import urlsplit


class TargetRefused(ValueError):
    """The endpoint is not one the server may send to; the message says why."""


def _public(addr: str) -> bool:
    ip = ipaddress.ip_address(addr.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return not (
        ip.is_private
        or ip.is_loopback
        or ip.is_link_local
        or ip.is_multicast
        or ip.is_reserved
        or ip.is_unspecified
    )


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
    if not addrs or not all(_public(a) for a in addrs):
        raise TargetRefused(f"push endpoint host {host!r} is not a public address")


def safe_resolver() -> Any:
    """An aiohttp resolver that refuses to connect to a non-public address."""
    from aiohttp.resolver import DefaultResolver

    class PublicOnly(DefaultResolver):  # type: ignore[valid-type,misc]  # aiohttp picks its class at import
        async def resolve(
            self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
        ) -> list[Any]:
            found = await super().resolve(host, port, family)
            kept = [r for r in found if _public(str(r["host"]))]
            if not kept:
                raise OSError(f"push endpoint host {host!r} is not a public address")
            return kept

    return PublicOnly()
