"""Quoting untrusted bytes inside rejection reasons: short, printable ASCII, never raw."""

from __future__ import annotations

_MAX = 40


def quote(value: bytes | str) -> str:
    """`'value'` with non-printable-ASCII escaped and long values cut to 40 characters."""
    if isinstance(value, bytes):
        text = value.decode("ascii", "backslashreplace")
    else:
        text = value.encode("ascii", "backslashreplace").decode("ascii")
    text = "".join(ch if " " <= ch <= "~" else f"\\x{ord(ch):02x}" for ch in text)
    if len(text) > _MAX:
        text = text[: _MAX - 1] + "…"
    return f"'{text}'"
