"""The live stream: fan-out of committed changes and a new client's first frames."""
