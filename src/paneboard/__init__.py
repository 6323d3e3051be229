"""paneboard: which of your coding agents is working, done, or waiting on you."""

__version__ = "0.1.0"
