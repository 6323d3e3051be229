"""Issue 43, hosts on the board: a host the collector cannot watch is a card with the
reason and what to do, through real sshds. Three at once under one collector: one whose
host key known_hosts does not trust, a closed port, and one whose login finds no tmux.
Fixing known_hosts brings the first back without restarting the collector."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.sshd import Sshd, free_port
from support.stack import PANEBOARD
from support.wait import wait_for

from .stack import HOST, open_board

pytestmark = [pytest.mark.browser, pytest.mark.tmux, pytest.mark.sshd]

CLOSED = "127.0.0.2"  # loopback, but nothing listens on it
NO_TMUX = "localhost"  # the second sshd: its sessions run with a PATH that has no tmux


def _host_card(page, name: str) -> str:
    """The card's text, or "" when there is none; read in one step, since the card may go
    between a count and a read (then `inner_text` waits 30 s for it to come back)."""
    texts = page.locator(f".group.hosts-down .host-card[data-host='{name}']").all_inner_texts()
    return texts[0] if texts else ""


def test_hosts_the_collector_cannot_watch_are_cards_and_a_fixed_key_comes_back(
    stack_factory, browser, tmp_path: Path
) -> None:
    stack = stack_factory(grace=30)
    assert stack.sshd is not None and stack.tmux is not None
    stack.stop_collector()
    # a login whose commands find a shell but no tmux: the same machine, every command
    # run with a PATH that holds `sh` only
    bin_dir = tmp_path / "bare-bin"
    bin_dir.mkdir()
    (bin_dir / "sh").symlink_to("/bin/sh")
    bare = Sshd(
        tmp_path / "bare",
        extra=(f'ForceCommand /usr/bin/env PATH={bin_dir} /bin/sh -c "$SSH_ORIGINAL_COMMAND"',),
    ).start()
    try:
        bare.authorized_keys.write_text(Path(f"{stack.sshd.client_key}.pub").read_text())
        good = stack.sshd.known_hosts.read_text()
        pub = Path(f"{bare.host_key}.pub").read_text().split()
        known = tmp_path / "known_hosts"
        # 127.0.0.1's key as another machine's: what a reinstalled (or impersonated) host shows
        wrong = stack.sshd.wrong_known_hosts.read_text()
        known.write_text(wrong + f"[{NO_TMUX}]:{bare.port} {pub[0]} {pub[1]}\n")
        args = [*PANEBOARD, "agent", "--server", stack.url, "--token", stack.collector_token]
        args += ["--tmux-socket", stack.tmux.name, "--identity", str(stack.sshd.client_key)]
        args += ["--known-hosts", str(known), "--ssh", stack.sshd.spec]
        args += ["--ssh", f"{stack.sshd.user}@{CLOSED}:{free_port()}"]
        args += ["--ssh", f"{bare.user}@{NO_TMUX}:{bare.port}"]
        collector = stack._spawn("collector-cards", args)

        def hosts() -> dict[str, dict]:
            return {h["name"]: h for h in stack.api("/api/hosts")}

        wait_for(
            lambda: all(
                (h := hosts().get(n)) and not h["reachable"] and h["error"] != "not connected yet"
                for n in (HOST, CLOSED, NO_TMUX)
            ),
            timeout=60,
            what=f"three hosts not reachable, with their reasons\n{stack.log('collector-cards')}",
        )
        page = open_board(browser, stack)
        wait_for(
            lambda: "host key refused" in _host_card(page, HOST), timeout=30, what="the refused key's card"
        )
        refused = _host_card(page, HOST)
        assert "host key verification failed" in refused  # the collector's own line
        assert "verify the new one out of band" in refused  # ... and what to do: never "trust it"
        wait_for(lambda: "unreachable" in _host_card(page, CLOSED), timeout=30, what="the closed port's card")
        assert "sshd answers on that port" in _host_card(page, CLOSED)
        wait_for(
            lambda: "tmux missing" in _host_card(page, NO_TMUX),
            timeout=30,
            what=f"no tmux's card: {hosts()[NO_TMUX]}",
        )
        assert "Install tmux on the host" in _host_card(page, NO_TMUX)

        # the key is verified (here: the test knows it) and known_hosts fixed: no restart
        known.write_text(good + f"[{NO_TMUX}]:{bare.port} {pub[0]} {pub[1]}\n")
        wait_for(
            lambda: hosts()[HOST]["reachable"] and any(p["reachable"] for p in stack.panes()),
            timeout=90,
            what=f"the host back after known_hosts was fixed\n{stack.log('collector-cards')}",
        )
        wait_for(lambda: not _host_card(page, HOST), timeout=30, what="the refused key's card gone")
        assert _host_card(page, CLOSED) and _host_card(page, NO_TMUX)  # the others still say so
        assert collector.poll() is None  # the same collector: it was not restarted
        assert page.errors == []
        page.context.close()
    finally:
        bare.stop()
