"""The database schema, as SQLAlchemy Core tables.

Core rather than the ORM: the hot path (a burst of pane updates committed in one
transaction) is a handful of executemany statements, and Core keeps that cheap and
explicit. The Alembic migrations in `migrations/` create exactly these tables; the
test suite checks the two agree (`test_migrations_match_schema`).

Tables of the notification and dashboard features (push subscriptions, VAPID keys, the
notification log, quiet rules) live here too so there is one migration chain.
"""

from __future__ import annotations

from typing import Any

from paneboard_protocol.pane import (
    BY_NAME,
    HISTORY_FIELDS,
    KIND_MAX,
    NAME_MAX,
    PANE_ID_MAX,
    ROW_FIELDS,
    STATE_MAX,
)
from paneboard_protocol.wire import STREAM_MAX, VERSION_MAX
from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    false,
    select,
)
from sqlalchemy.sql import Select

metadata = MetaData()

# Columns that hold what a collector sent are sized by the protocol's limits (the wire's
# validation uses the same names), so nothing that passes validation is too wide for its
# column; `tests/server/test_server_limits.py` reads every column against the wire.


def pane_columns(names: tuple[str, ...]) -> list[Column]:
    """The columns of these `paneboard_protocol.pane` fields (the migrations are held to them)."""
    out: list[Column] = []
    for name in names:
        f = BY_NAME[name]
        if f.type == "str":
            typ: Any = String(f.sql_len) if f.sql_len else Text
        elif f.type == "int":
            typ = BigInteger if f.sql_big else Integer
        else:
            typ = {"float": Float, "bool": Boolean, "json": JSON}[f.type]
        if f.nullable:
            out.append(Column(name, typ))
        else:
            out.append(Column(name, typ, nullable=False, default=f.default))
    return out


# Bearer tokens, collector ("collector") or read-only viewer ("viewer"): only a hash is stored.
tokens = Table(
    "tokens",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("name", String(128), nullable=False),
    Column("kind", String(16), nullable=False),
    Column("token_hash", String(64), nullable=False, unique=True),
    Column("created_at", Float, nullable=False),
    Column("revoked_at", Float),
    Column("last_used", Float),
    # A viewer token shows panes' screens only if created with --screens (docs/answers.md).
    Column("screens", Boolean, nullable=False, default=False, server_default=false()),
    UniqueConstraint("kind", "name", name="uq_tokens_kind_name"),
)

# One row per collector token: where its uplink stream stands (seq survives restarts).
collectors = Table(
    "collectors",
    metadata,
    Column("token_id", Integer, ForeignKey("tokens.id", ondelete="CASCADE"), primary_key=True),
    Column("version", String(VERSION_MAX)),
    Column("stream", String(STREAM_MAX)),
    Column("last_seq", BigInteger),
    Column("connected", Boolean, nullable=False, default=False),
    Column("last_seen", Float),
)

hosts = Table(
    "hosts",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("collector_id", Integer, ForeignKey("tokens.id", ondelete="CASCADE"), nullable=False),
    Column("name", String(NAME_MAX), nullable=False),
    Column("reachable", Boolean, nullable=False, default=True),
    Column("error", Text),
    Column("last_seen", Float),
    Column("unreachable_since", Float),
    UniqueConstraint("collector_id", "name", name="uq_hosts_collector_name"),
)

# tmux sessions seen per host (tmux server + session name), for grouping on the board.
tmux_sessions = Table(
    "tmux_sessions",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("host_id", Integer, ForeignKey("hosts.id", ondelete="CASCADE"), nullable=False),
    Column("tmux", String(NAME_MAX), nullable=False),
    Column("name", String(NAME_MAX), nullable=False),
    Column("last_seen", Float),
    UniqueConstraint("host_id", "tmux", "name", name="uq_tmux_sessions"),
)

# Current classification of every pane. `rev` is a global change counter: the SSE
# stream's event ids, so a client resuming with Last-Event-ID gets every pane whose
# rev is newer. `gone_at` marks panes that left (kept until retention removes them so
# a resuming client learns they are gone).
panes = Table(
    "panes",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("host_id", Integer, ForeignKey("hosts.id", ondelete="CASCADE"), nullable=False),
    Column("tmux", String(NAME_MAX), nullable=False),
    Column("pane", String(PANE_ID_MAX), nullable=False),
    *pane_columns(ROW_FIELDS),
    UniqueConstraint("host_id", "tmux", "pane", name="uq_panes_key"),
    # no index on rev: revs are looked up in memory, and each update would pay for one
    # (panes_0005)
)

# The pane's current OSC 7501 records (P7501-6: one per id, root id is "").
pane_records = Table(
    "pane_records",
    metadata,
    Column("pane_id", Integer, ForeignKey("panes.id", ondelete="CASCADE"), primary_key=True),
    # Filled from free-form records, cut to these widths (`panes/flush.py`).
    Column("record_id", String(NAME_MAX), primary_key=True),
    Column("state", String(STATE_MAX)),
    Column("kind", String(KIND_MAX)),
    Column("app", Text),
    Column("msg", Text),
    Column("title", Text),
    Column("data", JSON),
)

# State-change history: one row each time a pane's (agent, state, kind) changes.
history = Table(
    "history",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("pane_id", Integer, ForeignKey("panes.id", ondelete="CASCADE"), nullable=False),
    Column("t", Float, nullable=False),
    *pane_columns(HISTORY_FIELDS),
    Column("prev_state", String(STATE_MAX)),
    Column("reason", String(32), nullable=False),
    Index("ix_history_pane", "pane_id", "id"),
    Index("ix_history_t", "t"),
)

viewers = Table(
    "viewers",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("name", String(128), nullable=False, unique=True),
    Column("password_hash", String(255), nullable=False),
    Column("created_at", Float, nullable=False),
    Column("settings", JSON),
    # May answer a blocked pane's prompt from the board (`paneboard user add NAME --operator`).
    Column("operator", Boolean, nullable=False, default=False, server_default=false()),
)

# Browser sessions (cookies): only a hash of the cookie value is stored.
web_sessions = Table(
    "web_sessions",
    metadata,
    Column("id_hash", String(64), primary_key=True),
    Column("viewer_id", Integer, ForeignKey("viewers.id", ondelete="CASCADE")),
    Column("token_id", Integer, ForeignKey("tokens.id", ondelete="CASCADE")),
    Column("csrf", String(64), nullable=False),
    Column("readonly", Boolean, nullable=False, default=False),
    Column("created_at", Float, nullable=False),
    Column("expires_at", Float, nullable=False),
    # A session a pairing link opened without the operator role (`paneboard pair`
    # without --operator): it never answers prompts, whatever its account may do.
    Column("plain", Boolean, nullable=False, default=False, server_default=false()),
    Index("ix_web_sessions_expires", "expires_at"),
)

# Single-use sign-in links (`paneboard pair`, docs/phone.md): only a hash of the link's
# token is stored. `used_at` is set once, by the one request that signs in with it.
pair_links = Table(
    "pair_links",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("token_hash", String(64), nullable=False, unique=True),
    Column("viewer_id", Integer, ForeignKey("viewers.id", ondelete="CASCADE"), nullable=False),
    Column("operator", Boolean, nullable=False, default=False),
    Column("created_at", Float, nullable=False),
    Column("expires_at", Float, nullable=False),
    Column("used_at", Float),
    Index("ix_pair_links_expires", "expires_at"),
)

# Every pairing event, made or refused (insert-only, pruned by age like the answer
# audit). Names and addresses are kept as text so a record outlives its link and login.
pair_audit = Table(
    "pair_audit",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("t", Float, nullable=False),
    Column("link_id", Integer, ForeignKey("pair_links.id", ondelete="SET NULL")),
    Column("account", String(128)),
    Column("role", String(16)),
    Column("event", String(16), nullable=False),
    Column("who", String(255), nullable=False),
    Column("agent", String(255)),
    Index("ix_pair_audit_t", "t"),
)

push_subscriptions = Table(
    "push_subscriptions",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("viewer_id", Integer, ForeignKey("viewers.id", ondelete="CASCADE")),
    Column("endpoint", Text, nullable=False, unique=True),
    Column("p256dh", String(255), nullable=False),
    Column("auth", String(255), nullable=False),
    Column("created_at", Float, nullable=False),
    Column("last_ok", Float),
    # The last failed send (time and why, one line): the settings panel shows both per device.
    Column("last_fail", Float),
    Column("last_error", String(255)),
    # What the device said it is when it subscribed (the browser's own short label).
    Column("device", String(128)),
)

vapid_keys = Table(
    "vapid_keys",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("private_pem", Text, nullable=False),
    Column("public_b64", Text, nullable=False),
    Column("subject", String(255)),
    Column("created_at", Float, nullable=False),
)

notification_log = Table(
    "notification_log",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("pane_id", Integer, ForeignKey("panes.id", ondelete="SET NULL")),
    Column("channel", String(255), nullable=False),
    Column("state", String(16)),
    Column("t", Float, nullable=False),
    Column("ok", Boolean, nullable=False),
    Column("detail", Text),
    # Why it was sent: "block" (first block), "done", "escalation", "grouped", "test".
    Column("reason", String(16)),
    # The wait (`waits.id`) it was about, when one.
    Column("wait_id", Integer),
    # Whose delivery it is ("viewer:ID", "viewer-token:ID"): a push or a page's own
    # notification is read back by its owner only. NULL: a server-wide channel (Apprise).
    Column("owner", String(64)),
    Index("ix_notification_log_t", "t"),
)

# The ledger (`ledger.py`): every stretch a pane spent blocked or done, derived from
# history in the transaction that wrote the history. Host, pane and the rest are copied
# so an interval outlives its pane; `end_t` NULL: still waiting. `answered_by`: who
# answered it from paneboard, when it was answered there (the answer feature sets it).
waits = Table(
    "waits",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("pane_id", Integer, ForeignKey("panes.id", ondelete="SET NULL")),
    Column("host", String(NAME_MAX), nullable=False),
    Column("tmux", String(NAME_MAX), nullable=False),
    Column("pane", String(PANE_ID_MAX), nullable=False),
    Column("session", Text),
    Column("agent", String(NAME_MAX)),
    Column("state", String(STATE_MAX), nullable=False),
    Column("kind", String(KIND_MAX)),
    Column("msg", Text),
    Column("start_t", Float, nullable=False),
    Column("end_t", Float),
    Column("ended", String(16)),
    Column("end_state", String(16)),
    Column("answered_by", String(128)),
    Index("ix_waits_start", "start_t"),
    Index("ix_waits_open", "end_t"),
    # The one index keyed by pane: the writer's read of its panes' open and recently
    # closed waits (panes/waits.py), and a pane's waits for an answer's mark
    # (ledger/store.py). A second one, (pane_id, start_t), cost a WAL page on ~0.3 of
    # the reports for queries this serves as well (ledger_0005).
    Index("ix_waits_pane_end", "pane_id", "end_t"),
)

# Mutes / snoozes / do-not-disturb (scope: pane, host, agent, global).
quiet_rules = Table(
    "quiet_rules",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("viewer_id", Integer, ForeignKey("viewers.id", ondelete="CASCADE")),
    Column("scope", String(16), nullable=False),
    Column("value", String(255)),
    Column("until", Float),
    Column("created_at", Float, nullable=False),
)

# Every answer attempt from the board, typed or refused (docs/answers.md): a row is
# changed only to count one more refusal of its burst (`count`, `done_at`) and deleted
# only by retention's age cut-off. The pane's key is kept as text so the record
# outlives the pane's row.
answers = Table(
    "answers",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("t", Float, nullable=False),
    Column("pane_id", Integer, ForeignKey("panes.id", ondelete="SET NULL")),
    Column("host", String(NAME_MAX), nullable=False),
    Column("tmux", String(NAME_MAX), nullable=False),
    Column("pane", String(PANE_ID_MAX), nullable=False),
    Column("viewer_id", Integer, ForeignKey("viewers.id", ondelete="SET NULL")),
    Column("who", String(128), nullable=False),
    Column("fingerprint", String(64), nullable=False),
    Column("prompt", Text),
    Column("answer", String(32)),
    Column("label", String(128)),
    Column("text", Text),
    Column("outcome", String(16), nullable=False),
    Column("done_at", Float),
    # A burst of one refusal by one credential on one pane is one row: how many it
    # stands for, `done_at` the last of them (answers/desk.py; answer_0003).
    Column("count", Integer, nullable=False, server_default="1"),
    # from where: the client address the server saw (through trusted proxies), so a
    # follow-up, which can run code as the pane's user, is traced (answer_0007)
    Column("source", String(64)),
    Index("ix_answers_pane", "pane_id", "id"),
    Index("ix_answers_t", "t"),
)


def pane_page(table: Table, pane_id: int, limit: int, before: int | None = None) -> Select[Any]:
    """One page of a pane's rows (history, answers), newest first, older than `before`:
    the paging every per-pane list of the API shares (its index is `(pane_id, id)`)."""
    q = select(table).where(table.c.pane_id == pane_id)
    if before is not None:
        q = q.where(table.c.id < before)
    return q.order_by(table.c.id.desc()).limit(limit)
