"""Under uvicorn: pre-authentication limits, trusted proxies, middleware, safe logs.

`protocols` (uvicorn's connection classes with the per-address and header limits;
`SLOT`, the scope key a request finds its connection's slot under), `TrustedProxies`
and `parse_networks` (which reverse proxies are believed), `Guard` (the middleware:
request-body limit, security headers), and `logsafe` (the module: credentials kept
out of every log line, `logsafe.install()`).
"""

from . import logsafe
from .conn_limits import SLOT, protocols
from .middleware import Guard
from .proxies import TrustedProxies, parse_networks

__all__ = ["SLOT", "Guard", "TrustedProxies", "logsafe", "parse_networks", "protocols"]
