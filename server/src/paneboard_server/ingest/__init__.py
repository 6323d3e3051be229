"""The collectors' uplink: one collector's socket behind `WS /api/ingest`, and its message validation."""
