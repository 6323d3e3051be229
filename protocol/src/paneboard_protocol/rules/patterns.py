"""Pattern translation: manifest regexes (herdr's Rust-flavoured escapes too) to Python `re`.

Kept apart so the same translation serves parsing, `rules explain` and any tool that
wants to test one pattern.
"""

from __future__ import annotations

import re
from typing import Any

from paneboard_protocol.rules.errors import ManifestError

_HERDR_HEX = re.compile(r"(?<!\\)((?:\\\\)*)\\x\{([0-9A-Fa-f]{1,8})\}")
_RUST_END = re.compile(r"(?<!\\)((?:\\\\)*)\\z")


def translate_regex(pattern: str) -> str:
    """Accept herdr's Rust-flavoured escapes: `\\x{2733}` -> `\\u2733`, `\\z` -> `\\Z`."""

    def hex_sub(m: re.Match[str]) -> str:
        pre, digits = m.group(1), m.group(2)
        cp = int(digits, 16)
        if cp <= 0xFF:
            return f"{pre}\\x{cp:02x}"
        if cp <= 0xFFFF:
            return f"{pre}\\u{cp:04x}"
        return f"{pre}\\U{cp:08x}"

    return _RUST_END.sub(lambda m: m.group(1) + "\\Z", _HERDR_HEX.sub(hex_sub, pattern))


def _str_list(value: Any, key: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ManifestError(f"{key} must be a list of strings (TA-19)")
    return value


def _compile(patterns: list[str], key: str) -> tuple[re.Pattern[str], ...]:
    out = []
    for p in patterns:
        try:
            out.append(re.compile(translate_regex(p)))
        except re.error as exc:
            raise ManifestError(f"{key}: regex {p!r} does not compile: {exc}") from None
    return tuple(out)
