"""`paneboard serve`: the application run under uvicorn, with the listening socket, logs, limits.

The socket is bound here, before uvicorn starts, so a port that cannot be bound is
one line and a non-zero exit (uvicorn would log it among its start-up messages). The
schema is checked first for the same reason: a database that cannot be opened is one
line, not a traceback from inside the lifespan.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import socket

from starlette.applications import Starlette

from .config import Config
from .services import services_of
from .serving import StoppingServer, TrustedProxies, connection_limits, logsafe
from .store import check_schema, create_engine, warn_exposure


def listen_socket(host: str, port: int) -> socket.socket:
    """A bound, listening TCP socket; OSError saying where and why when it cannot be."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise OSError(f"cannot listen on {host}:{port}: {exc.strerror}") from exc
    family, kind, proto, _, addr = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(addr)
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        raise OSError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
    sock.set_inheritable(True)
    return sock


def listen_url(sock: socket.socket) -> str:
    """The dashboard's address for the bound socket: its real port (also for --port 0);
    a wildcard address as this machine's name, since 0.0.0.0 is not a place to go."""
    addr, port = sock.getsockname()[:2]
    if addr in ("0.0.0.0", "::"):
        return f"http://{socket.gethostname()}:{port}/ (every interface)"
    return f"http://[{addr}]:{port}/" if ":" in addr else f"http://{addr}:{port}/"


#: Collector reports allocate a few dozen short-lived containers each. With CPython's
#: default thresholds (700, 10, 10) a busy server ran full collections over all its
#: live objects more than once a second, each with the event loop stopped: a large share
#: of a core, and most of the p99 of every report's delay (bench/ingest.py, before/after
#: in one run).
#: Reference counting frees the reports (dicts and lists of scalars); the cycles left
#: for the collector (tasks, exceptions with their frames) are few, so collecting them
#: less often costs little memory (peak RSS in the same runs did not grow).
GC_THRESHOLDS = (50_000, 50, 100)


def tune_gc() -> None:
    """Collect what start-up left, keep the survivors (modules, the app) out of every
    later collection, and collect young objects 70x less often."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)


def run_server(cfg: Config, url: str, host: str, port: int) -> int:
    import uvicorn

    from .app import create_app

    async def precheck() -> None:
        engine = create_engine(url)
        try:
            await check_schema(engine)
        finally:
            await engine.dispose()

    asyncio.run(precheck())
    sock = listen_socket(host, port)
    # Said once the store and the port are known good, so a refusal stays one line.
    warn_exposure("serve", url)
    print(f"paneboard serve: listening on {listen_url(sock)}", flush=True)
    logsafe.install()
    app = create_app(cfg, url)
    lim = cfg.limits
    http_protocol, limited = connection_limits(
        lim.header_timeout,
        lim.max_header_bytes,
        lim.max_connections_per_address,
        body_timeout=lim.body_timeout,
        per_credential=lim.max_streams_per_credential,
        trusted=TrustedProxies(cfg.server.trusted_proxies),
    )
    config = uvicorn.Config(
        limited(app),
        http=http_protocol,
        timeout_keep_alive=lim.keep_alive_timeout,  # type: ignore[arg-type]  # typed int; seconds to call_later
        limit_concurrency=lim.max_connections,
        host=host,
        port=port,
        ws_max_size=cfg.limits.max_message_bytes,
        ws_ping_interval=20,
        ws_ping_timeout=120,
        log_level="info",
        log_config=None,  # uvicorn's loggers propagate to logsafe's redacting handler
        lifespan="on",
        proxy_headers=False,  # conn_limits.py applies server.trusted_proxies (proxies.py)
        server_header=False,
    )
    server = StoppingServer(config, on_exit=lambda: _end_long_polls(app))
    tune_gc()
    with contextlib.suppress(KeyboardInterrupt):
        server.run(sockets=[sock])
    return 0 if server.started else 1


def _end_long_polls(app: Starlette) -> None:
    """A stop asked for: the screens' long polls answer now (before the app has started,
    there are none)."""
    with contextlib.suppress(RuntimeError):
        services_of(app).screens.stop()
