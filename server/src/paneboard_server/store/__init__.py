"""The database: schema, engine, migrations.

The entry point of the part every other one stands on: `schema` (the tables, as the
module they are read from: `from ..store import schema as s`), the engine and where
the database is (`database.py`), Alembic driven from code (`migrate.py`), and the
writer's many-row statements run through the driver and sent together (`bulk.py`).
"""

from . import schema
from .bulk import Bulk, Pipeline, Query
from .database import (
    DatabaseError,
    create_engine,
    describe,
    is_sqlite,
    redact,
    require_existing,
    resolve_url,
    warn_exposure,
)
from .migrate import check_schema, current_revision, head_revision, upgrade
from .sqlite_handle import sqlite3_of

__all__ = [
    "Bulk",
    "DatabaseError",
    "Pipeline",
    "Query",
    "check_schema",
    "create_engine",
    "current_revision",
    "describe",
    "head_revision",
    "is_sqlite",
    "redact",
    "require_existing",
    "resolve_url",
    "schema",
    "sqlite3_of",
    "upgrade",
    "warn_exposure",
]
