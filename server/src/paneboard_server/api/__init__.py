"""Every HTTP and WebSocket route, by part, and the access rules they share (`access.py`)."""
