"""A real (tiny) Web Push service for tests: it accepts RFC 8030 POSTs, checks the
VAPID JWT (RFC 8292) and decrypts the RFC 8291 aes128gcm body with the subscriber's
private key -- what a browser's push service plus the browser itself would do.

The subscriber side is real too: a P-256 key pair and a 16-byte auth secret, exactly
what `PushManager.subscribe()` makes, exposed as the `keys` of a subscription.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import http_ece
from aiohttp import web
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature


def b64u(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64u(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    payload: Any
    vapid_claims: dict[str, Any]
    vapid_key: str
    at: float = 0.0  # time.time() when it arrived (the push-delay benchmark's end point)


def verify_vapid(auth_header: str, expected_key: str | None) -> tuple[dict[str, Any], str]:
    """Parse `vapid t=JWT, k=KEY`, check the ES256 signature against k, return claims."""
    scheme, _, rest = auth_header.partition(" ")
    assert scheme.lower() == "vapid", auth_header
    parts = dict(p.strip().split("=", 1) for p in rest.split(","))
    jwt, key = parts["t"], parts["k"]
    if expected_key is not None:
        assert key == expected_key, "VAPID key differs from the server's public key"
    head, body, sig = jwt.split(".")
    pub = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), unb64u(key))
    raw = unb64u(sig)
    der = encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big"))
    pub.verify(der, f"{head}.{body}".encode(), ec.ECDSA(hashes.SHA256()))
    return json.loads(unb64u(body)), key


@dataclass
class PushService:
    """Runs an aiohttp server on 127.0.0.1 in a thread; `subscription()` makes subscribers."""

    expected_vapid_key: str | None = None
    status: int = 201  # what to answer (410 to play a gone subscription)
    # Answer every push with `307 Location: redirect_to` instead (a hostile endpoint).
    redirect_to: str | None = None
    received: list[Received] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._subs: dict[str, tuple[ec.EllipticCurvePrivateKey, bytes]] = {}
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.port = 0
        self.redirected = 0  # pushes answered with a redirect
        self.got = threading.Condition()

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        app = web.Application(client_max_size=8192)
        app.router.add_post("/push/{sid}", self._handle)
        self._runner = web.AppRunner(app)
        self._loop.run_until_complete(self._runner.setup())
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        self._loop.run_until_complete(site.start())
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self._ready.set()
        self._loop.run_forever()

    async def _handle(self, request: web.Request) -> web.Response:
        sid = request.match_info["sid"]
        body = await request.read()
        at = time.time()
        if self.redirect_to is not None:
            with self.got:
                self.redirected += 1
                self.got.notify_all()
            return web.Response(status=307, headers={"Location": self.redirect_to})
        try:
            priv, auth = self._subs[sid]
            claims, key = verify_vapid(request.headers.get("Authorization", ""), self.expected_vapid_key)
            assert request.headers.get("Content-Encoding") == "aes128gcm"
            plain = http_ece.decrypt(body, private_key=priv, auth_secret=auth, version="aes128gcm")
            payload: Any = json.loads(plain)
        except Exception as e:  # recorded and reported by the test, never swallowed
            self.errors.append(f"{type(e).__name__}: {e}")
            return web.Response(status=400, text="bad push")
        with self.got:
            self.received.append(
                Received(sid, {k.lower(): v for k, v in request.headers.items()}, payload, claims, key, at)
            )
            self.got.notify_all()
        return web.Response(status=self.status)

    def start(self) -> PushService:
        self._thread.start()
        assert self._ready.wait(10), "push service did not start"
        return self

    def stop(self) -> None:
        async def down() -> None:
            await self._runner.cleanup()

        asyncio.run_coroutine_threadsafe(down(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    def subscription(self) -> dict[str, Any]:
        """A subscriber's key pair and secret, as `PushSubscription.toJSON()` gives them."""
        priv = ec.generate_private_key(ec.SECP256R1())
        auth = os.urandom(16)
        sid = b64u(os.urandom(9))
        self._subs[sid] = (priv, auth)
        pub = priv.public_key().public_bytes(
            serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint
        )
        return {
            "endpoint": f"http://127.0.0.1:{self.port}/push/{sid}",
            "keys": {"p256dh": b64u(pub), "auth": b64u(auth)},
        }

    def wait_for(self, n: int, timeout: float = 10.0) -> list[Received]:
        with self.got:
            self.got.wait_for(lambda: len(self.received) >= n or self.errors, timeout)
        assert not self.errors, self.errors
        assert len(self.received) >= n, f"got {len(self.received)} pushes, wanted {n}"
        return self.received
