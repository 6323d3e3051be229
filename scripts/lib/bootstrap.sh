# Shared set-up for scripts/test and scripts/demo (sourced, not run).
# Installs what a fresh Debian machine with Python 3.11 lacks, and nothing twice.

# fonts-dejavu-core, fonts-freefont-ttf: the screen's fonts (web/style.css); FreeMono has the
# glyphs agents draw that DejaVu lacks (⎿), so they are not missing-glyph boxes.
# prometheus: its promtool checks the alert rules docs/operations.md offers.
_apt_packages=(tmux procps openssh-server openssh-client chromium zsh iproute2 util-linux nginx fonts-dejavu-core fonts-freefont-ttf prometheus)

_as_root() {
    if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
        echo "paneboard: need root (or sudo) to run: $*" >&2; return 1; fi
}

bootstrap_system() {
    # With arguments: just those packages (the demo needs only tmux); else the test set.
    local wanted=("$@") missing=()
    [ ${#wanted[@]} -gt 0 ] || wanted=("${_apt_packages[@]}")
    for p in "${wanted[@]}"; do
        dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        echo "== apt-get install ${missing[*]}" >&2
        _as_root apt-get update -qq
        DEBIAN_FRONTEND=noninteractive _as_root apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    fi
}

bootstrap_python() {
    export PATH="$HOME/.local/bin:$PATH"
    if ! command -v uv >/dev/null 2>&1; then
        echo "== pip install uv" >&2
        if ! python3 -m pip --version >/dev/null 2>&1; then
            bootstrap_system python3-pip
        fi
        # Debian's own python3 refuses pip installs outside a venv (PEP 668); uv is a
        # self-contained binary, so installing it for this user is harmless.
        python3 -m pip install --quiet uv 2>/dev/null \
            || python3 -m pip install --quiet --user --break-system-packages uv
    fi
    echo "== uv sync" >&2
    # Bytecode made once here: where Python may not write it (PYTHONDONTWRITEBYTECODE, a
    # read-only tree) every process would compile each module it imports, at each start;
    # a server imports about 700. Our own sources too (uv compiles only what it installs).
    uv sync --frozen --all-packages --quiet --compile-bytecode
    uv run --frozen python -m compileall -q -j0 protocol/src agent/src server/src src tests >/dev/null
}

bootstrap_agents() {
    # The real agent CLIs (pinned in tests/realagents/install.py) for the tests that run them,
    # cached under ~/.cache/paneboard/agents. A CLI that cannot be installed stops the run here.
    if ! command -v npm >/dev/null 2>&1; then
        bootstrap_system nodejs npm
    fi
    echo "== real agent CLIs" >&2
    uv run --frozen python tests/realagents/install.py
}

start_postgres() {
    # The suite's PostgreSQL tests use PANEBOARD_TEST_PG, or the local cluster if one runs.
    if [ -n "${PANEBOARD_TEST_PG:-}" ]; then return 0; fi
    if command -v pg_lsclusters >/dev/null 2>&1; then
        if ! pg_lsclusters -h 2>/dev/null | awk '{print $4}' | grep -q online; then
            local v; v=$(ls /etc/postgresql 2>/dev/null | head -n1)
            if [ -n "$v" ]; then
                _as_root pg_ctlcluster --skip-systemctl-redirect "$v" main start || true
            fi
        fi
    fi
}
