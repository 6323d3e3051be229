"""The authoritative pane state and the one writer task that changes it."""
