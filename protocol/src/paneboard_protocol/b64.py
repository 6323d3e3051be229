"""Strict standard base64, as report text needs it (F-5, P7501-19).

`base64.b64decode` silently drops junk (`Y!Q==` gives `a`) and, even with
`validate=True`, accepts non-canonical padding bits (`YR==`) and rejects unpadded
input. Report text is untrusted, and two different byte strings must never decode to
the same message, so here padding is optional but, when present, exact; the alphabet
is exactly `A-Za-z0-9+/`; and the unused low bits of the last character must be zero.
Nothing is stripped: C0 controls (base64 line wrapping) are already gone by framing (F-1).
"""

from __future__ import annotations

import base64
import binascii
import re

_CORE = re.compile(rb"[A-Za-z0-9+/]*")


class Base64Error(ValueError):
    """The text is not strict base64; `str(err)` says why, in a phrase like 'has ...'."""


def strict_b64decode(value: bytes) -> bytes:
    """Decode strict standard base64 (padding optional) or raise `Base64Error`."""
    core = value.rstrip(b"=")
    pad = len(value) - len(core)
    if pad and pad != (-len(core)) % 4:
        raise Base64Error("has wrong padding")
    if not _CORE.fullmatch(core):
        raise Base64Error("has a character outside the base64 alphabet")
    if len(core) % 4 == 1:
        raise Base64Error("has a length no base64 text can have")
    try:
        data = base64.b64decode(core + b"=" * ((-len(core)) % 4), validate=True)
    except binascii.Error as exc:  # pragma: no cover - excluded by the checks above
        raise Base64Error(f"does not decode ({exc})") from None
    if base64.b64encode(data).rstrip(b"=") != core:
        raise Base64Error("has non-canonical padding bits")
    return data
