# paneboard status for bash (>= 4.4): source this from ~/.bashrc.
#
# While a command runs the pane reports `working`; back at the prompt it reports
# `done` (or `error` when the command failed) for commands that ran at least
# $PANEBOARD_LONG seconds (default 10) -- "your build finished, come and look" --
# and `idle` after quick ones. Pure bash: no process is started per prompt except
# `base64` after a long command.
__pb_osc() { printf '\033]7501;%s\033\\' "$1" 2>/dev/null >/dev/tty; }
__pb_precmd() {
    local rc=$? pairs="state=idle:app=shell" took cmd
    if [[ -n ${__pb_start-} ]]; then
        took=$((SECONDS - __pb_start))
        if ((took >= ${PANEBOARD_LONG:-10})); then
            cmd=$(HISTTIMEFORMAT='' history 1)
            cmd=${cmd//[$'\t\r\n']/ }
            cmd=${cmd#"${cmd%%[! ]*}"}       # "  42  make test" -> "42  make test"
            cmd=${cmd#*[0-9]  }               #                   -> "make test"
            local msg="${cmd:0:200}: exit $rc after ${took}s"
            pairs="state=$( ((rc == 0)) && echo done || echo error):app=shell"
            pairs+=":msg=$(printf '%s' "$msg" | base64 | tr -d '\n')"
        fi
    fi
    unset __pb_start
    __pb_osc "$pairs"
    return $rc
}
# PS0 is printed after a command line is read, before it runs; the array subscript
# records the start time in this shell (prompt expansion is not a subshell).
PS0='${__pb_ps0[__pb_start=SECONDS]}\e]7501;state=working:app=shell\e\\'"${PS0-}"
PROMPT_COMMAND="__pb_precmd${PROMPT_COMMAND:+;$PROMPT_COMMAND}"
