"""Sending one Web Push message (RFC 8030/8291/8292) with pywebpush.

Headers that matter: TTL (how long the push service keeps it for an offline phone),
Urgency (blocked and error are `high` so Android delivers them in Doze; done is `normal`), and
Topic, derived from the pane id, so a newer push for a pane replaces an older one
still waiting at the push service. 404/410 from the push service mean the
subscription is gone for good: the caller deletes it.

Redirects are never followed: a push service answers the POST itself, and a 3xx
(which aiohttp would follow, method and body kept for 307/308) is how a public
endpoint could send the server's POST to an inner address. A 3xx is a failed send
of that subscription.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlparse

from cryptography.hazmat.primitives.asymmetric import ec
from paneboard_protocol.pane import State

from .events import StateChange
from .vapid import VapidKeys

if TYPE_CHECKING:
    import aiohttp

Outcome = Literal["sent", "gone", "failed"]
DEFAULT_TTL = 3600
MAX_PAYLOAD = 3000  # below the 4 kB push-service limit after encryption overhead


_B64URL = re.compile(r"[A-Za-z0-9_-]+={0,2}")


def _b64u(v: str) -> bytes:
    return base64.urlsafe_b64decode(v.rstrip("=") + "=" * (-len(v.rstrip("=")) % 4))


def topic_for(pane_id: str) -> str:
    """RFC 8030 Topic: at most 32 characters of the URL-safe base64 alphabet."""
    digest = hashlib.sha256(pane_id.encode()).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()[:32]


def urgency_for(state: State | None) -> str:
    return "high" if state in ("blocked", "error") else "normal"


@dataclass(frozen=True, slots=True)
class Subscription:
    endpoint: str
    p256dh: str
    auth: str

    @classmethod
    def from_json(cls, data: Any) -> Subscription:
        """Validate what `PushSubscription.toJSON()` gave the page; ValueError if malformed."""
        if not isinstance(data, dict):
            raise ValueError("subscription must be an object")
        endpoint, keys = data.get("endpoint"), data.get("keys")
        if not isinstance(endpoint, str) or len(endpoint) > 2048:
            raise ValueError("subscription endpoint missing or too long")
        u = urlparse(endpoint)
        if u.scheme not in ("https", "http") or not u.netloc:
            raise ValueError("subscription endpoint must be an http(s) URL")
        if not isinstance(keys, dict):
            raise ValueError("subscription keys missing")
        p256dh, auth = keys.get("p256dh"), keys.get("auth")
        for name, v, lo, hi in (("p256dh", p256dh, 80, 100), ("auth", auth, 16, 32)):
            if not isinstance(v, str) or not lo <= len(v) <= hi:
                raise ValueError(f"subscription key {name} malformed")
            if not _B64URL.fullmatch(v):
                raise ValueError(f"subscription key {name} is not base64url")
        assert isinstance(p256dh, str) and isinstance(auth, str)
        if len(_b64u(auth)) != 16:
            raise ValueError("subscription key auth must be 16 bytes")
        raw = _b64u(p256dh)
        try:  # RFC 8291: an uncompressed P-256 point; a wrong one fails every later send
            ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), raw)
        except ValueError as e:
            raise ValueError("subscription key p256dh is not a P-256 public key") from e
        if len(raw) != 65:
            raise ValueError("subscription key p256dh must be an uncompressed P-256 point")
        return cls(endpoint=endpoint, p256dh=p256dh, auth=auth)

    def info(self) -> dict[str, Any]:
        return {"endpoint": self.endpoint, "keys": {"p256dh": self.p256dh, "auth": self.auth}}


def change_message(change: StateChange, extra: dict[str, Any] | None = None) -> str:
    payload = {**change.payload(), **(extra or {})}
    data = json.dumps(payload, ensure_ascii=False)
    if len(data.encode()) > MAX_PAYLOAD:
        data = json.dumps({**payload, "body": change.body()[:1000]}, ensure_ascii=False)
    return data


# The service worker's tag for a burst told as one push (a pane's own push is tagged
# with its pane id: web/sw.js).
GROUP_TAG = "paneboard"


def tag_for(pane_id: str) -> str:
    """The tag the service worker shows a pane's own push under."""
    return pane_id or GROUP_TAG


def group_message(
    title: str, body: str, extra: dict[str, Any] | None = None, *, tag: str = GROUP_TAG, renotify: bool = True
) -> str:
    """A burst told as one push. `tag`: the notification it replaces on the device (a
    burst's first push); `renotify` false: that replacement does not buzz again."""
    payload = {
        "pane": "",
        "title": title,
        "body": body[:1500],
        "state": None,
        "tag": tag,
        "renotify": renotify,
        **(extra or {}),
    }
    return json.dumps(payload, ensure_ascii=False)


class _NoRedirects:
    """What pywebpush calls `aiohttp_session`: its one `post`, with redirects off."""

    def __init__(self, session: aiohttp.ClientSession) -> None:
        self._session = session

    async def post(self, url: str, **kw: Any) -> aiohttp.ClientResponse:
        kw["allow_redirects"] = False
        return await self._session.post(url, **kw)


async def send(
    sub: Subscription,
    data: str,
    keys: VapidKeys,
    *,
    subject: str,
    topic: str | None,
    urgency: str = "normal",
    ttl: int = DEFAULT_TTL,
    session: aiohttp.ClientSession | None = None,
    timeout: float = 10.0,
) -> tuple[Outcome, int | None]:
    """Encrypt and deliver one message; returns the outcome and the HTTP status."""
    import aiohttp  # imported on first push: heavy, and most servers start without any
    from pywebpush import WebPushException, webpush_async

    headers: dict[str, str | int | float] = {"Urgency": urgency}
    if topic:
        headers["Topic"] = topic
    own = session is None
    http = aiohttp.ClientSession() if session is None else session
    try:
        resp = await webpush_async(
            sub.info(),
            data=data,
            vapid_private_key=keys.signer(),
            vapid_claims={"sub": subject},
            ttl=ttl,
            headers=headers,
            timeout=timeout,
            aiohttp_session=_NoRedirects(http),  # duck-typed: pywebpush calls only post()
        )
    except WebPushException as e:
        status = getattr(e.response, "status", None) or getattr(e.response, "status_code", None)
        return ("gone" if status in (404, 410) else "failed"), status
    except (aiohttp.ClientError, TimeoutError, OSError):
        return "failed", None
    finally:
        if own:
            await http.close()
    status = getattr(resp, "status", None)
    if not isinstance(status, int) or not 200 <= status < 300:
        return "failed", status  # a 3xx: pywebpush lets statuses up to 202 through
    return "sent", status
