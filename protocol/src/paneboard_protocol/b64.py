"""Strict standard base64, as report text needs it (F-5, P7501-19).

`base64.b64decode` silently drops junk (`Y!Q==` gives `a`) and, even with
`validate=True`, accepts non-canonical padding bits (`YR==`) and rejects unpadded
input. Report text is untrusted, and two different byte strings must never decode to
the same message, so here padding is optional but, when present, exact; the alphabet
is exactly `A-Za-z0-9+/`; and the unused low bits of the last character must be zero.
Nothing is stripped: C0 controls (base64 line wrapping) are already gone by framing (F-1).
"""

from __future__ import annotations

import binascii
import re

_CORE = re.compile(rb"[A-Za-z0-9+/]*")
_PADDING = (b"", b"=", b"==", b"===")


class Base64Error(ValueError):
    """The text is not strict base64; `str(err)` says why, in a phrase like 'has ...'."""


def _diagnose(core: bytes) -> str:
    if not _CORE.fullmatch(core):
        return "has a character outside the base64 alphabet"
    return "does not decode"  # pragma: no cover - binascii agrees with the checks here


def strict_b64decode(value: bytes) -> bytes:
    """Decode strict standard base64 (padding optional) or raise `Base64Error`."""
    core = value.rstrip(b"=")
    missing = (-len(core)) % 4
    pad = len(value) - len(core)
    if pad and pad != missing:
        raise Base64Error("has wrong padding")
    if missing == 3:
        raise Base64Error("has a length no base64 text can have")
    try:
        # strict_mode refuses anything outside the alphabet (binascii's default skips it).
        data = binascii.a2b_base64(core + _PADDING[missing], strict_mode=True)
    except binascii.Error:
        raise Base64Error(_diagnose(core)) from None
    if missing and binascii.b2a_base64(data, newline=False)[: len(core)] != core:
        raise Base64Error("has non-canonical padding bits")
    return data
