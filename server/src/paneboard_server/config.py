"""The server's configuration: a TOML file checked by msgspec Structs.

Unknown keys are errors (a typo must not silently do nothing) and every error names the
file, the key and the fix, e.g. `config.toml: retention.max_age_days: expected a number
greater than 0, got 0; e.g. max_age_days = 30` (`paneboard_protocol.settings`, which
the collector's configuration goes through too). `[notify]` is `notify_config.NotifySettings`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import urlsplit

import msgspec
from msgspec import Meta, Struct, field
from paneboard_protocol.settings import ConfigError, Invalid, convert, read_toml

from .notify_config import NotifySettings
from .serving import parse_networks

PUBLIC_URL_MAX = 300


def check_public_url(text: str) -> str:
    """The board's public address as notifications link to it (no trailing slash);
    ValueError in one sentence unless it is an http(s) URL with a host and nothing after
    its path (a query or fragment would break the pane links made from it)."""
    if not isinstance(text, str) or not text or len(text) > PUBLIC_URL_MAX:
        raise ValueError(f"must be an http:// or https:// URL of at most {PUBLIC_URL_MAX} characters")
    if any(c.isspace() or not c.isprintable() for c in text):
        raise ValueError("must be an http:// or https:// URL without spaces or control characters")
    try:
        u = urlsplit(text)
        host = u.hostname
        u.port  # noqa: B018 - a bad port raises here
    except ValueError:
        host = None
    if u.scheme not in ("http", "https") or not host:
        raise ValueError(f"must be an http:// or https:// URL with a host, not {text[:80]!r}")
    if u.query or u.fragment or "#" in text or "?" in text or u.username or u.password:
        raise ValueError("must be an http:// or https:// URL without credentials, query or fragment")
    return text.rstrip("/")


# Counts and durations that must be above 0 (0 would disable a limit by accident).
PosInt = Annotated[int, Meta(gt=0)]
PosFloat = Annotated[float, Meta(gt=0)]


class _Strict(Struct, forbid_unknown_fields=True):
    """A table of the file: a key it does not know is an error."""


class ServerSection(_Strict):
    host: str = "127.0.0.1"
    port: Annotated[int, Meta(ge=1, le=65535)] = 8765
    db: str | None = None
    # Seconds a collector may be away before its hosts are shown unreachable.
    grace_period: Annotated[float, Meta(ge=0)] = 30.0
    # Origins allowed for state-changing browser requests besides the server's own.
    allowed_origins: list[str] = []
    # Mark cookies Secure (set when served behind HTTPS).
    cookie_secure: bool = False
    session_days: PosFloat = 30.0
    # Seconds an answer from the board may wait to be typed (docs/answers.md).
    answer_ttl: Annotated[float, Meta(gt=0, le=3600)] = 60.0
    # Addresses or networks of reverse proxies whose X-Forwarded-For names the client
    # (proxies.py); empty: every peer is the client itself.
    trusted_proxies: list[str] = []
    # The address people reach the board at (e.g. "https://board.example" behind a
    # proxy): notifications link to a pane's page under it, and its origin may post.
    public_url: str | None = None

    def __post_init__(self) -> None:
        try:
            parse_networks(self.trusted_proxies)
        except ValueError as exc:  # names the item
            raise Invalid(
                "trusted_proxies", str(exc), 'give addresses or networks, e.g. ["127.0.0.1"]'
            ) from None
        if self.public_url is not None:
            try:
                self.public_url = check_public_url(self.public_url)
            except ValueError as exc:
                raise Invalid("public_url", str(exc), 'e.g. public_url = "https://board.example"') from None


class RetentionSection(_Strict):
    max_age_days: PosFloat = 30.0
    max_per_pane: PosInt = 2000
    gone_pane_days: PosFloat = 7.0
    # Gone panes kept on disk per collector: beyond it the oldest gone are deleted with
    # their history at once (not only after gone_pane_days).
    max_gone_panes: PosInt = 2000
    # Closed ledger rows (waits) begun in the last day kept per collector: beyond it the
    # ones nobody answered go first, never one answered from paneboard (wait_cap.py).
    max_waits_per_day: PosInt = 5000
    interval: PosFloat = 300.0
    batch: PosInt = 500


class LimitsSection(_Strict):
    max_message_bytes: Annotated[int, Meta(gt=1024)] = 1 << 20
    max_body_bytes: Annotated[int, Meta(gt=1024)] = 64 << 10
    max_panes_per_message: PosInt = 5000
    sse_queue: PosInt = 512
    sse_ping: PosFloat = 15.0
    # Seconds a collector has after its WebSocket opens to send its hello.
    hello_timeout: PosFloat = 5.0
    # Live panes one collector may have; a message that would exceed it is refused.
    max_live_panes_per_collector: PosInt = 10000
    # Gone panes kept in memory per collector (the oldest beyond it stay in the database only).
    gone_in_memory: Annotated[int, Meta(ge=0)] = 1000
    # Seconds one send to an SSE client may block (it is not reading) before it is dropped.
    sse_send_timeout: PosFloat = 30.0
    # Before authentication (see conn_limits.py): seconds to send the request line and
    # headers, their largest size, seconds an idle keep-alive connection is kept, open
    # connections per client address, open connections (and tasks) in all (503 beyond).
    header_timeout: PosFloat = 10.0
    # Seconds a request's body may take once its headers are in (bodies are read before
    # the credentials they come with are checked).
    body_timeout: PosFloat = 10.0
    # Live streams one credential (account session or viewer token) may hold open; they
    # are counted there, not against their address.
    max_streams_per_credential: PosInt = 64
    max_header_bytes: Annotated[int, Meta(gt=1024)] = 64 << 10
    keep_alive_timeout: PosFloat = 5.0
    max_connections_per_address: PosInt = 256
    max_connections: PosInt = 10000
    # Wrong passwords allowed per account / per client address before back-off starts,
    # and the longest back-off (seconds); see throttle.py.
    login_account_failures: PosInt = 5
    login_address_failures: PosInt = 20
    login_max_backoff: PosFloat = 300.0
    # Refusals of one collector token before its next connections are delayed, and the
    # longest delay (seconds); see ingest/refusals.py.
    collector_refusals_free: PosInt = 1
    collector_max_backoff: PosFloat = 30.0
    # Seconds between checks that open streams' and collectors' credentials still exist.
    revocation_check: PosFloat = 0.5
    # Password checks running at once (each is one worker thread of argon2).
    login_concurrency: PosInt = 4
    # Seconds one writer batch may run before /healthz says the writer is stuck (503): a
    # lock another connection holds makes PostgreSQL wait without end, while reads and so
    # the database check of /healthz still work.
    writer_stall: PosFloat = 30.0


class Config(_Strict):
    server: ServerSection = field(default_factory=ServerSection)
    retention: RetentionSection = field(default_factory=RetentionSection)
    limits: LimitsSection = field(default_factory=LimitsSection)
    notify: NotifySettings = field(default_factory=NotifySettings)

    def with_trusted_proxies(self, spec: str) -> Config:
        """This configuration with `server.trusted_proxies` from a comma-separated list
        (`--trusted-proxies`); ConfigError naming a bad item."""
        items = [i.strip() for i in spec.split(",") if i.strip()]
        try:
            parse_networks(items)
        except ValueError as exc:
            raise ConfigError(f"--trusted-proxies: {exc}") from exc
        return msgspec.structs.replace(
            self, server=msgspec.structs.replace(self.server, trusted_proxies=items)
        )

    def with_public_url(self, text: str, source: str) -> Config:
        """This configuration with `server.public_url` from `source` (`--public-url`,
        `$PANEBOARD_PUBLIC_URL`); ConfigError in one line if it is not http(s)."""
        try:
            url = check_public_url(text)
        except ValueError as exc:
            raise ConfigError(f"{source}: {exc}") from exc
        return msgspec.structs.replace(self, server=msgspec.structs.replace(self.server, public_url=url))


def parse_config(data: Mapping[str, Any], source: str = "config") -> Config:
    """The configuration in a TOML table; ConfigError `SOURCE: KEY: problem; fix`."""
    return convert(data, Config, source)


def load_config(path: str | Path | None) -> Config:
    """The configuration in the TOML file at `path` (None: the defaults)."""
    if path is None:
        return Config()
    return parse_config(read_toml(path), str(path))


__all__ = ["Config", "ConfigError", "check_public_url", "load_config", "parse_config"]
