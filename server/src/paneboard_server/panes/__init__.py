"""The authoritative pane state and the one writer task that changes it.

`Core` is the in-memory mirror and the queue every change goes through; the operations
other parts submit (`Ingest`, `HostsUp`, `HostsDown`, `Seen`) and what the writer
answers (`Refused`, `Unstorable`); `Change`, what a change listener hears; `Pane`, one
pane as the mirror holds it. Beside the writer: `retention_loop` (history pruning) and,
on PostgreSQL, `Fanout` (the other processes' changes, LISTEN/NOTIFY) and
`held_anywhere` (whether some process holds a collector).
"""

from .core import Core, HostsDown, HostsUp, Ingest, Refused, Seen, Unstorable
from .fanout import Fanout, held_anywhere
from .model import Pane
from .retention import retention_loop
from .writer import Change

__all__ = [
    "Change",
    "Core",
    "Fanout",
    "HostsDown",
    "HostsUp",
    "Ingest",
    "Pane",
    "Refused",
    "Seen",
    "Unstorable",
    "held_anywhere",
    "retention_loop",
]
