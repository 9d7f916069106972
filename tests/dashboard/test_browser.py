"""The dashboard driven in a real headless Chromium against a real `automaton --dashboard`
process: what a person sees and clicks, and the refusals an attacker's page or a rebinding DNS
name meets.

Skipped only where Chromium is missing and the run does not demand it; `.ci/run` sets
AUTOMATON_REQUIRE_BROWSER=1, so CI fails instead of skipping.
"""

from __future__ import annotations

import getpass
import http.server
import json
import os
import re
import threading
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

import httpx
import pytest
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import WebDriverWait

from automaton.commands.loop_gate import check_gate
from automaton.store import loops
from automaton.store.layout import Project
from tests.commands.loopkit import loop_with, tick
from tests.dashboard.browserkit import KEY_STORE, browser_missing, chrome, dashboard, free_port, log_in
from tests.helpers import init_repo, via_json

_missing = browser_missing()
if _missing and os.environ.get("AUTOMATON_REQUIRE_BROWSER") == "1":
    raise RuntimeError(f"AUTOMATON_REQUIRE_BROWSER=1 but {_missing}")
pytestmark = [pytest.mark.slow, pytest.mark.skipif(_missing is not None, reason=_missing or "")]

SCORES = (0.25, None, 0.5, 0.75)  # four ticks, three of them scored


def halted_project(root: Path) -> Project:
    """A git project with loop `demo` halted by its iteration brake after four ticks (three
    scored), and loop `other` running."""
    init_repo(root)
    p = loop_with(root, "demo", brakes={"max_iterations": len(SCORES)})
    for score in SCORES:
        tick(p, score, {"implement": 0.1, "verify": 0.0})
    out = check_gate(p, "demo")
    assert out.data["halt_reason"] == "iterations_exhausted", out.data
    loop_with(root, "other")
    return p


def wait_for(driver: WebDriver, check: Callable[[WebDriver], object], timeout: float = 10.0) -> object:
    # The live refresh replaces rows under the test's feet: an element found a moment ago may be
    # gone when it is read; look again.
    return WebDriverWait(driver, timeout, poll_frequency=0.1,
                         ignored_exceptions=(StaleElementReferenceException,)).until(check)


def row(driver: WebDriver, name: str) -> object:
    return driver.find_element(By.CSS_SELECTOR, f'tr.loop[data-loop="{name}"]')


def test_the_loops_view_shows_a_halted_loop_with_its_reason(tmp_path: Path) -> None:
    halted_project(tmp_path / "proj")
    with dashboard(tmp_path / "proj", approver=None) as d, chrome() as driver:
        driver.get(d.base + "/")
        halted = driver.find_element(By.CSS_SELECTOR, 'tr.loop[data-loop="demo"]')
        assert halted.get_attribute("data-status") == "halted"
        assert "iterations_exhausted" in halted.find_element(By.CSS_SELECTOR, "td.halt-reason").text
        running = driver.find_element(By.CSS_SELECTOR, 'tr.loop[data-loop="other"]')
        assert running.get_attribute("data-status") == "running"
        assert running.find_element(By.CSS_SELECTOR, "td.halt-reason").text.strip() == ""


def test_the_loop_page_plots_one_point_per_scored_tick(tmp_path: Path) -> None:
    halted_project(tmp_path / "proj")
    with dashboard(tmp_path / "proj", approver=None) as d, chrome() as driver:
        driver.get(d.base + "/")
        row(driver, "demo").find_element(By.CSS_SELECTOR, "a.loop-link").click()
        wait_for(driver, lambda drv: drv.find_elements(By.ID, "score-plot"))
        points = driver.find_elements(By.CSS_SELECTOR, "#score-plot circle.point")
        assert len(points) == sum(s is not None for s in SCORES)
        assert len(driver.find_elements(By.CSS_SELECTOR, "#spend-plot circle.point")) == len(SCORES)
        assert driver.find_element(By.ID, "loop-status").text.strip().startswith("halted")
        ticks = driver.find_elements(By.CSS_SELECTOR, "#ticks tbody tr")
        assert len(ticks) == len(SCORES)


def test_approving_with_the_token_clears_the_halt_and_logs_who_and_how(tmp_path: Path) -> None:
    p = halted_project(tmp_path / "proj")
    with dashboard(tmp_path / "proj") as d, chrome() as driver:
        log_in(driver, d)
        driver.get(d.base + "/p/0/loop/demo")
        driver.find_element(By.ID, "approve-link").click()
        wait_for(driver, lambda drv: drv.find_elements(By.ID, "confirm-approve"))
        assert "iterations_exhausted" in driver.find_element(By.ID, "halt-reason").text
        driver.find_element(By.ID, "confirm-approve").click()
        wait_for(driver, lambda drv: drv.find_element(By.ID, "loop-status").text.strip().startswith("running"))
    state = json.loads((p.root / ".automaton" / "loops" / "demo" / ".state.loop").read_text())
    assert state["status"] == "running" and state["halt_reason"] is None  # the file as written
    assert state["resumed_count"] == 1
    last = _last_log_line(p)
    assert "APPROVED" in last and f"by={getpass.getuser()}" in last and "via=dashboard" in last


def _last_log_line(p: Project) -> str:
    return (p.root / ".automaton" / "loops" / "demo" / ".state.log").read_text().splitlines()[-1]


def test_the_one_time_token_works_once(tmp_path: Path) -> None:
    halted_project(tmp_path / "proj")
    with dashboard(tmp_path / "proj") as d:
        assert d.login is not None
        with chrome() as first:
            first.get(d.login)
            assert first.find_element(By.TAG_NAME, "body").get_attribute("data-session") == "yes"
        with chrome() as second:  # a second browser (or a page that read the URL) gets nothing
            second.get(d.login)
            assert second.find_elements(By.CSS_SELECTOR, 'body[data-session="yes"]') == []
            second.get(d.base + "/p/0/loop/demo")
            assert second.find_elements(By.ID, "approve-link") == []


def test_without_the_token_the_page_only_shows(tmp_path: Path) -> None:
    p = halted_project(tmp_path / "proj")
    before = (p.root / ".automaton" / "loops" / "demo" / ".state.loop").read_bytes()
    with dashboard(tmp_path / "proj") as d, chrome() as driver:
        driver.get(d.base + "/p/0/loop/demo")
        assert driver.find_element(By.TAG_NAME, "body").get_attribute("data-session") == "no"
        assert driver.find_elements(By.ID, "read-only")
        assert driver.find_elements(By.ID, "approve-link") == []
        driver.get(d.base + "/p/0/loop/demo/approve")
        assert driver.find_elements(By.ID, "read-only")
        # A page elsewhere posting the form blind: no session cookie, no CSRF token.
        refused = httpx.post(d.base + "/p/0/loop/demo/approve", data={"csrf": "x"}, follow_redirects=False)
        assert refused.status_code == 403
    assert (p.root / ".automaton" / "loops" / "demo" / ".state.loop").read_bytes() == before


def test_a_non_loopback_host_is_refused_even_with_a_session(tmp_path: Path) -> None:
    p = halted_project(tmp_path / "proj")
    before = (p.root / ".automaton" / "loops" / "demo" / ".state.loop").read_bytes()
    with dashboard(tmp_path / "proj") as d, chrome() as driver:
        key = log_in(driver, d)
        driver.get(d.base + "/p/0/loop/demo/approve")
        form = driver.find_element(By.ID, "approve-form")
        fields = {i.get_attribute("name"): i.get_attribute("value") or ""
                  for i in form.find_elements(By.CSS_SELECTOR, "input[type=hidden]")}
        fields["key"] = key  # everything the browser holds, and still refused
        cookies = {c["name"]: c["value"] for c in driver.get_cookies()}
        # What a DNS-rebinding page would send: the victim's cookie jar is not involved, but
        # even a request that had the session and the CSRF token is refused by its Host.
        for host in (f"evil.example:{d.port}", "evil.example", f"10.0.0.1:{d.port}"):
            got = httpx.post(d.base + "/p/0/loop/demo/approve", data=fields, cookies=cookies,
                             headers={"Host": host}, follow_redirects=False)
            assert got.status_code == 403, host
            assert httpx.get(d.base + "/", headers={"Host": host}).status_code == 403
        # A cross-site form post carries the browser's Origin: refused as well.
        got = httpx.post(d.base + "/p/0/loop/demo/approve", data=fields, cookies=cookies,
                         headers={"Origin": "http://evil.example"}, follow_redirects=False)
        assert got.status_code == 403
    assert (p.root / ".automaton" / "loops" / "demo" / ".state.loop").read_bytes() == before


def test_the_loops_view_refreshes_while_loops_change(tmp_path: Path) -> None:
    p = halted_project(tmp_path / "proj")
    with dashboard(tmp_path / "proj", approver=None) as d, chrome() as driver:
        driver.get(d.base + "/")
        assert row(driver, "other").get_attribute("data-status") == "running"  # type: ignore[attr-defined]
        for score in (0.1, 0.2):  # the way a tick records itself, seen by the open page
            tick(p, score, {"implement": 0.1}, name="other")
        loops.update_state(p, "other", via_json("HALT", {"reason": "verifier_failed", "detail": "x"},
                           lambda s: s.update(status="halted", halt_reason="verifier_failed", halt_detail="x")))
        wait_for(driver, lambda drv: row(drv, "other").get_attribute("data-status") == "halted",  # type: ignore[attr-defined]
                 timeout=8)
        assert "verifier_failed" in row(driver, "other").text  # type: ignore[attr-defined]


class _Recorder(http.server.BaseHTTPRequestHandler):
    """Another local web server: it keeps the Cookie header of every request it gets."""

    seen: ClassVar[list[str]] = []

    def do_GET(self) -> None:  # the http.server name
        self.seen.append(self.headers.get("Cookie", ""))
        body = b"<!doctype html><title>another local app</title><p>hello</p>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # quiet: the test reads `seen`
        pass


def test_a_session_cookie_another_local_port_receives_cannot_act(tmp_path: Path) -> None:
    # Browsers send a host's cookies to every port of it: any other server on 127.0.0.1 the
    # logged-in browser visits receives the session cookie. Replayed with every field the pages
    # show (CSRF token, review binding), it is refused: the form key never leaves the browser.
    p = halted_project(tmp_path / "proj")
    before = (p.root / ".automaton" / "loops" / "demo" / ".state.loop").read_bytes()
    _Recorder.seen = []
    other = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), _Recorder)
    threading.Thread(target=other.serve_forever, daemon=True).start()
    try:
        with dashboard(tmp_path / "proj") as d, chrome() as driver:
            key = log_in(driver, d)
            driver.get(f"http://127.0.0.1:{other.server_address[1]}/")
            assert "another local app" in driver.title
            stolen = dict(part.strip().split("=", 1) for part in _Recorder.seen[-1].split(";") if "=" in part)
            name = f"automaton_dashboard_{d.port}"
            assert name in stolen, _Recorder.seen  # the cookie did go to the other port
            assert key not in _Recorder.seen[-1]
            thief = httpx.Client(base_url=d.base, cookies={name: stolen[name]}, follow_redirects=False)
            page = thief.get("/p/0/loop/demo/approve").text
            assert 'data-session="yes"' in page and key not in page
            fields = dict(re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)"',
                                     page.split('id="approve-form"', 1)[1].split("</form>", 1)[0]))
            assert fields["csrf"] and fields["seen_mac"] and fields["key"] == ""
            for forged in ("", fields["csrf"]):
                got = thief.post("/p/0/loop/demo/approve", data={**fields, "key": forged})
                assert got.status_code == 403 and "nothing changed" in got.text
            assert thief.post("/p/0/loop/demo/pause", data={**fields, "key": ""}).status_code == 403
            assert (p.root / ".automaton" / "loops" / "demo" / ".state.loop").read_bytes() == before
            # The browser that logged in still acts: its script adds the key to the form.
            driver.get(d.base + "/p/0/loop/demo/approve")
            driver.find_element(By.ID, "confirm-approve").click()
            wait_for(driver, lambda drv: drv.find_element(By.ID, "loop-status").text.strip().startswith("running"))
    finally:
        other.shutdown()
        other.server_close()


def test_logging_out_forgets_the_form_key_and_ends_the_session(tmp_path: Path) -> None:
    halted_project(tmp_path / "proj")
    with dashboard(tmp_path / "proj") as d, chrome() as driver:
        log_in(driver, d)
        driver.get(d.base + "/p/0/loop/other")
        driver.find_element(By.ID, "pause").click()  # a form posted with the key from localStorage
        wait_for(driver, lambda drv: drv.find_element(By.ID, "loop-status").text.strip().startswith("paused"))
        driver.find_element(By.ID, "logout").click()
        wait_for(driver, lambda drv: drv.find_elements(By.CSS_SELECTOR, 'body[data-session="no"]'))
        assert driver.execute_script(f"return window.localStorage.getItem('{KEY_STORE}')") is None
