"""Keep credentials out of every log line, uvicorn's access log included.

A viewer token can arrive as `GET /?token=pbv_…`, and uvicorn's access log writes the
whole request line. Rather than trusting each logger to be careful, one formatter sits on
the root handler (uvicorn's loggers propagate to it, see `serve.run_server`) and rewrites
every record's final text: the values of credential-looking query parameters and
anything shaped like a paneboard token become `[redacted]`.
"""

from __future__ import annotations

import logging
import re

REDACTED = "[redacted]"
# Our bearer tokens (`pbc_`/`pbv_` + base64url) wherever they appear, and the value of
# any query parameter that commonly carries a secret.
_TOKEN = re.compile(r"pb[cv]_[A-Za-z0-9_\-]{8,}")
_PARAM = re.compile(r"(?i)([?&](?:token|access_token|auth|key|password|session)=)[^&\s\"']*")


def redact(text: str) -> str:
    """`text` with tokens and secret query values replaced."""
    return _TOKEN.sub(REDACTED, _PARAM.sub(r"\1" + REDACTED, text))


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
