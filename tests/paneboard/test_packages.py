"""paneboard as a user installs it: sdists, wheels built from them, a tool install with no
checkout on the path, and the demo from that install serving a board that loads in Chromium.

The packages share top-level folders (`web/`, `migrations/`); a wheel built from an sdist
that lacks them would install a server without a dashboard or a schema, which no test run
from the checkout would notice.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import tarfile
import threading
import time
import zipfile
from pathlib import Path

import pytest
from support.stack import CHROMIUM_ARGS
from support.tools import CHROMIUM, require_tool

pytestmark = [pytest.mark.tmux, pytest.mark.browser]

REPO = Path(__file__).resolve().parents[2]
IMG = REPO / "docs" / "img"  # the README's pictures of the board come from this test
PACKAGES = ("paneboard", "paneboard_protocol", "paneboard_agent", "paneboard_server")


def _clean_env(home: Path, **extra: str) -> dict[str, str]:
    """The environment of a user outside the checkout: no venv, no PYTHONPATH into it."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "VIRTUAL_ENV", "UV_PROJECT_ENVIRONMENT")
    }
    env.update(HOME=str(home), **extra)
    return env


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    """`uv build --all-packages`: each package's sdist, then its wheel built from that sdist."""
    uv = require_tool("uv")
    out = tmp_path_factory.mktemp("dist")
    done = subprocess.run(
        [uv, "build", "--all-packages", "-o", str(out)], cwd=REPO, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return out


@pytest.fixture(scope="module")
def installed(dist: Path, tmp_path_factory) -> Path:
    """`uv tool install paneboard` from those wheels, run from a folder outside the checkout."""
    uv = require_tool("uv")
    place = tmp_path_factory.mktemp("user")
    env = _clean_env(place, UV_TOOL_DIR=str(place / "tools"), UV_TOOL_BIN_DIR=str(place / "bin"))
    done = subprocess.run(
        [uv, "tool", "install", "--find-links", str(dist), "paneboard"],
        cwd=place,
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return place / "bin" / "paneboard"


def _one(dist: Path, pattern: str) -> Path:
    found = sorted(dist.glob(pattern))
    assert len(found) == 1, (pattern, [p.name for p in dist.iterdir()])
    return found[0]


def test_every_package_has_an_sdist_and_a_wheel(dist: Path) -> None:
    for name in PACKAGES:
        _one(dist, f"{name}-*.tar.gz")
        _one(dist, f"{name}-*-py3-none-any.whl")


def test_the_server_packages_carry_the_dashboard_and_the_migrations(dist: Path) -> None:
    with tarfile.open(_one(dist, "paneboard_server-*.tar.gz")) as sdist:
        names = {n.split("/", 1)[1] for n in sdist.getnames() if "/" in n}
    assert {"web/index.html", "web/login.html", "migrations/env.py", "hatch_build.py"} <= names
    with zipfile.ZipFile(_one(dist, "paneboard_server-*.whl")) as wheel:
        names = set(wheel.namelist())
    source_web = {
        f"paneboard_server/web/{p.relative_to(REPO / 'web')}"
        for p in (REPO / "web").rglob("*")
        if p.is_file()
    }
    source_versions = {p.name for p in (REPO / "migrations" / "versions").glob("*.py")}
    assert source_web <= names, sorted(source_web - names)
    assert {f"paneboard_server/migrations/versions/{v}" for v in source_versions} <= names


def test_the_protocol_wheel_carries_the_manifests(dist: Path) -> None:
    with zipfile.ZipFile(_one(dist, "paneboard_protocol-*.whl")) as wheel:
        names = set(wheel.namelist())
    source = REPO / "protocol" / "src" / "paneboard_protocol" / "manifests"
    wanted = {f"paneboard_protocol/manifests/{p.name}" for p in source.glob("*.toml")}
    assert wanted and wanted <= names, sorted(wanted - names)


def test_the_installed_command_says_its_version(installed: Path, tmp_path: Path) -> None:
    done = subprocess.run(
        [str(installed), "--version"], cwd=tmp_path, env=_clean_env(tmp_path), capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert re.fullmatch(r"paneboard \d+\.\d+\.\d+\S*\n", done.stdout), done.stdout


def test_the_installed_demo_serves_a_board_that_loads(installed: Path, tmp_path: Path) -> None:
    require_tool("tmux", "chromium")
    proc = subprocess.Popen(
        [str(installed), "demo", "--no-browser"],
        cwd=tmp_path,
        env=_clean_env(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    stderr: list[str] = []
    threading.Thread(target=lambda: stderr.extend(proc.stderr), daemon=True).start()
    try:
        url = password = None
        deadline = time.monotonic() + 240
        while url is None and time.monotonic() < deadline:
            line = proc.stdout.readline()
            assert line, f"the demo exited early: {''.join(stderr)[-3000:]}"
            m = re.search(r"Sign in at (http://127\.0\.0\.1:\d+)/login as 'demo' with password (\S+) ", line)
            if m:
                url, password = m.groups()
        assert url, "the demo never printed its login"

        from playwright.sync_api import sync_playwright

        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
            try:
                desk = browser.new_context(viewport={"width": 1440, "height": 900})
                page = desk.new_page()
                page.goto(url + "/login")
                page.fill("#login-user", "demo")
                page.fill("#login-pass", password)
                page.click("button[type=submit]")
                page.wait_for_url(url + "/")
                page.wait_for_selector("html[data-stream='live']", timeout=60_000)
                assert "dashboard files are not installed" not in page.content()
                # The demo's agents reach the board through the installed collector; the
                # picture waits for the one that asks and for the rest of them.
                page.wait_for_selector(".card[data-waiting]", timeout=120_000)
                page.wait_for_function("document.querySelectorAll('.card').length >= 6", timeout=120_000)
                IMG.mkdir(exist_ok=True)
                page.screenshot(path=str(IMG / "board-desktop.png"))
                phone = browser.new_context(
                    viewport={"width": 390, "height": 844},
                    is_mobile=True,
                    has_touch=True,
                    device_scale_factor=2,
                    storage_state=desk.storage_state(),
                )
                small = phone.new_page()
                small.goto(url + "/")
                small.wait_for_selector(".card[data-waiting]", timeout=60_000)
                small.screenshot(path=str(IMG / "board-phone.png"))
            finally:
                browser.close()
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def _sh_block(markdown: Path) -> str:
    blocks = re.findall(r"^```sh\n(.*?)^```", markdown.read_text(), re.S | re.M)
    assert len(blocks) == 1, f"{markdown} should hold one sh block"
    return blocks[0]


def test_the_system_wide_install_and_the_units_as_documented(dist: Path, tmp_path: Path) -> None:
    """contrib/systemd/README.md's block, as written, as root, in a private mount namespace
    (overlays on /etc, /opt, /usr/local and /var/lib), so the machine keeps nothing of it;
    then the units' user runs the installed command, as the service would."""
    if os.geteuid() != 0:
        pytest.fail(
            "needs root (useradd, mount namespaces); ./scripts/test and CI run as root", pytrace=False
        )
    require_tool("uv")
    mounts = []
    for target in ("/etc", "/opt", "/usr/local", "/var/lib"):
        name = target.strip("/").replace("/", "-")
        upper, work = tmp_path / name / "upper", tmp_path / name / "work"
        upper.mkdir(parents=True)
        work.mkdir()
        mounts.append(
            f"mount -t overlay overlay -o lowerdir={target},upperdir={upper},workdir={work} {target}"
        )
    script = "\n".join(
        [
            "set -eu",
            *mounts,
            _sh_block(REPO / "contrib" / "systemd" / "README.md"),
            "runuser -u paneboard -- paneboard --version",
            "stat -c '%a %U' /var/lib/paneboard/paneboard.db",
        ]
    )
    done = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c", script],
        cwd=REPO / "contrib" / "systemd",
        env=dict(os.environ, DIST=str(dist)),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-4000:])
    assert re.search(r"^paneboard \d+\.\d+\.\d+\S*$", done.stdout, re.M), done.stdout
    assert done.stdout.rstrip().endswith("600 paneboard"), done.stdout
    assert not os.path.exists("/opt/paneboard/paneboard"), "the install leaked out of its namespace"
