"""paneboard's server: ingest, persistence, staleness and the live API."""

__version__ = "0.1.0"
