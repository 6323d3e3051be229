"""The database: schema, engine, migrations."""
