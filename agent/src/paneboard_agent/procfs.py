"""The panes' processes read from Linux's /proc, at a cost that does not grow with the host.

Every look asks about the panes' processes, about ten times a second on a busy host.
`ps` answers by reading every process on the machine, whatever it is asked about, so
on a build server running a thousand other processes the collector's looks alone would
keep a large share of a core busy. On Linux the panes' own
processes can be found without that scan: starting from the pane's process (and the
foreground leaders seen last), each process's children are listed by the kernel in
`/proc/PID/task/TID/children`, so one shell walks the tree level by level (the shell's
own `read`, no process a level) and two `grep`s print each found process's `stat` and
`cmdline`. The cost is a few forks and the panes' own processes, whatever else runs on
the host.

The walk finds what `ps -p PIDS -t TTYS` found for the panes: a pane's foreground group
is its shell's descendants. A leader that is not (its parent exited and it was handed to
init) is looked up by pid, as a leader named for the first time already was
(`queries.with_leaders`). Where /proc has no `children` files (a kernel built without
them, or not Linux) or `grep` cannot split on NUL bytes, the same script runs `ps` as
before; the reply says which answered.

`grep -a -H -z` makes the output unambiguous: every NUL-terminated record, the head of a
`stat` line or one argument of a command line, comes prefixed with the file it was read
from, so no command line can forge another process's record.
"""

from __future__ import annotations

import shlex
from collections.abc import Collection

from paneboard_agent.panes import ProcInfo, ps_answer, ps_argv

#: processes walked at most: a fork bomb in a pane must not make the look unbounded
MAX_PROCESSES = 4096


def _marker(nonce: str) -> str:
    return f"pb-procfs-{nonce}"


#: The walk, in POSIX `sh`: @START@, @MARK@ and @MAX@ filled in, the `ps` fallback after it.
#: `todo` holds a level's pids (ours, then the kernel's), so nothing here is split or
#: globbed that a process could name. Of `stat` only the fields up to the terminal's
#: foreground group are printed (`grep -o`, the command name matched greedily up to the
#: last `) ` they follow): the whole line is ~300 bytes a process, ten times what `ps`
#: printed, and every byte of a look's reply crosses the link and the SSH client.
#: The check runs both `grep`s' options as the walk will, so a `grep` that lacks one
#: (BusyBox's may) gets `ps` instead.
_WALK = """\
re='^[0-9]+ \\(.*\\) . -?[0-9]+ -?[0-9]+ -?[0-9]+ -?[0-9]+ -?[0-9]+'
if cd /proc 2>/dev/null && [ -r $$/task/$$/children ] &&
  printf '1 (a) S 0 1 1 0 -1 x\\0' | LC_ALL=C grep -a -H -z -o -E "$re" >/dev/null 2>&1; then
  printf '%s\\n' @MARK@
  seen=' ' todo='@START@' stats= cmds= n=0
  while [ -n "$todo" ] && [ $n -lt @MAX@ ]; do
    next=
    for p in $todo; do
      case $seen in *" $p "*) continue;; esac
      seen="$seen$p "
      [ -e $p/stat ] || continue
      n=$((n+1))
      stats="$stats $p/stat"
      cmds="$cmds $p/cmdline"
      for c in $p/task/*/children; do
        k=
        read -r k < "$c" 2>/dev/null
        next="$next $k"
      done
      [ $n -lt @MAX@ ] || break
    done
    todo=$next
  done
  [ -n "$stats" ] || exit 0
  LC_ALL=C grep -a -H -z -o -E "$re" $stats 2>/dev/null
  LC_ALL=C exec grep -a -H -z '' $cmds 2>/dev/null
fi
"""


def procs_script(pids: Collection[int], ttys: Collection[str], nonce: str) -> str:
    """A POSIX `sh` script: the walk when /proc allows it, else `exec ps` as before."""
    start = " ".join(str(p) for p in sorted({int(p) for p in pids}))
    walk = _WALK.replace("@START@", start).replace("@MARK@", _marker(nonce))
    walk = walk.replace("@MAX@", str(MAX_PROCESSES))
    return f"{walk}exec {shlex.join(ps_argv(pids, ttys))}"


def procs_argv(pids: Collection[int], ttys: Collection[str], nonce: str) -> list[str]:
    return ["sh", "-c", procs_script(pids, ttys, nonce)]


def procs_answer(
    returncode: int | None, stdout: bytes, stderr: bytes, nonce: str, pids: Collection[int]
) -> dict[int, ProcInfo] | None:
    """What the script said about `pids`: the walk's processes, or `ps`'s answer (None:
    no usable `ps`)."""
    head = f"{_marker(nonce)}\n".encode()
    if stdout.startswith(head):
        return parse_procfs(stdout[len(head) :], pids)
    return ps_answer(returncode, stdout, stderr)


def parse_procfs(out: bytes, pids: Collection[int]) -> dict[int, ProcInfo]:
    """`grep -a -H -z` output from /proc (`N/stat:...`, `N/cmdline:...`): `pids` and the
    processes on their terminals, by pid, as `ps -p PIDS -t TTYS` selects them.

    A descendant on a terminal of its own (an agent runs its tools in a pseudo-terminal
    it opened) is not the pane's: left in, its foreground group would be looked up as a
    leader the pane's terminal never had, a second trip each look. From `stat`, the
    fields after the command name's closing parenthesis (the name may hold spaces and
    parentheses itself): ppid, process group, terminal and the terminal's foreground
    group (-1: no controlling terminal). A process with no command line left (exiting,
    or a zombie) is left out, as `parse_ps` leaves out ps's `[name]`."""
    stats: dict[int, tuple[int, int, int, int]] = {}
    args: dict[int, list[bytes]] = {}
    for rec in out.split(b"\0"):
        slash = rec.find(b"/")
        if slash < 1 or not rec[:slash].isdigit():
            continue
        pid = int(rec[:slash])
        if rec.startswith(b"/cmdline:", slash):
            args.setdefault(pid, []).append(rec[slash + 9 :])
        elif rec.startswith(b"/stat:", slash):
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
            line = b" ".join(words).decode("utf-8", "replace")
            if not line.isprintable():  # rare: translate costs a lookup a character
                line = line.translate(_UNPRINTABLE)
            found[pid] = ProcInfo(pid, tpgid, line, ppid, pgid)
    return found


#: control characters as procps's `ps -ww` shows them, as spaces: a command line holding
#: a newline stays one line
_UNPRINTABLE = {c: " " for c in (*range(0x20), 0x7F)}
