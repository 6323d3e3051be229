"""A poll's look in one command: tmux's pane listing, then `ps`, in one round trip.

Every report is held until a poll has looked at its pane's processes. Over SSH that
look was two round trips one after the other: `list-panes` through the control client,
then `ps` through the shell channel (transport/shell.py). Here one `sh -c` on the host
runs both, in that order: the listing, a marker line carrying a fresh nonce and tmux's
exit status, then `ps`. The order is the point: `ps` is the later word
(`panes._observe_leader`), so a pane tmux names `bash` is never judged by a `ps` older
than the listing that still saw a `paneboard emit` typed at the prompt. Running the two
concurrently would lose that; running them in one shell keeps it and costs one trip.

`ps` is asked about the panes the collector already knows (a pane's pid and tty are
fixed for its life) and the foreground leaders it saw last: the caller checks that the
listing names no pane outside that selection (a new or respawned pane) and runs one
more `ps` when it does. The nonce keeps a pane's window or session name from forging the
marker, and frames every listing line (`panes.pane_format`); output is bounded by the
transport's limit, and a reply cut before the marker is no answer (the caller falls
back to two commands).
"""

from __future__ import annotations

import secrets
import shlex
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from paneboard_agent.tmux.panes import PaneInfo, ProcInfo, pane_format, parse_panes
from paneboard_agent.tmux.procfs import procs_answer, procs_script
from paneboard_agent.tmux.queries import NO_SERVER, only_filter
from paneboard_agent.transport import Transport, TransportError

#: stdout kept of one look: a listing line is ~100 bytes, and the processes' part is
#: capped on the host (procfs.REPLY_MAX); more is cut (before the marker the look is no
#: answer, after it the processes' answer says it is not whole)
LIMIT = 1 << 20


@dataclass(frozen=True, slots=True)
class Look:
    """tmux's listing and the `ps` taken after it, and what that `ps` was asked about."""

    infos: list[PaneInfo]
    procs: dict[int, ProcInfo] | None  # None: no usable `ps` on the host
    pids: frozenset[int]
    ttys: frozenset[str]

    def covers(self, infos: Collection[PaneInfo]) -> bool:
        """`ps` was asked about every one of these panes (its pid and, alive, its tty):
        false for a pane that is new or was respawned since the selection was made."""
        return all(i.pane_pid in self.pids and (i.dead or i.tty in self.ttys) for i in infos)


def look_argv(
    base: Sequence[str],
    only: Collection[str] | None,
    pids: Collection[int],
    ttys: Collection[str],
    nonce: str,
) -> list[str]:
    """`sh -c 'LISTING 2>&1; printf MARKER $?; exec PS'`: tmux's complaints (no server)
    land before the marker, so what is left on stderr is `ps`'s alone, and the command's
    exit status is `ps`'s, as when it ran by itself."""
    filt = ["-f", only_filter(only)] if only is not None else []
    listing = shlex.join([*base, "list-panes", "-a", *filt, "-F", pane_format(nonce)])
    script = f"{listing} 2>&1; printf '\\n%s %d\\n' {_mark(nonce)} $?\n{procs_script(pids, ttys, nonce)}"
    return ["sh", "-c", script]


def _mark(nonce: str) -> str:
    return f"pb-look-{nonce}"


def split_reply(out: bytes, nonce: str) -> tuple[bytes, int | None, bytes] | None:
    """(listing, tmux's exit status, `ps` output), or None: the marker never came."""
    marker = f"\n{_mark(nonce)} ".encode()
    i = out.find(marker)
    end = out.find(b"\n", i + len(marker)) if i >= 0 else -1
    if end < 0:
        return None
    code = out[i + len(marker) : end]
    return out[:i], int(code) if code.isdigit() else None, out[end + 1 :]


async def look(
    t: Transport,
    base: Sequence[str],
    only: Collection[str] | None,
    pids: Collection[int],
    ttys: Collection[str],
) -> Look | None:
    """Every pane (or those `only` names), then `ps` of `pids` and `ttys`, in one run.
    None: the reply was cut before `ps` (the caller asks again in two commands)."""
    nonce = secrets.token_hex(16)
    res = await t.run(look_argv(base, only, pids, ttys, nonce), timeout=10, limit=LIMIT)
    parts = split_reply(res.stdout, nonce)
    if parts is None:
        return None
    listing, tmux_rc, ps_out = parts
    if tmux_rc != 0:
        if any(s in listing for s in NO_SERVER):
            return Look([], {}, frozenset(pids), frozenset(ttys))
        err = listing.decode(errors="replace").strip()
        raise TransportError(f"{t.host}: tmux list-panes failed: {err}")
    infos = parse_panes(listing.splitlines(), nonce)
    procs = procs_answer(res.returncode, ps_out, res.stderr, nonce, pids)
    return Look(infos, procs, frozenset(pids), frozenset(ttys))
