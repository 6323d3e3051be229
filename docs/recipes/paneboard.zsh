# paneboard status for zsh: source this from ~/.zshrc.
# (Every expansion next to a colon is braced: in zsh `$state:a` would be a modifier.)
#
# `working` while a command runs; at the prompt `done`/`error` for commands that ran
# at least $PANEBOARD_LONG seconds (default 10), `idle` after quick ones.
autoload -Uz add-zsh-hook
__pb_osc() { printf '\033]7501;%s\033\\' "$1" 2>/dev/null >/dev/tty }
__pb_preexec() {
    __pb_start=$SECONDS
    __pb_cmd=${${1//[$'\t\r\n']/ }[1,200]}
    __pb_osc "state=working:app=shell"
}
__pb_precmd() {
    local rc=$? pairs="state=idle:app=shell"
    if [[ -n ${__pb_start-} ]]; then
        local took=$(( SECONDS - __pb_start ))
        if (( took >= ${PANEBOARD_LONG:-10} )); then
            local state=done
            (( rc == 0 )) || state=error
            pairs="state=${state}:app=shell:msg=$(printf '%s' "${__pb_cmd}: exit ${rc} after ${took}s" | base64 | tr -d '\n')"
        fi
    fi
    unset __pb_start __pb_cmd
    __pb_osc "$pairs"
    return $rc
}
add-zsh-hook preexec __pb_preexec
add-zsh-hook precmd __pb_precmd
