"""The questions the session manager asks a tmux server: sessions, panes, processes.

Each goes through a control client when one is attached (tmux answers from memory,
no process is started) and falls back to a one-shot command otherwise. A tmux
server that is not running is an empty answer, not an error: the watcher keeps
polling until one starts. Only `detach_stale` changes anything, and only for
control clients this process attached itself.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Collection, Sequence
from typing import Any

from paneboard_agent.tmux.control import CommandError, ControlClient, quote
from paneboard_agent.tmux.panes import (
    PaneInfo,
    pane_format,
    parse_panes,
    parse_sessions,
    session_format,
)
from paneboard_agent.tmux.procfs import procs_answer, procs_argv
from paneboard_agent.transport import Transport, TransportError

log = logging.getLogger("paneboard.agent")

#: what tmux says when there is no server (or no session) to ask
NO_SERVER = (b"no server running", b"error connecting to", b"no sessions")


async def list_sessions(
    t: Transport, base: Sequence[str], control: ControlClient | None
) -> list[tuple[str, str]] | None:
    """(session_id, name) of every session; None when no tmux server runs."""
    token = secrets.token_hex(16)
    fmt = session_format(token)
    if control is not None:
        try:
            block = await control.command(f"list-sessions -F {quote(fmt)}")
            return parse_sessions(block.lines, token)
        except (TransportError, CommandError):
            pass
    res = await t.run([*base, "list-sessions", "-F", fmt])
    if res.returncode != 0:
        if not any(s in res.stderr for s in NO_SERVER):
            err = res.stderr.decode(errors="replace").strip()
            raise TransportError(f"{t.host}: tmux list-sessions failed: {err}")
        return None
    return parse_sessions(res.stdout.splitlines(), token)


async def no_server(t: Transport, base: Sequence[str]) -> str | None:
    """Why no tmux server can be asked (tmux's own words), or None when one runs."""
    res = await t.run([*base, "list-sessions", "-F", "#{session_id}"])
    if res.returncode == 0 or not any(s in res.stderr for s in NO_SERVER):
        return None
    return res.stderr.decode(errors="replace").strip().splitlines()[0]


def only_filter(pane_ids: Collection[str]) -> str:
    """A `list-panes -f` filter (tmux 3.2+) true for exactly these panes: `#{pane_id}`
    is looked up in one `|%1|%7|` string (tmux expands both sides of `m:`), so the
    filter stays one short match however many panes it names. Pane ids are `%` and
    digits (checked: anything else could change the filter's meaning)."""
    for pid in pane_ids:
        if not (pid[:1] == "%" and pid[1:].isdigit()):
            raise ValueError(f"not a tmux pane id: {pid!r}")
    return "#{m:*|#{pane_id}|*,|" + "|".join(sorted(pane_ids)) + "|}"


async def list_panes(
    t: Transport,
    base: Sequence[str],
    control: ControlClient | None,
    only: Collection[str] | None = None,
) -> list[PaneInfo]:
    """Every pane of the server, or only the panes `only` names (tmux 3.2+: filtered by
    tmux, so a poll for a few panes' held reports reads a few lines, not every pane's);
    [] when no tmux server runs. Raises `panes.ListingRefused` for a listing that is not
    tmux's own (a line outside the query's frame)."""
    filt = ["-f", only_filter(only)] if only is not None else []
    token = secrets.token_hex(16)
    fmt = pane_format(token)
    if control is not None:
        try:
            where = f" -f '{filt[1]}'" if filt else ""
            block = await control.command(f"list-panes -a{where} -F {quote(fmt)}")
        except (TransportError, CommandError):
            pass
        else:
            if not block.truncated:
                return parse_panes(block.lines, token)
    res = await t.run([*base, "list-panes", "-a", *filt, "-F", fmt])
    if res.returncode != 0:
        if any(s in res.stderr for s in NO_SERVER):
            return []
        raise TransportError(f"{t.host}: tmux list-panes failed: {res.stderr.decode(errors='replace')}")
    return parse_panes(res.stdout.splitlines(), token)


async def processes(t: Transport, pids: Collection[int], ttys: Collection[str] = ()) -> dict[int, Any] | None:
    """`ps` of these pids, every process on these terminals (the panes' foreground groups)
    and the foreground leaders they name; None: no usable `ps`. One run for all panes."""
    return await with_leaders(t, await _ps_run(t, set(pids), ttys))


async def with_leaders(t: Transport, procs: dict[int, Any] | None) -> dict[int, Any] | None:
    """`procs` with every foreground leader they name: a leader seen for the first time
    (not on the terminals asked about) costs one more `ps` for its arguments."""
    if procs is None:
        return None
    missing = {p.tpgid for p in procs.values() if p.tpgid > 0 and p.tpgid not in procs}
    if missing:
        more = await _ps_run(t, missing)
        procs.update(more or {})
    return procs


async def _ps_run(t: Transport, pids: set[int], ttys: Collection[str] = ()) -> dict[int, Any] | None:
    """The processes, from /proc where the host allows it, else from `ps` (procfs.py)."""
    nonce = secrets.token_hex(16)
    res = await t.run(procs_argv(pids, ttys, nonce), timeout=10)
    return procs_answer(res.returncode, res.stdout, res.stderr, nonce, pids)


async def detach_stale(t: Transport, base: Sequence[str], ours: Collection[int]) -> None:
    """Detach the control clients with these pids (attached by us before a lost link)."""
    res = await t.run([*base, "list-clients", "-F", "#{client_pid}\t#{client_name}\t#{client_control_mode}"])
    for line in res.stdout.decode(errors="replace").splitlines():
        parts = line.split("\t")
        if len(parts) == 3 and parts[0].isdigit() and int(parts[0]) in ours and parts[2] == "1":
            log.info("%s: detaching our stale control client %s", t.host, parts[1])
            await t.run([*base, "detach-client", "-t", parts[1]])
