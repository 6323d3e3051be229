"""The database: schema, engine, migrations, retention, cross-replica notifications."""
