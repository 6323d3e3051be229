"""VAPID keys: made once on first start, kept in the database, never regenerated
(a new key would orphan every browser's push subscription)."""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from py_vapid import Vapid02


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


@dataclass(frozen=True, slots=True)
class VapidKeys:
    private_pem: str
    public_key: str  # base64url of the uncompressed P-256 point: the applicationServerKey

    @classmethod
    def generate(cls) -> VapidKeys:
        from py_vapid import Vapid02

        v = Vapid02()
        v.generate_keys()
        return cls.from_vapid(v)

    @classmethod
    def from_vapid(cls, v: Vapid02) -> VapidKeys:
        from cryptography.hazmat.primitives import serialization

        pem = v.private_pem().decode()
        raw = v.public_key.public_bytes(
            serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint
        )
        return cls(private_pem=pem, public_key=b64url(raw))

    def signer(self) -> Vapid02:
        from py_vapid import Vapid02

        return Vapid02.from_pem(self.private_pem.encode())
