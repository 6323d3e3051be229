"""The collectors' uplink: `WS /api/ingest` and its message validation."""
