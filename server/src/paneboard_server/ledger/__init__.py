"""Time waiting on you: the ledger derived from history, its table and the stats."""
