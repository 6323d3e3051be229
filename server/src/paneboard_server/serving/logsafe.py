"""Keep credentials out of every log line, uvicorn's access log included.

A viewer token can arrive as `GET /?token=pbv_…`, and uvicorn's access log writes the
whole request line. Rather than trusting each logger to be careful, one formatter sits on
the root handler (uvicorn's loggers propagate to it, see `serve.run_server`) and rewrites
every record's final text: the values of credential-looking query parameters and
anything shaped like a paneboard token become `[redacted]`.

The server reads a query's names and values percent-decoded (`/?%74oken=%70bv_…` is
`token=pbv_…` to it), so the log is judged the same way: each parameter of every query
string is decoded (repeatedly, so double encoding does not hide it either) before its
name and value are compared, and what is written keeps the request's own spelling of
the name with the value redacted.
"""

from __future__ import annotations

import logging
import re
from urllib.parse import unquote_plus

REDACTED = "[redacted]"
# Our bearer tokens (`pbc_`/`pbv_` + base64url) wherever they appear, and the value of
# any query parameter that commonly carries a secret.
_TOKEN = re.compile(r"pb[cv]_[A-Za-z0-9_\-]{8,}")
_SECRET_NAMES = frozenset({"token", "access_token", "auth", "key", "password", "session"})
# A query string as it appears in a request line or URL: from `?` to a space or quote.
_QUERY = re.compile(r"\?[^\s\"'<>]*")


def _decoded(text: str) -> str:
    """Percent-decoded until it no longer changes (at most a few rounds)."""
    for _ in range(4):
        plain = unquote_plus(text)
        if plain == text:
            break
        text = plain
    return text


def _redact_param(part: str) -> str:
    name, eq, value = part.partition("=")
    if not eq:
        return REDACTED if _TOKEN.search(_decoded(name)) else part
    if _decoded(name).strip().lower() in _SECRET_NAMES or _TOKEN.search(_decoded(value)):
        return f"{name}={REDACTED}"
    return part


def _redact_query(m: re.Match[str]) -> str:
    return "?" + "&".join(_redact_param(p) for p in m.group(0)[1:].split("&"))


def redact(text: str) -> str:
    """`text` with tokens and secret query values replaced, however percent-encoded."""
    return _TOKEN.sub(REDACTED, _QUERY.sub(_redact_query, text))


class RedactingFormatter(logging.Formatter):
    """Redacts the whole formatted record, traceback included, so nothing escapes."""

    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record))


FORMAT = "%(asctime)s %(name)s %(levelname)s %(message)s"


def install() -> None:
    """Route every logger (uvicorn's too) to one stderr handler that redacts."""
    root = logging.getLogger()
    handler = logging.StreamHandler()
    handler.setFormatter(RedactingFormatter(FORMAT))
    for h in list(root.handlers):
        root.removeHandler(h)
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access", "uvicorn.asgi"):
        lg = logging.getLogger(name)
        lg.handlers.clear()
        lg.propagate = True
