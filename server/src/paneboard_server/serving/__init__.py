"""Under uvicorn: pre-authentication limits, trusted proxies, middleware, safe logs.

`connection_limits` (the protocol for uvicorn and the application wrapper that keep
the per-address, header and body limits; `SLOT`, the scope key a request finds its slot
under), `TrustedProxies`
and `parse_networks` (which reverse proxies are believed), `Guard` (the middleware:
request-body limit, security headers), and `logsafe` (the module: credentials kept
out of every log line, `logsafe.install()`), and `StoppingServer` (uvicorn's server,
which ends the long polls as soon as a stop is asked for).
"""

from . import logsafe
from .conn_limits import SLOT, connection_limits
from .middleware import Guard
from .proxies import TrustedProxies, parse_networks
from .stopping import StoppingServer

__all__ = [
    "SLOT",
    "Guard",
    "StoppingServer",
    "TrustedProxies",
    "connection_limits",
    "logsafe",
    "parse_networks",
]
