"""The panes' processes read from Linux's /proc, at a cost that does not grow with the host.

Every look asks about the panes' processes, about ten times a second on a busy host.
`ps` answers by reading every process on the machine, whatever it is asked about, so
on a build server running a thousand other processes the collector's looks alone would
keep a large share of a core busy. On Linux the panes' own
processes can be found without that scan: starting from the pane's process (and the
foreground leaders seen last), each process's children are listed by the kernel in
`/proc/PID/task/TID/children`, so one shell walks the tree level by level (the shell's
own `read`, no process a level) and one `grep` prints each found process's `stat` and
`cmdline`. The cost is a few forks and the panes' own processes, whatever else runs on
the host.

The walk finds what `ps -p PIDS -t TTYS` found for the panes: a pane's foreground group
is its shell's descendants. A leader that is not (its parent exited and it was handed to
init) is looked up by pid, as a leader named for the first time already was
(`queries.with_leaders`). Where /proc has no `children` files (a kernel built without
them, or not Linux) or `grep` cannot match with `-P`, the same script runs `ps` as
before; the reply says which answered.

A pane's program decides how big its processes' command lines are and how many
processes it starts, and every byte of the reply crosses the link: so the reply is
bounded on the host. Each command line is cut there to `ARGS_MAX` bytes (its first line:
`grep` cannot carry a match across a newline; `ps` lines are cut alike), each start pid's
walk stops at `PANE_MAX` processes (one pane's fork bomb does not use up the others'
share), and the whole reply is cut at `REPLY_MAX` by `head`. What the walk left out is
said (the start pids whose walk stopped, and an end line only a whole reply has), so
the caller can tell "not read" from "gone": `Procs.sure`.

`grep -a -H -m1` makes the output unambiguous: every record, the head of a `stat` line
or the first line of a command line, is one line prefixed with the file it was read
from, so no command line can forge another process's record.
"""

from __future__ import annotations

import shlex
from collections.abc import Collection

from paneboard_agent.tmux.panes import ProcInfo, ps_answer, ps_argv

#: processes walked at most from one start pid (a pane's process, or a foreground leader
#: outside it): a fork bomb in one pane must not make the look unbounded, nor hide the
#: processes of the panes walked after it
PANE_MAX = 64

#: bytes of one process's command line sent: what names a program is at its start, and a
#: pane's program must not make every look carry its megabytes of arguments
ARGS_MAX = 4096

#: bytes of the processes' records in one reply: below the transports' 1 MiB, with room
#: for the listing a look sends before them (look.py)
REPLY_MAX = 768 * 1024


def _marker(nonce: str) -> str:
    return f"pb-procfs-{nonce}"


class Procs(dict[int, ProcInfo]):
    """Processes by pid, and what the reply they came from did not cover.

    `cut`: start pids whose walk stopped at `PANE_MAX` (processes below them may be
    missing). `whole`: False when the reply was cut before its end (at `REPLY_MAX` on
    the host, or by the transport), so any process may be missing from it."""

    def __init__(self, procs: dict[int, ProcInfo], cut: Collection[int] = (), whole: bool = True) -> None:
        super().__init__(procs)
        self.cut = frozenset(cut)
        self.whole = whole

    def sure(self, starts: Collection[int]) -> bool:
        """Whether a process walked from `starts` that is missing here is really gone."""
        return self.whole and not any(p in self.cut for p in starts)

    def tells(self, pane_pid: int, leader: int | None) -> bool:
        """Whether this may judge the pane whose process is `pane_pid` (`leader`: its
        foreground leader seen last): its walk was whole, or the two processes a
        judgement reads first are both here (the pane's process, and the foreground
        group its terminal names). Otherwise a process missing may just not have been
        read, and a pane's program taken for exited ends the records it owns."""
        if self.sure((pane_pid,) if leader is None else (pane_pid, leader)):
            return True
        shell = self.get(pane_pid)
        return shell is not None and (shell.tpgid <= 0 or shell.tpgid in self)


#: The walk, in POSIX `sh`: @START@, @MARK@, @MAX@, @ARGS@ and @REPLY@ filled in, the
#: `ps` fallback after it. `todo` holds a level's pids (ours, then the kernel's), so
#: nothing here is split or globbed that a process could name. One `grep` reads every
#: found process's `stat` and `cmdline`: of `stat` only the fields up to the terminal's
#: foreground group (`-o`, the command name matched greedily up to the last `) ` they
#: follow; the whole line is ~300 bytes a process, and every byte of a look's reply
#: crosses the link and the SSH client), of `cmdline` its first line cut at @ARGS@ bytes
#: (`-P`: a bounded repeat in `-E` costs seconds to compile). A command line shaped like
#: a `stat` line is only cut shorter: its record still names its file. `head` caps what
#: `grep` prints; the end line comes after it either way, so a cut is told by the length
#: (see `parse_walk`). The check runs `grep` as the walk will, so one that lacks an
#: option (BusyBox's may) gets `ps` instead.
_WALK = """\
re='^(?:[0-9]+ \\(.*\\) . -?[0-9]+ -?[0-9]+ -?[0-9]+ -?[0-9]+ -?[0-9]+|[^\\n]{1,@ARGS@})'
if cd /proc 2>/dev/null && [ -r $$/task/$$/children ] &&
  printf '1 (a) S 0 1 1 0 -1 x\\n' | LC_ALL=C grep -a -H -m1 -o -P "$re" >/dev/null 2>&1; then
  printf '%s\\n' @MARK@
  seen=' ' files= cut=
  for r in @START@; do
    todo=$r n=0
    while [ -n "$todo" ]; do
      next=
      for p in $todo; do
        case $seen in *" $p "*) continue;; esac
        if [ $n -ge @MAX@ ]; then cut="$cut $r" next=; break; fi
        seen="$seen$p "
        [ -e $p/stat ] || continue
        n=$((n+1))
        files="$files $p/stat $p/cmdline"
        for c in $p/task/*/children; do
          k=
          read -r k < "$c" 2>/dev/null
          next="$next $k"
        done
      done
      todo=$next
    done
  done
  printf '%s cut%s\\n' @MARK@ "$cut"
  [ -z "$files" ] || LC_ALL=C grep -a -H -m1 -o -P "$re" $files 2>/dev/null | head -c @REPLY@
  printf '%s end\\n' @MARK@
  exit 0
fi
"""

#: The fallback: `ps`, each line cut at @ARGS@ bytes and the whole at @REPLY@, then a line
#: with `ps`'s exit status (the pipe's would be `cut`'s). The status comes back through
#: fd 4 of a command substitution, which also waits for `cut`: the line is the last.
_PS = """\
{ rc=$( { { @PS@; echo $? >&4; } | cut -b 1-@ARGS@ >&3; } 4>&1 )
printf '%s ps %s\\n' @MARK@ "$rc"; } 3>&1 | head -c @REPLY@
"""


def procs_script(pids: Collection[int], ttys: Collection[str], nonce: str) -> str:
    """A POSIX `sh` script: the walk when /proc allows it, else `ps` as before."""
    start = " ".join(str(p) for p in sorted({int(p) for p in pids}))
    fill = {
        "@START@": start,
        "@MARK@": _marker(nonce),
        "@MAX@": str(PANE_MAX),
        "@ARGS@": str(ARGS_MAX),
        "@REPLY@": str(REPLY_MAX),
        "@PS@": shlex.join(ps_argv(pids, ttys)),
    }
    script = _WALK + _PS
    for key, value in fill.items():
        script = script.replace(key, value)
    return script


def procs_argv(pids: Collection[int], ttys: Collection[str], nonce: str) -> list[str]:
    return ["sh", "-c", procs_script(pids, ttys, nonce)]


def procs_answer(
    returncode: int | None, stdout: bytes, stderr: bytes, nonce: str, pids: Collection[int]
) -> Procs | None:
    """What the script said about `pids`: the walk's processes, or `ps`'s answer (None:
    no usable `ps`)."""
    mark = _marker(nonce).encode()
    if stdout.startswith(mark + b"\n"):
        return parse_walk(stdout[len(mark) + 1 :], mark, pids)
    body, sep, last = stdout.rpartition(b"\n" + mark + b" ps ")
    if not sep and stdout.startswith(mark + b" ps "):  # `ps` printed nothing
        body, sep, last = b"", b"\n", stdout[len(mark) + 4 :]
    if sep and last.endswith(b"\n") and last[:-1].isdigit():
        got = ps_answer(int(last[:-1]), body + b"\n" if body else b"", stderr)
        return Procs(got) if got is not None else None
    # cut before its end (or the script's own tools missing): the whole lines only
    got = ps_answer(returncode, _whole_lines(stdout), stderr)
    return Procs(got, whole=False) if got is not None else None


def _whole_lines(out: bytes) -> bytes:
    return out[: out.rfind(b"\n") + 1]


def parse_walk(out: bytes, mark: bytes, pids: Collection[int]) -> Procs:
    """The walk's reply after its first line: the cut start pids, `grep`'s records, the
    end line. Not whole: no end line (the transport cut the reply), or `grep`'s part is
    `head`'s whole allowance or ends inside a record (it was cut there)."""
    cut_line = mark + b" cut"
    end = out.find(b"\n")
    if not out.startswith(cut_line) or end < 0:
        return Procs({}, whole=False)
    cut = [int(w) for w in out[len(cut_line) : end].split() if w.isdigit()]
    body = out[end + 1 :]
    end_line = mark + b" end\n"
    whole = body.endswith(end_line)
    if whole:
        body = body[: -len(end_line)]
        whole = len(body) < REPLY_MAX and body[-1:] in (b"", b"\n")
    return Procs(parse_procfs(body[: body.rfind(b"\n") + 1], pids), cut, whole)


def parse_procfs(out: bytes, pids: Collection[int]) -> dict[int, ProcInfo]:
    """`grep -a -H` lines from /proc (`N/stat:...`, `N/cmdline:...`): `pids` and the
    processes on their terminals, by pid, as `ps -p PIDS -t TTYS` selects them.

    A descendant on a terminal of its own (an agent runs its tools in a pseudo-terminal
    it opened) is not the pane's: left in, its foreground group would be looked up as a
    leader the pane's terminal never had, a second trip each look. From `stat`, the
    fields after the command name's closing parenthesis (the name may hold spaces and
    parentheses itself): ppid, process group, terminal and the terminal's foreground
    group (-1: no controlling terminal). A process with no command line left (exiting,
    or a zombie) is left out, as `parse_ps` leaves out ps's `[name]`; so is one whose
    name holds a line break (its `stat` is not one line)."""
    stats: dict[int, tuple[int, int, int, int]] = {}
    args: dict[int, bytes] = {}
    for rec in out.split(b"\n"):
        slash = rec.find(b"/")
        if slash < 1 or not rec[:slash].isdigit():
            continue
        pid = int(rec[:slash])
        if rec.startswith(b"/cmdline:", slash):
            args.setdefault(pid, rec[slash + 9 :])
        elif rec.startswith(b"/stat:", slash) and pid not in stats:
            close = rec.rfind(b") ")
            fields = rec[close + 2 :].split() if close > slash else []
            if len(fields) >= 6:
                try:
                    stats[pid] = (int(fields[1]), int(fields[2]), int(fields[4]), int(fields[5]))
                except ValueError:
                    continue
    asked = set(pids)
    terminals = {stats[p][2] for p in asked if p in stats} - {0}
    found: dict[int, ProcInfo] = {}
    for pid, (ppid, pgid, tty, tpgid) in stats.items():
        words = args.get(pid)
        if words and (pid in asked or tty in terminals):
            line = words.rstrip(b"\0").replace(b"\0", b" ").decode("utf-8", "replace")
            if not line.isprintable():  # rare: translate costs a lookup a character
                line = line.translate(_UNPRINTABLE)
            found[pid] = ProcInfo(pid, tpgid, line, ppid, pgid)
    return found


#: control characters as procps's `ps -ww` shows them, as spaces: a command line holding
#: a newline stays one line
_UNPRINTABLE = {c: " " for c in (*range(0x20), 0x7F)}
