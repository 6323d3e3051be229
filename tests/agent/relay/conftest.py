"""Fixtures for the relay's tests (the helpers themselves live in relay_tmux.py)."""

from relay_tmux import tmux

__all__ = ["tmux"]
