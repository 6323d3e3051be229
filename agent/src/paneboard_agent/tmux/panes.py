"""Pure pieces of pane tracking: parsing tmux listings and `ps`, judging observability.

Kept apart from the asyncio collector so the decisions (which line is a pane, when a
foreground process identifies a program, when it hides one behind a transport) are
tested on plain strings.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace

from paneboard_protocol.identity import MAX_ARGS, Member, choose, is_interpreter

#: fields of one `list-panes -a -F` line, tab separated, between the query's token and
#: `END_FIELD` (see `pane_format`)
PANE_FIELDS = (
    "session_id",
    "window_id",
    "window_index",
    "pane_id",
    "pane_pid",
    "pane_dead",
    "pane_tty",
    "session_name",
    "window_name",
    "pane_current_command",
)
#: the fields whose text a person or a program chooses: tmux 3.3a escapes session and
#: window names itself, but puts the foreground process's argv[0] into
#: `#{pane_current_command}` as it is (cut at the first space only), so a program named
#: `$'sleep\nP\t...'` wrote whole lines into the listing
FREE_TEXT = frozenset({"session_name", "window_name", "pane_current_command"})
#: every control byte in a free-text field becomes `?` (tmux's `s/` modifier replaces
#: every match): none can end a line or a field. The class is written with the bytes
#: themselves (`[[:cntrl:]]` does not survive tmux's modifier parsing); NUL cannot be in
#: a C string and so needs no place in it.
CONTROL_BYTES = "[\x01-\x1f\x7f]"
#: the last field of every listing line: a line cut short, or split by a stray newline,
#: lacks it
END_FIELD = "E"


def _field(name: str) -> str:
    return f"#{{s/{CONTROL_BYTES}/?/:{name}}}" if name in FREE_TEXT else f"#{{{name}}}"


def pane_format(token: str) -> str:
    """The `list-panes -F` format of one query: each line `token`, the fields, `END_FIELD`.

    The token is fresh per query (`secrets.token_hex`): a line the query did not write
    itself cannot start with it. The format holds control bytes (the class above): a
    command sent through a control client carries it in `control.quote`'s form."""
    _check_token(token)
    return "\t".join([token, *(_field(f) for f in PANE_FIELDS), END_FIELD])


def session_format(token: str) -> str:
    """The `list-sessions -F` format of one query, framed as `pane_format`'s."""
    _check_token(token)
    return "\t".join([token, "#{session_id}", _field("session_name"), END_FIELD])


def _check_token(token: str) -> None:
    if not (token.isascii() and token.isalnum()):
        raise ValueError(f"a listing token is letters and digits: {token!r}")


class ListingRefused(ValueError):
    """A pane listing that is not what tmux writes: a line that does not fit the query's
    frame, a field of the wrong shape, or a pane listed twice unlike itself. Taken in
    part it would let a program in a pane file one pane under another's session, or
    leave one out (made `gone`), so none of it is taken."""


#: a foreground process with one of these names is a shell: nothing identifiable runs
DEFAULT_SHELLS = frozenset(
    {"bash", "zsh", "sh", "dash", "fish", "ksh", "mksh", "tcsh", "csh", "ash", "nu", "xonsh", "elvish"}
)

#: foreground programs that are a way to somewhere else: what runs there is not seen.
#: Two words mean "command subcommand" (matched against the process's arguments).
DEFAULT_TRANSPORTS = (
    "ssh",
    "mosh",
    "mosh-client",
    "telnet",
    "rlogin",
    "tmux",
    "screen",
    "zellij",
    "minicom",
    "picocom",
    "cu",
    "tio",
    "socat",
    "nc",
    "docker exec",
    "docker attach",
    "docker run",
    "podman exec",
    "podman attach",
    "podman run",
    "kubectl exec",
    "kubectl attach",
    "lxc exec",
    "incus exec",
    "virsh console",
    "et",
)


@dataclass(frozen=True, slots=True)
class PaneInfo:
    session_id: str
    window_id: str
    window_index: str
    pane_id: str
    pane_pid: int
    dead: bool
    tty: str
    session: str
    window_name: str
    command: str

    @property
    def window(self) -> str:
        """How the window is shown: tmux's own status-line form, `index:name`."""
        return f"{self.window_index}:{self.window_name}"


_ID = {
    "session_id": re.compile(r"\$[0-9]+"),
    "window_id": re.compile(r"@[0-9]+"),
    "pane_id": re.compile(r"%[0-9]+"),
    "window_index": re.compile(r"[0-9]+"),
    "pane_pid": re.compile(r"[0-9]+"),
    "pane_dead": re.compile(r"[01]"),
}
#: a terminal's path: `/dev/pts/3` (Linux), `/dev/ttys003` (macOS), `/dev/ttyp0` (BSD)
_TTY = re.compile(r"/dev/[A-Za-z0-9_]+(/[A-Za-z0-9_]+)*")
#: what a pane listed in several sessions (its window linked into each) may differ in
_PER_SESSION = frozenset({"session_id", "session_name", "window_index"})


def parse_panes(lines: Iterable[bytes], token: str) -> list[PaneInfo]:
    """Panes from `list-panes -a -F pane_format(token)`.

    Every line must be framed by `token` and `END_FIELD` with every field of its shape;
    a window linked into several sessions is listed once per session, and those lines
    must agree in all but the session and the window's index there (the first listing
    gives the pane its session). Anything else refuses the whole listing
    (`ListingRefused`). Blank lines are no panes."""
    seen: dict[str, tuple[PaneInfo, list[str]]] = {}
    for raw in lines:
        if not raw:
            continue
        parts = raw.decode("utf-8", "replace").split("\t")
        if len(parts) != len(PANE_FIELDS) + 2 or parts[0] != token or parts[-1] != END_FIELD:
            raise ListingRefused("a line outside the query's frame")
        fields = parts[1:-1]
        _check_shape(dict(zip(PANE_FIELDS, fields, strict=True)))
        sid, wid, widx, pid, ppid, dead, tty, sname, wname, cmd = fields
        first = seen.get(pid)
        if first is not None:
            if _shared(first[1]) != _shared(fields):
                raise ListingRefused(f"pane {pid} listed twice with different fields")
            continue
        info = PaneInfo(sid, wid, widx, pid, int(ppid), dead == "1", tty, sname, wname, cmd)
        seen[pid] = (info, fields)
    return [info for info, _ in seen.values()]


def _shared(fields: list[str]) -> list[str]:
    return [v for f, v in zip(PANE_FIELDS, fields, strict=True) if f not in _PER_SESSION]


def _check_shape(row: dict[str, str]) -> None:
    for name, shape in _ID.items():
        if not shape.fullmatch(row[name]):
            raise ListingRefused(f"{name} {row[name][:20]!r} is not of tmux's shape")
    if row["pane_tty"] and not _TTY.fullmatch(row["pane_tty"]):
        raise ListingRefused(f"pane_tty {row['pane_tty'][:40]!r} is not a terminal's path")
    if any(ch < " " or ch == "\x7f" for f in FREE_TEXT for ch in row[f]):
        raise ListingRefused("a control character in a name")


def parse_sessions(lines: Iterable[bytes], token: str) -> list[tuple[str, str]]:
    """(session_id, name) pairs from `list-sessions -F session_format(token)`; a line
    outside the frame is no session (tmux escapes control bytes in session names, so
    none of its own lines is one)."""
    out = []
    for raw in lines:
        parts = raw.decode("utf-8", "replace").split("\t")
        if (
            len(parts) == 4
            and parts[0] == token
            and parts[3] == END_FIELD
            and _ID["session_id"].fullmatch(parts[1])
        ):
            out.append((parts[1], parts[2]))
    return out


@dataclass(frozen=True, slots=True)
class ProcInfo:
    pid: int
    tpgid: int
    args: str
    ppid: int = 0
    pgid: int = 0


#: what `ps` is asked for, in this order (args last: it may hold spaces)
PS_FIELDS = "pid=,ppid=,pgid=,tpgid=,args="


def parse_ps(text: bytes) -> dict[int, ProcInfo]:
    """`ps -o PS_FIELDS ...` output by pid (tpgid -1: no controlling tty).

    A process whose arguments ps shows as `[name]` (or `[name] <defunct>`) had no command
    line left to read: it is exiting, or a zombie. It is left out, as if gone (which it
    is a moment later): taken for a program of its own, a `paneboard emit` caught on its
    way out became a program called `[paneboard]` that owned the report it had just
    written, and the report ended with it (a CI failure)."""
    out: dict[int, ProcInfo] = {}
    for line in text.decode("utf-8", "replace").splitlines():
        parts = line.split(None, 4)
        if len(parts) < 4 or not parts[0].isdigit():
            continue
        try:
            ppid, pgid, tpgid = int(parts[1]), int(parts[2]), int(parts[3])
        except ValueError:
            continue
        pid = int(parts[0])
        args = parts[4] if len(parts) == 5 else ""
        if not _exiting(args):
            out[pid] = ProcInfo(pid, tpgid, args, ppid, pgid)
    return out


def ps_answer(returncode: int | None, stdout: bytes, stderr: bytes) -> dict[int, ProcInfo] | None:
    """What a `ps` run says: its processes, or None when there is no usable `ps` (exit 1
    with no output but an error is an unknown option, not "no such process")."""
    if returncode not in (0, 1) or (returncode == 1 and not stdout and stderr):
        return None
    return parse_ps(stdout)


def _exiting(args: str) -> bool:
    """ps's `[comm]` form: the kernel has no command line for the process any more."""
    return args.startswith("[") and (args.endswith("]") or args.endswith("] <defunct>"))


def ps_argv(pids: Iterable[int], ttys: Iterable[str] = ()) -> list[str]:
    """One `ps` for every pane: these pids and every process on these terminals.

    The terminals bring in each pane's whole foreground group (its members have the
    pane's tty as controlling terminal), so a wrapper's child is seen in the same run;
    `-p` and `-t` select the union (POSIX). `-ww`: procps cuts `args` to `$COLUMNS` when
    that is set (80 in many CI and cron environments), and a cut command line hides
    `paneboard emit` or an interpreter's script behind a long path; BSD ps reads it alike.
    """
    argv = ["ps", "-ww", "-o", PS_FIELDS, "-p", ",".join(str(p) for p in sorted(set(pids)))]
    names = sorted({t.removeprefix("/dev/") for t in ttys if t and t.startswith("/dev/") and "," not in t})
    if names:
        argv += ["-t", ",".join(names)]
    return argv


@dataclass(frozen=True, slots=True)
class Observation:
    """What the classifier is told: `name` None means the shell (or nothing) is in front.

    `why`: set when the name comes from a process other than the group's leader (a
    wrapper stays in front), in words for `--explain` and the evidence. `chain`: the
    pids of `pid`'s ancestors, nearest first, as far as the look saw them: a report
    its writer filed stays live while the writer is one of them (RI-2)."""

    name: str | None
    pid: int | None
    observable: bool
    why: str | None = None
    # not compared: the process in front is (name, pid); its ancestors go with it
    chain: tuple[int, ...] = field(default=(), compare=False)
    # the shell's program (`bash`) when `name` is None for a shell: who wrote a report
    shell: str | None = field(default=None, compare=False)


def _matches_transport(name: str, args: str | None, transports: Sequence[str]) -> bool:
    words = [os.path.basename(w) for w in (args or "").split()[:4]]
    for entry in transports:
        parts = entry.split()
        if not parts or parts[0] != name:
            continue
        if len(parts) == 1:
            return True
        # "docker exec": the subcommand must be among the first arguments; unknown
        # arguments (not polled yet) count as a match, since hiding is the safe side
        if args is None or parts[1] in words[1:]:
            return True
    return False


def is_reporter(args: str | None) -> bool:
    """Is this command line `paneboard emit` (however started: entry point, `-m`, `uv run`)?"""
    words = (args or "").split()[:8]
    for i, word in enumerate(words[:-1]):
        if os.path.basename(word) == "paneboard" and words[i + 1] == "emit":
            return True
        if (
            word == "-m"
            and words[i + 1] in ("paneboard", "paneboard.cli")
            and words[i + 2 : i + 3] == ["emit"]
        ):
            return True
    return False


def group_members(procs: dict[int, ProcInfo], pgid: int) -> list[Member]:
    """The processes of one process group (the pane's foreground group)."""
    return [Member(p.pid, p.ppid, p.args) for p in procs.values() if p.pgid == pgid]


def _is_shell(proc: ProcInfo | None, shells: frozenset[str]) -> bool:
    words = proc.args.split(maxsplit=1) if proc is not None else []
    return bool(words) and os.path.basename(words[0]).lstrip("-") in shells


def _shell_parent(procs: dict[int, ProcInfo] | None, pid: int | None, shells: frozenset[str]) -> int | None:
    """The pid of the shell that started process `pid`, if its parent is a shell."""
    me = procs.get(pid) if procs is not None and pid is not None else None
    parent = procs.get(me.ppid) if procs is not None and me is not None else None
    return parent.pid if parent is not None and _is_shell(parent, shells) else None


#: ancestors followed at most (a pid loop in a forged or torn reply ends here too)
MAX_CHAIN = 64


def ancestry(procs: dict[int, ProcInfo] | None, pid: int | None) -> tuple[int, ...]:
    """The pids above `pid`, nearest first, through the processes the look saw (the
    walk from the pane's process, or `ps` of its terminal): up to the first parent it
    did not see."""
    out: list[int] = []
    me = procs.get(pid) if procs is not None and pid is not None else None
    while me is not None and me.ppid > 0 and me.ppid not in out and me.ppid != pid and len(out) < MAX_CHAIN:
        out.append(me.ppid)
        me = procs.get(me.ppid) if procs is not None else None
    return tuple(out)


def observe(
    pane: PaneInfo,
    procs: dict[int, ProcInfo] | None,
    transports: Sequence[str] = DEFAULT_TRANSPORTS,
    shells: frozenset[str] = DEFAULT_SHELLS,
    previous: Observation | None = None,
    agent_of: Callable[[str], str | None] | None = None,
) -> Observation:
    """The pane's foreground process as the classifier is to see it (RI-1).

    `agent_of` (a process name -> the agent a manifest names, or None): when the
    group's leader names no agent, the other members of the foreground group are
    looked at (`identity.choose`): an agent behind a wrapper that stays in front.
    """
    obs = _with_chain(_observe_leader(pane, procs, transports, shells, previous), procs)
    if agent_of is None or procs is None or not obs.observable or obs.pid is None:
        return obs
    if obs.name is not None and agent_of(obs.name) is not None:
        return obs  # the leader names the agent itself (RI-1 as written)
    leader = procs.get(obs.pid)
    if leader is None or leader.pgid != obs.pid:
        return obs
    choice = choose(obs.pid, leader.args, group_members(procs, obs.pid), agent_of)
    if choice is None:
        return obs
    return Observation(choice.name, choice.pid, True, choice.why, ancestry(procs, choice.pid))


def _with_chain(obs: Observation, procs: dict[int, ProcInfo] | None) -> Observation:
    """`obs` with its process's ancestors, when this look saw them (a `previous` kept
    from an earlier look keeps the chain it had), and a shell in front by name."""
    if procs is None or obs.pid is None or obs.pid not in procs:
        return obs
    shell = _program_name(procs[obs.pid].args) if obs.name is None and obs.observable else None
    return replace(obs, chain=ancestry(procs, obs.pid), shell=shell)


def _program_name(command: str | None) -> str | None:
    """A command's program as tmux names it: the first word's basename, no login `-`."""
    words = (command or "").split(maxsplit=1)
    return (os.path.basename(words[0]).lstrip("-") or None) if words else None


def _observe_leader(
    pane: PaneInfo,
    procs: dict[int, ProcInfo] | None,
    transports: Sequence[str],
    shells: frozenset[str],
    previous: Observation | None,
) -> Observation:
    """Judge a pane's foreground process from tmux's name and the tty's process group.

    `procs` None means `ps` could not be run at all: then only tmux's name is known.
    `previous` is the last observation: a foreground `paneboard emit` (typed at the
    prompt, it leads its own process group for a moment) reports for whoever ran it,
    so what was in front before it stays in front. Its report is filed under that
    process and survives emit's exit (RI-2: a report written by the foreground
    process or its parent chain applies); taken for a program of its own, its
    `blocked` would end the moment emit returned (P7501-8).
    """
    if pane.dead:
        return Observation(None, None, True)
    fg_pid: int | None = None
    fg_args: str | None = None
    if procs is not None:
        shell_proc = procs.get(pane.pane_pid)
        if shell_proc is None:  # the pane's process is gone: it exited
            return Observation(None, None, True)
        if shell_proc.tpgid > 0:
            fg_pid = shell_proc.tpgid
            fg = procs.get(fg_pid)
            fg_args = fg.args if fg else None
    # the name tmux would give (the leader's first word), read from the process look:
    # tmux's own is only for when there is none (no `ps`, or the leader already gone)
    name = _program_name(fg_args) or _program_name(pane.command)
    if name is None:
        return Observation(None, fg_pid, False)
    if _matches_transport(name, fg_args, transports):
        return Observation(name, fg_pid, False)
    if name in shells:
        return Observation(None, fg_pid, True)
    if procs is not None and fg_pid is None:
        return Observation(name, None, False)  # tmux names something, but no tty group: unknown
    if is_reporter(fg_args):
        # typed at a prompt, emit leads its own group and reports for the shell that ran
        # it, the one it returns to: named by that shell's pid, not by whatever the last
        # look saw (a look between the shell's fork and emit's exec saw the fork, a shell
        # of another pid, and the report filed under it ended when the shell came back)
        runner = _shell_parent(procs, fg_pid, shells)
        if runner is not None:
            return Observation(None, runner, True)
        return previous if previous is not None else Observation(None, pane.pane_pid, True)
    # tmux named the pane before `ps` ran: a short-lived leader (emit itself) may have
    # exited in between. `ps` is the later word: a shell leader is a shell in front,
    # and a leader gone before its arguments were read tells nothing new.
    leader = (fg_args or "").split(maxsplit=1)
    if leader and os.path.basename(leader[0]).lstrip("-") in shells:
        return Observation(None, fg_pid, True)
    if procs is not None and fg_pid is not None and fg_pid not in procs and previous is not None:
        if previous.name is None and previous.pid == fg_pid and _is_shell(procs.get(pane.pane_pid), shells):
            # what the last look saw in front was the shell's fork (before its exec), and
            # it is gone now: whatever it became (emit, a command) has ended and the pane's
            # shell is back. Kept, the fork's pid would hold a report emit filed for the
            # shell, and end it the moment the shell was seen (a CI failure).
            return Observation(None, pane.pane_pid, True)
        return previous
    if fg_args and is_interpreter(name):
        # `node /x/claude/cli.js`: the classifier unwraps interpreters to their script (RI-1)
        return Observation(fg_args[:MAX_ARGS], fg_pid, True)
    return Observation(name, fg_pid, True)


def session_selected(name: str, include: Sequence[str], exclude: Sequence[str]) -> bool:
    """Glob patterns; no include list means every session."""
    if include and not any(fnmatch.fnmatchcase(name, p) for p in include):
        return False
    return not any(fnmatch.fnmatchcase(name, p) for p in exclude)
