"""Over SSH: tmux pane -> ssh -tt -> real sshd -> `paneboard run` -> the program.

tmux answers DA1 from the far end of the SSH connection; the relay, on the remote pty,
still answers the probe first, and the reports travel back through ssh into the pane.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from paneboard_protocol import Decoder, StatusReport
from relay_tmux import PANEBOARD, PROBE, PYTHON, Tmux, q
from support import sshd as sshd_support
from support.wait import wait_for

pytestmark = [pytest.mark.tmux, pytest.mark.sshd]


def ssh_command(server: sshd_support.Sshd, remote: str) -> str:
    return q(
        "ssh",
        "-tt",
        "-F",
        "/dev/null",
        "-i",
        str(server.client_key),
        "-o",
        f"UserKnownHostsFile={server.known_hosts}",
        "-o",
        "StrictHostKeyChecking=yes",
        "-o",
        "BatchMode=yes",
        "-p",
        str(server.port),
        f"{server.user}@127.0.0.1",
        remote,
    )


@pytest.mark.parametrize("relay", [True, False])
def test_probe_over_ssh(tmux: Tmux, sshd: sshd_support.Sshd, tmp_path: Path, relay: bool) -> None:
    result = tmp_path / "result.json"
    program = [PYTHON, PROBE, str(result)]
    remote = q(*([PANEBOARD, "run", "--", *program] if relay else program))
    pane = tmux.pane(ssh_command(sshd, remote))
    verdict = json.loads(str(wait_for(lambda: result.exists() and result.read_text(), timeout=20)))
    assert verdict["verdict"] == ("supported" if relay else "unsupported"), verdict
    assert pane.dead_status(timeout=20) == 0
    expected = ["working", "blocked", "done"] if relay else []

    def states() -> list[str]:
        return [e.state for e in Decoder().feed(pane.output()) if isinstance(e, StatusReport)]

    wait_for(lambda: states() == expected, what=f"the pane to carry {expected}")
