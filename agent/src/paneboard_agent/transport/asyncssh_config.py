"""asyncssh's own OpenSSH client config parser, told about the options it would drop: the
one place paneboard reaches into asyncssh below its documented API.

asyncssh documents only `config=` on connect; the parser it runs for that
(`asyncssh.config.SSHClientConfig`) evaluates Host, Match and Include as the connection
will, and silently skips every option missing from its table of handlers. Whether an
option it skips applies to a host can only be learned from that same evaluation, so the
table is extended here (a subclass's `_handlers`, as asyncssh's client and server
configs each declare theirs) with a handler that notes the option. `load`'s positional arguments,
the table's shape and the handlers' calling convention are what this relies on;
tests/agent/test_asyncssh_config_adapter.py fails when asyncssh changes any of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from asyncssh.config import ConfigParseError, SSHClientConfig


def _note(config: SSHClientConfig, option: str, args: list[str]) -> None:
    """A handler as asyncssh calls them: the option's canonical name and its arguments,
    which a handler consumes (left over, asyncssh reports "Extra data at end")."""
    args.clear()
    assert isinstance(config, _Probe)  # the only class whose table holds this handler
    if option not in config.skipped:
        config.skipped.append(option)


class _Probe(SSHClientConfig):
    """asyncssh's client config parser, keeping the names `_note` is handed; `parse`
    makes a subclass of it whose table sends the options it notes to `_note`."""

    skipped: list[str]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.skipped = []
        super().__init__(*args, **kwargs)


def parse(
    paths: Sequence[str],
    noted: Sequence[str],
    local_user: str,
    host: str,
    user: str | None = None,
    port: int | None = None,
) -> tuple[SSHClientConfig, list[str]]:
    """The config `host` gets from these files, as asyncssh will read it when connecting
    (`user` and `port`, given, win over the files' as on ssh's command line), and which
    of the options `noted` that asyncssh does not know apply to it, in file order.

    Raises ConfigParseError or OSError for a file asyncssh cannot read."""
    known = SSHClientConfig._handlers
    # an option asyncssh has come to handle is left to it: it will honour it on connect
    notes = {n.lower(): (n, _note) for n in noted if n.lower() not in known}

    class Probe(_Probe):
        _handlers = {**known, **notes}  # noqa: RUF012  # asyncssh declares its table this way

    config = Probe.load(
        None,
        [Path(p).expanduser() for p in paths],
        False,  # reload
        False,  # canonical
        False,  # final
        local_user,
        user if user else (),  # (): not given, as asyncssh's own callers pass it
        host,
        port if port else (),
    )
    assert isinstance(config, _Probe)
    return config, config.skipped


__all__ = ["ConfigParseError", "parse"]
