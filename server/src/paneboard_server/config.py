"""The server's configuration: a TOML file validated by pydantic.

Unknown keys are errors (a typo must not silently do nothing) and every error names
the key, e.g. `config.toml: retention.max_age_days: Input should be greater than 0`.
`[notify]` is kept as a free-form table here and validated by `notify.service.NotifySettings`.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .serving import parse_networks


class ConfigError(Exception):
    pass


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


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ServerSection(_Strict):
    host: str = "127.0.0.1"
    port: int = Field(8765, ge=1, le=65535)
    db: str | None = None
    # Seconds a collector may be away before its hosts are shown unreachable.
    grace_period: float = Field(30.0, ge=0)
    # Origins allowed for state-changing browser requests besides the server's own.
    allowed_origins: list[str] = []
    # Mark cookies Secure (set when served behind HTTPS).
    cookie_secure: bool = False
    session_days: float = Field(30.0, gt=0)
    # Seconds an answer from the board may wait to be typed (docs/answers.md).
    answer_ttl: float = Field(60.0, gt=0, le=3600)
    # Addresses or networks of reverse proxies whose X-Forwarded-For names the client
    # (proxies.py); empty: every peer is the client itself.
    trusted_proxies: list[str] = []
    # The address people reach the board at (e.g. "https://board.example" behind a
    # proxy): notifications link to a pane's page under it, and its origin may post.
    public_url: str | None = None

    @field_validator("public_url")
    @classmethod
    def _public_url(cls, v: str | None) -> str | None:
        return None if v is None else check_public_url(v)

    @field_validator("trusted_proxies")
    @classmethod
    def _networks(cls, v: list[str]) -> list[str]:
        parse_networks(v)  # ValueError names the item
        return v


class RetentionSection(_Strict):
    max_age_days: float = Field(30.0, gt=0)
    max_per_pane: int = Field(2000, gt=0)
    gone_pane_days: float = Field(7.0, gt=0)
    # Gone panes kept on disk per collector: beyond it the oldest gone are deleted with
    # their history at once (not only after gone_pane_days).
    max_gone_panes: int = Field(2000, gt=0)
    # Closed ledger rows (waits) begun in the last day kept per collector: beyond it the
    # ones nobody answered go first, never one answered from paneboard (wait_cap.py).
    max_waits_per_day: int = Field(5000, gt=0)
    interval: float = Field(300.0, gt=0)
    batch: int = Field(500, gt=0)


class LimitsSection(_Strict):
    max_message_bytes: int = Field(1 << 20, gt=1024)
    max_body_bytes: int = Field(64 << 10, gt=1024)
    max_panes_per_message: int = Field(5000, gt=0)
    sse_queue: int = Field(512, gt=0)
    sse_ping: float = Field(15.0, gt=0)
    # Seconds a collector has after its WebSocket opens to send its hello.
    hello_timeout: float = Field(5.0, gt=0)
    # Live panes one collector may have; a message that would exceed it is refused.
    max_live_panes_per_collector: int = Field(10000, gt=0)
    # Gone panes kept in memory per collector (the oldest beyond it stay in the database only).
    gone_in_memory: int = Field(1000, ge=0)
    # Seconds one send to an SSE client may block (it is not reading) before it is dropped.
    sse_send_timeout: float = Field(30.0, gt=0)
    # Before authentication (see conn_limits.py): seconds to send the request line and
    # headers, their largest size, seconds an idle keep-alive connection is kept, open
    # connections per client address, open connections (and tasks) in all (503 beyond).
    header_timeout: float = Field(10.0, gt=0)
    # Seconds a request's body may take once its headers are in (bodies are read before
    # the credentials they come with are checked).
    body_timeout: float = Field(10.0, gt=0)
    # Live streams one credential (account session or viewer token) may hold open; they
    # are counted there, not against their address.
    max_streams_per_credential: int = Field(64, gt=0)
    max_header_bytes: int = Field(64 << 10, gt=1024)
    keep_alive_timeout: float = Field(5.0, gt=0)
    max_connections_per_address: int = Field(256, gt=0)
    max_connections: int = Field(10000, gt=0)
    # Wrong passwords allowed per account / per client address before back-off starts,
    # and the longest back-off (seconds); see throttle.py.
    login_account_failures: int = Field(5, gt=0)
    login_address_failures: int = Field(20, gt=0)
    login_max_backoff: float = Field(300.0, gt=0)
    # Refusals of one collector token before its next connections are delayed, and the
    # longest delay (seconds); see ingest/refusals.py.
    collector_refusals_free: int = Field(1, gt=0)
    collector_max_backoff: float = Field(30.0, gt=0)
    # Seconds between checks that open streams' and collectors' credentials still exist.
    revocation_check: float = Field(0.5, gt=0)
    # Password checks running at once (each is one worker thread of argon2).
    login_concurrency: int = Field(4, gt=0)
    # Seconds one writer batch may run before /healthz says the writer is stuck (503): a
    # lock another connection holds makes PostgreSQL wait without end, while reads and so
    # the database check of /healthz still work.
    writer_stall: float = Field(30.0, gt=0)


class Config(_Strict):
    server: ServerSection = ServerSection()
    retention: RetentionSection = RetentionSection()
    limits: LimitsSection = LimitsSection()
    notify: dict[str, Any] = {}

    def with_trusted_proxies(self, spec: str) -> Config:
        """This configuration with `server.trusted_proxies` from a comma-separated list
        (`--trusted-proxies`); ConfigError naming a bad item."""
        items = [i.strip() for i in spec.split(",") if i.strip()]
        try:
            parse_networks(items)
        except ValueError as exc:
            raise ConfigError(f"--trusted-proxies: {exc}") from exc
        return self.model_copy(update={"server": self.server.model_copy(update={"trusted_proxies": items})})

    def with_public_url(self, text: str, source: str) -> Config:
        """This configuration with `server.public_url` from `source` (`--public-url`,
        `$PANEBOARD_PUBLIC_URL`); ConfigError in one line if it is not http(s)."""
        try:
            url = check_public_url(text)
        except ValueError as exc:
            raise ConfigError(f"{source}: {exc}") from exc
        return self.model_copy(update={"server": self.server.model_copy(update={"public_url": url})})


def load_config(path: str | Path | None) -> Config:
    if path is None:
        return Config()
    p = Path(path)
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ConfigError(f"{p}: no such file") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{p}: cannot read: {exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{p}: not valid TOML: {exc}") from exc
    try:
        return Config.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        key = ".".join(str(part) for part in err["loc"])
        raise ConfigError(f"{p}: {key}: {err['msg']}") from exc
