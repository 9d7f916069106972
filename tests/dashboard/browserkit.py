"""Headless Chromium and a real `automaton --dashboard` process, for the browser tests and the
README screenshots (`make screenshots`).

Chromium comes from Debian's `chromium` and `chromium-driver` packages (`make test` installs them
where it runs as root with apt; browser downloads by Selenium or Playwright are not reachable on
the machines this project is built on). The flags keep Chromium from reaching the network at start:
without them a closed network refuses its background connections, many at a time.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from selenium import webdriver
from selenium.webdriver.chrome.service import Service

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
CHROME_FLAGS = (
    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage", "--window-size=1280,900",
)
LOGIN_URL = re.compile(r"http://127\.0\.0\.1:\d+/login\?token=[A-Za-z0-9_\-]+")
LOGIN_FILE = Path(".config") / "automaton" / "dashboard-login.url"  # under the child's HOME
KEY_STORE = "automaton-dashboard-key"  # dashboard.js's localStorage entry
ENTRY = [str(Path(sys.executable).parent / "automaton")]


def browser_missing() -> str | None:
    """Why the browser tests cannot run here (a missing binary), or None."""
    for exe in (CHROMIUM, CHROMEDRIVER):
        if not os.access(exe, os.X_OK):
            return f"{exe} is missing: apt-get install chromium chromium-driver (make test does it as root)"
    return None


def free_port() -> int:
    """A TCP port nobody listens on now (the kernel's pick for a bind to port 0)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def chrome(width: int = 1280, height: int = 900) -> Iterator[webdriver.Chrome]:
    """A headless Chromium with a fresh profile (so no cookie carries over), quit afterwards."""
    profile = tempfile.mkdtemp(prefix="automaton-chrome-")
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for flag in (*CHROME_FLAGS, f"--user-data-dir={profile}"):
        opts.add_argument(flag)
    opts.add_argument(f"--window-size={width},{height}")
    driver = webdriver.Chrome(options=opts, service=Service(CHROMEDRIVER))
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


class Dashboard:
    """A running `automaton --dashboard` child: its base URL, its one-time login URL (None when
    it started read-only; its output is a pipe, so it wrote the URL to LOGIN_FILE under HOME,
    not to stdout) and everything it printed so far."""

    def __init__(self, proc: subprocess.Popen[str], port: int, login: str | None, printed: str) -> None:
        self.proc, self.port, self.login, self.printed = proc, port, login, printed
        self.base = f"http://127.0.0.1:{port}"


@contextmanager
def dashboard(*projects: Path, approver: str | None = "tester", timeout: float = 20.0) -> Iterator[Dashboard]:
    """Start `automaton --dashboard --port P --project …` as a real process and wait until it
    answers. `approver`: the AUTOMATON_APPROVER of the starting process (a human started it, so
    it prints a one-time login URL); None starts it without one (read-only)."""
    port = free_port()
    args = [*ENTRY, "--dashboard", "--port", str(port)]
    for p in projects:
        args += ["--project", str(p)]
    env = dict(os.environ)
    env.pop("AUTOMATON_APPROVER", None)
    if approver is not None:
        env["AUTOMATON_APPROVER"] = approver
    proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, env=env, cwd=str(projects[0]) if projects else None)
    try:
        printed, login = _wait_ready(proc, port, Path(env["HOME"]) / LOGIN_FILE, timeout)
    except BaseException:  # a dashboard that never answered, or a failing check: never left running
        proc.kill()
        proc.wait()
        raise
    try:
        yield Dashboard(proc, port, login, printed)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _wait_ready(proc: subprocess.Popen[str], port: int, login_file: Path, timeout: float) -> tuple[str, str | None]:
    """Wait until the port answers; everything the child printed by then and its login URL, if
    any (read from `login_file`, whose path the child printed). A thread drains the child's
    output for its whole life (a full pipe would stall it)."""
    assert proc.stdout is not None
    lines: list[str] = []
    stream = proc.stdout
    threading.Thread(target=lambda: lines.extend(iter(stream.readline, "")), daemon=True).start()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            time.sleep(0.2)  # let the thread take the last lines
            raise AssertionError(f"the dashboard exited {proc.returncode}: {''.join(lines)}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                pass
        except OSError:
            time.sleep(0.05)
            continue
        for _ in range(20):  # the lines may trail the listening socket by a moment
            printed = "".join(lines)
            if str(login_file) in printed or "read-only" in printed:
                break
            time.sleep(0.05)
        printed = "".join(lines)
        assert LOGIN_URL.search(printed) is None, f"the login URL went to a pipe: {printed}"
        if str(login_file) not in printed:
            return printed, None
        found = LOGIN_URL.fullmatch(login_file.read_text().strip())
        assert found is not None, login_file.read_text()
        return printed, found.group(0)
    proc.kill()
    raise AssertionError(f"the dashboard did not answer on port {port} within {timeout} s: {''.join(lines)}")


def log_in(driver: webdriver.Chrome, d: Dashboard, timeout: float = 10.0) -> str:
    """Open the login URL as the person would, and wait until dashboard.js has kept the form key
    and gone on to the loops view; the key."""
    from selenium.webdriver.support.ui import WebDriverWait

    assert d.login is not None, d.printed
    driver.get(d.login)
    WebDriverWait(driver, timeout, poll_frequency=0.05).until(
        lambda drv: drv.current_url == d.base + "/"
        and drv.execute_script("return document.readyState") == "complete"
        and drv.find_elements("css selector", 'body[data-session="yes"]'))
    key = driver.execute_script(f"return window.localStorage.getItem('{KEY_STORE}')")
    assert isinstance(key, str) and len(key) == 64, key
    return key
