"""paneboard's server: ingest, persistence, staleness and the live API."""
