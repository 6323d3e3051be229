"""The collectors' uplink: one collector's socket behind `WS /api/ingest`, and its message validation.

`handle` (one socket: its token, hello, messages and acks; the route is api's),
`IngestRegistry` (the collectors connected to this process), `RefusedTokens` (the
back-off of collector tokens refused lately), and the frame decoder
other processes' relayed screens reuse (`parse`, `WireError`).
"""

from .refusals import RefusedTokens
from .uplink import IngestRegistry, handle
from .wire import WireError, parse

__all__ = ["IngestRegistry", "RefusedTokens", "WireError", "handle", "parse"]
