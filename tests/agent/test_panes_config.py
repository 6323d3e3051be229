"""Pure pieces: listings, `ps`, observability, session globs, config, SSH specs."""

from __future__ import annotations

import pytest
from paneboard_agent.config import ConfigError, load_config, parse_config, parse_ssh_spec
from paneboard_agent.tmux.panes import (
    END_FIELD,
    PANE_FIELDS,
    ListingRefused,
    Observation,
    PaneInfo,
    ProcInfo,
    ancestry,
    observe,
    pane_format,
    parse_panes,
    parse_ps,
    parse_sessions,
    ps_argv,
    session_format,
    session_selected,
)


def _info(cmd: str = "bash", pid: int = 100, dead: bool = False) -> PaneInfo:
    return PaneInfo("$0", "@0", "0", "%1", pid, dead, "/dev/pts/1", "main", "win", cmd)


TOKEN = "0a1b2c3d4e5f"


def _line(*fields: str, token: str = TOKEN, end: str = END_FIELD) -> bytes:
    return "\t".join([token, *fields, end]).encode()


def test_parse_panes_takes_framed_lines_and_linked_duplicates_once() -> None:
    lines = [
        _line("$0", "@1", "0", "%1", "100", "0", "/dev/pts/1", "main", "vim", "vim"),
        _line("$1", "@1", "3", "%1", "100", "0", "/dev/pts/1", "other", "vim", "vim"),  # linked elsewhere
        b"",
        _line("$0", "@3", "2", "%3", "300", "1", "/dev/ttys003", "main", "näme", "python3"),
    ]
    panes = parse_panes(lines, TOKEN)
    assert [(p.pane_id, p.session, p.dead) for p in panes] == [("%1", "main", False), ("%3", "main", True)]
    assert panes[1].window == "2:näme"


GOOD = ("$0", "@1", "0", "%1", "100", "0", "/dev/pts/1", "main", "vim", "vim")


@pytest.mark.parametrize(
    "bad",
    [
        _line(*GOOD, token="ffffffff"),  # another query's token (or a guess)
        _line(*GOOD, end="X"),  # cut, or run on into the next line
        b"P\tX",  # what a program named `$'sleep\nP\tX'` added to a listing
        b"%sessions-changed",
        _line(*GOOD[:9]),  # a field short
        _line(*GOOD, "extra"),
        _line("$0", "@1", "0", "1", *GOOD[4:]),  # not a pane id
        _line("$0", "@1", "0", "%1", "1e3", *GOOD[5:]),
        _line("$0", "@1", "0", "%1", "100", "2", *GOOD[6:]),
        _line("$0", "@1", "0", "%1", "100", "0", "/dev/../etc/passwd", *GOOD[7:]),
        _line("$0", "@1", "0", "%1", "100", "0", "pts/1", *GOOD[7:]),
        _line("x", *GOOD[1:]),
        _line("$0", "@1", "²", *GOOD[3:]),
        _line(*GOOD[:9], "sle\x1bep"),  # a control byte tmux was asked to replace
    ],
)
def test_a_listing_with_a_line_that_does_not_fit_is_refused_whole(bad: bytes) -> None:
    with pytest.raises(ListingRefused):
        parse_panes([_line(*GOOD), bad], TOKEN)


@pytest.mark.parametrize("field", range(10))
def test_a_pane_listed_twice_must_agree_but_for_its_session(field: int) -> None:
    """A window linked into two sessions lists its panes once per session: they may differ
    in the session and the window's index there, in nothing else (or one is forged)."""
    other = list(GOOD)
    other[field] = {0: "$7", 1: "@9", 2: "5", 3: "%1", 4: "101", 5: "1", 6: "/dev/pts/2"}.get(field, "forged")
    lines = [_line(*GOOD), _line(*other)]
    if PANE_FIELDS[field] in ("session_id", "window_index", "session_name", "pane_id"):
        assert [p.session for p in parse_panes(lines, TOKEN)] == ["main"]
    else:
        with pytest.raises(ListingRefused):
            parse_panes(lines, TOKEN)


def test_the_formats_frame_every_line_and_replace_control_bytes_in_names() -> None:
    fmt = pane_format(TOKEN)
    assert fmt.startswith(TOKEN + "\t") and fmt.endswith("\t" + END_FIELD)
    for name in ("pane_current_command", "window_name", "session_name"):
        assert f"#{{s/[\x01-\x1f\x7f]/?/:{name}}}" in fmt
    assert "#{pane_current_command}" not in fmt
    assert session_format(TOKEN) == f"{TOKEN}\t#{{session_id}}\t#{{s/[\x01-\x1f\x7f]/?/:session_name}}\tE"
    with pytest.raises(ValueError):
        pane_format("a\tb")


def test_parse_sessions_and_ps() -> None:
    lines = [_line("$0", "main"), _line("$3", "with", "tab"), _line("$4", "x", token="ffff"), b"junk"]
    assert parse_sessions(lines, TOKEN) == [("$0", "main")]
    procs = parse_ps(
        b"  100    90   100   200 -bash\n  200   100   200   200 node /usr/lib/claude/cli.js --x\n"
        b" junk\n 300 1 300 -1\n 400 1 x 2 bad pgid\n"
    )
    assert procs[100] == ProcInfo(100, 200, "-bash", ppid=90, pgid=100)
    assert procs[200].args == "node /usr/lib/claude/cli.js --x"
    assert procs[300].tpgid == -1 and procs[300].args == ""
    assert 400 not in procs


def test_a_process_on_its_way_out_is_gone() -> None:
    """ps shows `[comm]` for a process whose command line is gone (exiting, zombie):
    emit caught so is not a program called `[paneboard]`, and the shell is back."""
    procs = parse_ps(
        b"  100 90 100 150 -bash\n  150 100 150 150 [paneboard]\n  160 100 160 150 [x] <defunct>\n"
    )
    assert sorted(procs) == [100]
    shell = Observation(None, 100, True)
    assert observe(_info("python3"), procs, previous=shell) == shell


def test_observe_shell_program_transport_and_unknown() -> None:
    shell = {100: ProcInfo(100, 100, "-bash")}
    assert observe(_info("bash"), shell) == Observation(None, 100, True)
    prog = {100: ProcInfo(100, 150, "-bash"), 150: ProcInfo(150, 150, "vim x")}
    assert observe(_info("vim"), prog) == Observation("vim", 150, True)
    ssh = {100: ProcInfo(100, 150, "-bash"), 150: ProcInfo(150, 150, "ssh build1")}
    assert observe(_info("ssh"), ssh) == Observation("ssh", 150, False)
    # "docker exec" is a transport, "docker build" is not
    dexec = {100: ProcInfo(100, 150, "-bash"), 150: ProcInfo(150, 150, "docker exec -it c sh")}
    assert observe(_info("docker"), dexec).observable is False
    dbuild = {100: ProcInfo(100, 150, "-bash"), 150: ProcInfo(150, 150, "docker build .")}
    assert observe(_info("docker"), dbuild).observable is True
    # arguments not known yet: hiding is the safe side
    assert observe(_info("docker"), {100: ProcInfo(100, 150, "-bash")}).observable is False
    # interpreters are passed with their arguments, for the classifier to unwrap (RI-1)
    node = {100: ProcInfo(100, 150, "-bash"), 150: ProcInfo(150, 150, "node /opt/claude/cli.js")}
    assert observe(_info("node"), node) == Observation("node /opt/claude/cli.js", 150, True)
    # no controlling-tty group: tmux names something but nothing is known about it
    assert observe(_info("vim"), {100: ProcInfo(100, -1, "vim")}) == Observation("vim", None, False)
    # pane process gone, pane dead, or no name: exited / unknown
    assert observe(_info("vim"), {}) == Observation(None, None, True)
    assert observe(_info("vim", dead=True), prog) == Observation(None, None, True)
    assert observe(_info(""), None) == Observation(None, None, False)
    # ps unavailable: tmux's name only
    assert observe(_info("vim"), None) == Observation("vim", None, True)


def test_the_program_is_named_by_the_process_look_not_by_tmux() -> None:
    """tmux's `#{pane_current_command}` is argv[0] as a program set it; where the process
    look sees the foreground leader, its command line names the program, as tmux would."""
    prog = {100: ProcInfo(100, 150, "-bash"), 150: ProcInfo(150, 150, "/usr/bin/vim x")}
    assert observe(_info("claude"), prog) == Observation("vim", 150, True)
    assert observe(_info(""), prog) == Observation("vim", 150, True)
    back = {100: ProcInfo(100, 100, "-bash")}  # the leader left before `ps`: the shell is back
    assert observe(_info("claude"), back) == Observation(None, 100, True)
    # the leader gone before `ps` read it: tmux's name is all there is of it
    gone = {100: ProcInfo(100, 150, "-bash")}
    assert observe(_info("vim"), gone) == Observation("vim", 150, True)
    # the transport list is configuration
    assert observe(_info("vim"), prog, transports=("vim",)).observable is False


def test_session_globs() -> None:
    assert session_selected("agent-1", (), ())
    assert session_selected("agent-1", ("agent-*",), ())
    assert not session_selected("scratch", ("agent-*",), ())
    assert not session_selected("agent-x", ("agent-*",), ("agent-x",))


def test_config_full_and_errors_name_the_key(tmp_path) -> None:
    cfg = parse_config(
        {
            "poll_interval": 0.5,
            "screen_reread": 0,
            "transports": ["ssh", "kubectl exec"],
            "hosts": [
                {"local": True, "tmux_socket": "work"},
                {"host": "b1", "port": 2222, "user": "ci", "identity": "~/.ssh/k", "include": ["a*"]},
            ],
        }
    )
    assert cfg.poll_interval == 0.5 and cfg.transports == ("ssh", "kubectl exec")
    assert cfg.screen_reread == 0 and parse_config({}).screen_reread == 0.4
    assert cfg.hosts[0].local and cfg.hosts[0].tmux_socket == "work"
    assert cfg.hosts[1].identity == ("~/.ssh/k",) and cfg.hosts[1].include == ("a*",)
    cases = {
        "hosts[0].port: expected an integer from 1 to 65535": {"hosts": [{"host": "x", "port": 0}]},
        "hosts[0].prot: unknown key": {"hosts": [{"host": "x", "prot": 1}]},
        "hosts[0].host: missing; give host = ": {"hosts": [{}]},
        "hosts[0].user: only meaningful for an SSH host": {"hosts": [{"local": True, "user": "u"}]},
        "hosts[0].tmux_socket: a name (tmux -L)": {"hosts": [{"local": True, "tmux_socket": "/tmp/x"}]},
        "hosts[0].host: not a host name": {"hosts": [{"host": "-oProxyCommand=x"}]},
        "transports[1]: expected a non-empty string": {"transports": ["ssh", 3]},
        "poll_interval: expected a number": {"poll_interval": "fast"},
        "screen_reread: expected a number from 0 to 10": {"screen_reread": -1},
        "hosts: expected an array of tables": {"hosts": {"host": "x"}},
        "colour: unknown key": {"colour": 1},
    }
    for expected, raw in cases.items():
        with pytest.raises(ConfigError) as exc:
            parse_config(raw, "a.toml")
        assert str(exc.value).startswith(f"a.toml: {expected}"), str(exc.value)
    bad = tmp_path / "bad.toml"
    bad.write_text("hosts = [")
    with pytest.raises(ConfigError, match=r"bad\.toml: not valid TOML"):
        load_config(bad)
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(tmp_path / "missing.toml")


def test_ssh_specs() -> None:
    assert parse_ssh_spec("build1") == (None, "build1", None)
    assert parse_ssh_spec("ci@build1:2222") == ("ci", "build1", 2222)
    assert parse_ssh_spec("[::1]:2200") == (None, "::1", 2200)
    assert parse_ssh_spec("u@[fe80::1]") == ("u", "fe80::1", None)
    for bad in ("@h", "h:x", "h:0", "-oProxyCommand=x", "[::1", "h:99999"):
        with pytest.raises(ConfigError):
            parse_ssh_spec(bad)


EMIT = "/venv/bin/python /venv/bin/paneboard emit blocked --msg Deploy?"


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (EMIT, True),
        ("python3 -m paneboard.cli emit done", True),
        ("uv run paneboard emit working", True),
        ("/venv/bin/python /venv/bin/paneboard agent --stdout", False),
        ("python3 emit.py", False),
        ("", False),
        (None, False),
    ],
)
def test_is_reporter(args: str | None, expected: bool) -> None:
    from paneboard_agent.tmux.panes import is_reporter

    assert is_reporter(args) is expected


def test_observe_emit_at_the_prompt_keeps_what_was_in_front() -> None:
    """`paneboard emit` typed at the prompt leads the pane for a moment: it reports for
    the shell that ran it, so the shell stays in front and its report survives emit."""
    shell = Observation(None, 100, True)
    emit = {100: ProcInfo(100, 150, "-bash"), 150: ProcInfo(150, 150, EMIT)}
    assert observe(_info("python"), emit, previous=shell) == shell
    assert observe(_info("python"), emit) == shell  # nothing seen before: the pane's shell
    claude = Observation("claude", 120, True)
    assert observe(_info("python"), emit, previous=claude) == claude


def test_observe_emit_reports_for_the_shell_that_ran_it_whatever_was_seen_last() -> None:
    """A look between the shell's fork and emit's exec saw the fork: a shell of another
    pid in front. The report must still be filed under the shell emit returns to (its
    parent), or it ends when that shell is back in front (a CI failure: the emitted
    question was gone within a poll)."""
    fork = Observation(None, 151, True)
    emit = {100: ProcInfo(100, 151, "-bash"), 151: ProcInfo(151, 151, EMIT, ppid=100, pgid=151)}
    assert observe(_info("python"), emit, previous=fork) == Observation(None, 100, True)
    claude = Observation("claude", 120, True)  # suspended, or gone before the look
    assert observe(_info("python"), emit, previous=claude) == Observation(None, 100, True)
    # then the shell is back: the same observation, so the report stands
    back = {100: ProcInfo(100, 100, "-bash")}
    assert observe(_info("bash"), back, previous=Observation(None, 100, True)) == Observation(None, 100, True)


def test_observe_trusts_ps_over_a_tmux_name_that_lags() -> None:
    """tmux named emit (`python`), and by the time `ps` ran emit had exited: the shell is
    back in front, not a program called `bash`; a leader gone before its arguments
    were read tells nothing new."""
    back = {100: ProcInfo(100, 100, "-bash")}
    assert observe(_info("python"), back) == Observation(None, 100, True)
    shell = Observation(None, 100, True)
    vanished = {100: ProcInfo(100, 150, "-bash")}  # leader 150 gone before the second ps
    assert observe(_info("python"), vanished, previous=shell) == shell
    assert observe(_info("python"), vanished) == Observation("python", 150, True)


def test_observe_a_fork_seen_last_and_gone_gives_the_shell_back() -> None:
    """The last look fell between the shell's fork and emit's exec (a shell at pid 150);
    this one read the shell still naming 150 in front, but 150 had exited before `ps`
    got to it. Kept, the fork would own emit's report, which then ended at the next look
    (seen in CI: blocked, then every field null within 3.5 s)."""
    fork = Observation(None, 150, True)
    vanished = {100: ProcInfo(100, 150, "-bash")}
    assert observe(_info("python"), vanished, previous=fork) == Observation(None, 100, True)
    # a program of the pane's own (not a shell) keeps what was seen: nothing says who is back
    program = {100: ProcInfo(100, 150, "/usr/bin/claude")}
    assert observe(_info("python"), program, previous=fork) == fork


def _agent_of(name: str) -> str | None:
    from paneboard_protocol.identity import process_identity
    from paneboard_protocol.rules import load_rules

    m = load_rules("/nonexistent-paneboard-rules").for_process(process_identity(name))
    return m.agent if m is not None else None


def test_observe_finds_the_agent_behind_a_wrapper_in_the_foreground_group() -> None:
    # `bash -c 'claude; exec bash'` as the pane's command: tmux says bash, the group has claude
    wrapped = {
        100: ProcInfo(100, 100, "bash -c claude; exec bash", ppid=1, pgid=100),
        101: ProcInfo(101, 100, "claude --permission-mode default", ppid=100, pgid=100),
    }
    got = observe(_info("bash"), wrapped, agent_of=_agent_of)
    assert (got.name, got.pid, got.observable) == ("claude", 101, True)
    assert got.why and "bash -c claude" in got.why
    # without the manifest match (no rules) the leader is all there is: a shell in front
    assert observe(_info("bash"), wrapped) == Observation(None, 100, True)
    # typed at an interactive prompt: the wrapper is a job of its own, led by bash -c
    typed = {
        100: ProcInfo(100, 150, "-bash", ppid=1, pgid=100),
        150: ProcInfo(150, 150, "npm exec claude", ppid=100, pgid=150),
        151: ProcInfo(151, 150, "sh -c claude", ppid=150, pgid=150),
        152: ProcInfo(152, 150, "node /x/node_modules/@anthropic-ai/claude-code/cli.js", ppid=151, pgid=150),
    }
    got = observe(_info("npm"), typed, agent_of=_agent_of)
    assert got.pid == 152 and got.name.startswith("node ") and "2 levels below" in (got.why or "")


def test_observe_never_takes_a_job_outside_the_foreground_group() -> None:
    # `claude &` / a stopped claude: its own group, not in front; the shell is at its prompt
    bg = {
        100: ProcInfo(100, 100, "-bash", ppid=1, pgid=100),
        120: ProcInfo(120, 100, "claude", ppid=100, pgid=120),
    }
    assert observe(_info("bash"), bg, agent_of=_agent_of) == Observation(None, 100, True)


def test_observe_keeps_a_leader_that_names_the_agent_and_a_transport_in_front() -> None:
    lead = {
        100: ProcInfo(100, 150, "-bash", ppid=1, pgid=100),
        150: ProcInfo(150, 150, "codex", ppid=100, pgid=150),
        151: ProcInfo(151, 150, "claude", ppid=150, pgid=150),  # codex runs claude as a tool
    }
    assert observe(_info("codex"), lead, agent_of=_agent_of) == Observation("codex", 150, True)
    ssh = {
        100: ProcInfo(100, 150, "-bash", ppid=1, pgid=100),
        150: ProcInfo(150, 150, "ssh build", ppid=100, pgid=150),
        151: ProcInfo(151, 150, "claude", ppid=150, pgid=150),  # a ProxyCommand named so
    }
    assert observe(_info("ssh"), ssh, agent_of=_agent_of).observable is False


def test_ps_asks_once_for_pids_and_terminals() -> None:
    argv = ps_argv([3, 1, 3], ["/dev/pts/4", "/dev/pts/2", "", "/dev/pts/4", "weird,tty"])
    assert argv == ["ps", "-ww", "-o", "pid=,ppid=,pgid=,tpgid=,args=", "-p", "1,3", "-t", "pts/2,pts/4"]
    assert ps_argv([5]) == ["ps", "-ww", "-o", "pid=,ppid=,pgid=,tpgid=,args=", "-p", "5"]


def test_screens_and_input_per_host_and_from_the_command_line() -> None:
    import argparse

    from paneboard_agent.cli import build_parser, hosts_from_args, make_targets
    from paneboard_agent.config import ConfigError, parse_config

    cfg = parse_config(
        {
            "hosts": [
                {"local": True, "allow_input": True},
                {"host": "b", "screens": False, "allow_input": True},
            ]
        }
    )
    assert [(h.screens, h.allow_input) for h in cfg.hosts] == [(True, True), (False, True)]
    targets = make_targets(cfg.hosts, "none")
    assert [(t.screens, t.allow_input) for t in targets] == [
        (True, True),
        (False, False),
    ]  # no screen, no typing
    assert parse_config({"hosts": [{"local": True}]}).hosts[0].allow_input is False  # off by default
    with pytest.raises(ConfigError, match=r"hosts\[0\]\.allow_input: expected true or false"):
        parse_config({"hosts": [{"local": True, "allow_input": "yes"}]})
    args: argparse.Namespace = build_parser().parse_args(["--stdout", "--allow-input"])
    assert all(h.allow_input for h in hosts_from_args(args, parse_config({})))
    args = build_parser().parse_args(["--stdout", "--allow-input", "--no-screens"])
    assert not any(h.allow_input or h.screens for h in hosts_from_args(args, cfg))


def test_observe_gives_the_parent_chain_of_the_process_in_front() -> None:
    """RI-2: a shell's report stays live while the shell is an ancestor of what is in
    front, so the observation carries the pids above the foreground process."""
    procs = {
        100: ProcInfo(100, 300, "-bash", ppid=1, pgid=100),
        200: ProcInfo(200, 300, "make", ppid=100, pgid=300),
        300: ProcInfo(300, 300, "rsync -a x y", ppid=200, pgid=300),
    }
    assert observe(_info("rsync"), procs).chain == (200, 100, 1)
    at_prompt = {100: ProcInfo(100, 100, "-bash", ppid=1, pgid=100)}
    shell = observe(_info("bash"), at_prompt)
    assert (shell, shell.chain) == (Observation(None, 100, True), (1,))
    # a parent loop in a torn or forged reply ends, bounded
    loop = {
        100: ProcInfo(100, 7, "-bash", ppid=1),
        7: ProcInfo(7, 7, "sleep 9", ppid=8),
        8: ProcInfo(8, 7, "x", ppid=7),
    }
    assert observe(_info("sleep"), loop).chain == (8,)
    assert ancestry(None, 7) == () and ancestry(loop, None) == ()


def test_a_tmux_socket_after_an_ssh_host_is_that_hosts_own() -> None:
    """Issue 43: two hosts on different tmux sockets from the command line; a
    --tmux-socket before any --ssh is still every host's, as it always was."""
    from paneboard_agent.cli import build_parser, hosts_from_args

    def sockets(*argv: str) -> dict[str | None, str | None]:
        args = build_parser().parse_args(argv)
        return {h.host: h.tmux_socket for h in hosts_from_args(args, parse_config({}))}

    assert sockets("--ssh", "b1", "--tmux-socket", "work", "--ssh", "b2") == {"b1": "work", "b2": None}
    assert sockets("--ssh", "b1", "--tmux-socket", "a", "--ssh", "b2", "--tmux-socket", "b") == {
        "b1": "a",
        "b2": "b",
    }
    assert sockets("--tmux-socket", "w", "--local", "--ssh", "b1", "--ssh", "b2", "--tmux-socket", "x") == {
        None: "w",
        "b1": "w",
        "b2": "x",
    }
    assert sockets("--ssh", "b1", "--tmux-socket", "work") == {"b1": "work"}  # as before
    with pytest.raises(ConfigError, match="a second one for the same --ssh host"):
        sockets("--ssh", "b1", "--tmux-socket", "a", "--tmux-socket", "b")
