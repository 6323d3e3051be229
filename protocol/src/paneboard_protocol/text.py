"""Making untrusted report text safe to show (P7501-19).

Programs put free text in `msg`, `title` and user variables. Before a person sees it,
bidi controls (which can reorder what is displayed, "Trojan Source") and invisible
formatting characters (which can hide or disguise text) are removed, and control
characters and line/paragraph separators are turned into nothing or a space, so one
report is one harmless line. The decoder keeps text exactly as sent; the classifier
(`records.display_text`, so the collector) and the server's ingest validation
(`paneboard_server.ingest.wire`) both clean text with this one function, so what the collector
shows and what the server stores, serves and notifies about cannot differ.
"""

from __future__ import annotations

import re
import unicodedata

# Everything outside printable ASCII goes through the slow check; ASCII text is untouched
# by the regex engine's fast path.
_SUSPECT = re.compile(r"[^\x20-\x7e]")
# Joiners shape Indic/Arabic scripts and emoji sequences; they reorder and hide nothing.
_KEEP_FORMAT = frozenset({"\u200c", "\u200d"})


def _replace(match: re.Match[str]) -> str:
    ch = match.group()
    category = unicodedata.category(ch)
    if category in ("Zl", "Zp"):
        return " "
    if ch in ("\t", "\n", "\r"):
        return " "
    if category in ("Cc", "Cs", "Co"):
        return ""
    if category == "Cf" and ch not in _KEEP_FORMAT:
        return ""
    return ch


def sanitize_text(text: str) -> str:
    """Return `text` without bidi controls, invisible format characters and controls.

    Tabs, newlines and Unicode line/paragraph separators become spaces (the result is
    one line); other C0/C1 controls (NUL too, which PostgreSQL cannot store), lone
    surrogates (no backend can encode them), private-use characters and format characters
    (category Cf: bidi embeddings, overrides and isolates, zero-width space, word joiner,
    BOM, soft hyphen, tag characters, ...) are removed. ZWJ/ZWNJ are kept because scripts
    need them.
    """
    if text.isascii() and text.isprintable():
        return text
    return _SUSPECT.sub(_replace, text)


__all__ = ["sanitize_text"]
