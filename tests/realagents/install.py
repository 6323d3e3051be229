"""Install the real agent CLIs, pinned, into a cache outside the repository.

`python tests/realagents/install.py` (run by scripts/test's bootstrap) installs each CLI
of AGENTS that is not already there into `$PANEBOARD_AGENTS_CACHE` (default
`~/.cache/paneboard/agents`), one directory per name and version, and checks that the
installed program answers `--version`. Reused between runs: a directory holding a
`.ok` marker is not touched again. Exit status 1 with the reason when any CLI cannot
be installed: the real-agent tests must then fail, not skip.

npm's own clients install the npm packages (`npm install --prefix DIR`); Aider goes
into a virtualenv of its own made by uv (it pins its own dependency tree, which must
not meet ours).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class AgentCli:
    name: str
    version: str
    registry: str  # "npm" | "pypi"
    package: str
    binary: str  # path of the program inside the install directory

    @property
    def dir(self) -> Path:
        return cache_root() / f"{self.name}-{self.version}"

    @property
    def path(self) -> Path:
        return self.dir / self.binary

    def env(self) -> dict[str, str]:
        """What the program needs in its environment wherever it runs (install check, tests).

        Copilot CLI's native binary unpacks its bundled package (some 200 MB) into a cache
        on first run, by default under $HOME: kept beside the install, it is unpacked once,
        not once per test's own HOME.
        """
        if self.name == "copilot":
            return {"COPILOT_PKG_CACHE_HOME": str(self.dir / "pkg-cache")}
        return {}


AGENTS: dict[str, AgentCli] = {
    a.name: a
    for a in (
        AgentCli("claude", "2.1.328", "npm", "@anthropic-ai/claude-code", "node_modules/.bin/claude"),
        AgentCli("codex", "0.171.0", "npm", "@openai/codex", "node_modules/.bin/codex"),
        AgentCli("aider", "0.86.2", "pypi", "aider-chat", "venv/bin/aider"),
        AgentCli("gemini", "0.61.0", "npm", "@google/gemini-cli", "node_modules/.bin/gemini"),
        AgentCli("opencode", "1.18.33", "npm", "opencode-ai", "node_modules/.bin/opencode"),
        AgentCli("pi", "0.73.1", "npm", "@mariozechner/pi-coding-agent", "node_modules/.bin/pi"),
        AgentCli("copilot", "1.0.102", "npm", "@github/copilot", "node_modules/.bin/copilot"),
        AgentCli("qwen", "0.24.4", "npm", "@qwen-code/qwen-code", "node_modules/.bin/qwen"),
    )
}


def cache_root() -> Path:
    return Path(os.environ.get("PANEBOARD_AGENTS_CACHE") or Path.home() / ".cache" / "paneboard" / "agents")


class InstallError(RuntimeError):
    pass


def _run(argv: list[str], cwd: Path, log: Path, timeout: float) -> None:
    with log.open("a") as f:
        f.write(f"$ {' '.join(argv)}\n")
        f.flush()
        try:
            res = subprocess.run(
                argv, cwd=cwd, stdout=f, stderr=subprocess.STDOUT, timeout=timeout, check=False
            )
        except (OSError, subprocess.TimeoutExpired) as e:
            raise InstallError(f"{argv[0]}: {e}") from None
    if res.returncode != 0:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-8:])
        raise InstallError(f"`{' '.join(argv)}` exited {res.returncode}:\n{tail}")


def install(agent: AgentCli, timeout: float = 600.0) -> Path:
    """Install `agent` unless its cache directory is complete; return the program's path."""
    marker = agent.dir / ".ok"
    if marker.exists() and agent.path.exists():
        return agent.path
    if agent.dir.exists():
        shutil.rmtree(agent.dir)  # a half-done install from an earlier run
    agent.dir.mkdir(parents=True)
    log = agent.dir / "install.log"
    if agent.registry == "npm":
        npm = shutil.which("npm")
        if npm is None:
            raise InstallError("npm is not installed (scripts/test's bootstrap installs nodejs and npm)")
        _run(
            [
                npm,
                "install",
                "--no-audit",
                "--no-fund",
                "--no-save",
                "--prefix",
                ".",
                f"{agent.package}@{agent.version}",
            ],
            agent.dir,
            log,
            timeout,
        )
    else:
        uv = shutil.which("uv")
        if uv is None:
            raise InstallError("uv is not on PATH")
        _run([uv, "venv", "--quiet", "--python", "3.11", "venv"], agent.dir, log, timeout)
        env_py = str(agent.dir / "venv" / "bin" / "python")
        _run(
            [uv, "pip", "install", "--quiet", "--python", env_py, f"{agent.package}=={agent.version}"],
            agent.dir,
            log,
            timeout,
        )
    check(agent)
    marker.touch()
    return agent.path


def check(agent: AgentCli) -> str:
    """The installed program's `--version` output; InstallError if it does not run or lies."""
    if not agent.path.exists():
        raise InstallError(f"{agent.name}: {agent.path} missing after install")
    try:
        res = subprocess.run(
            [str(agent.path), "--version"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            env={**os.environ, "NO_UPDATE_NOTIFIER": "1", **agent.env()},
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        raise InstallError(f"{agent.name} --version: {e}") from None
    out = (res.stdout + res.stderr).strip()
    if agent.version not in out:
        raise InstallError(f"{agent.name} --version printed {out[-300:]!r}, expected {agent.version}")
    return out


def main(argv: list[str]) -> int:
    names = argv[1:] or list(AGENTS)
    failed = 0
    for name in names:
        agent = AGENTS[name]
        try:
            path = install(agent)
            print(f"agents: {agent.name} {agent.version}: {path}", file=sys.stderr)
        except InstallError as e:
            failed += 1
            print(f"agents: cannot install {agent.name} {agent.version}: {e}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
