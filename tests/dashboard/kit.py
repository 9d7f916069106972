"""Helpers of the dashboard tests: an in-process client (Starlette's TestClient over httpx) that
does what dashboard.js does with the form key, a logged-in session, projects with loops in every
state, and the hidden fields of a page's form."""

from __future__ import annotations

import getpass
import html
import re
import warnings
from pathlib import Path
from typing import Any

from automaton.commands.human import Human
from automaton.commands.loop_gate import check_gate
from automaton.dashboard.app import create_app
from automaton.dashboard.auth import Gate, human_gate
from automaton.dashboard.pages import Site
from automaton.store import loops
from automaton.store.layout import Project
from tests.commands.loopkit import loop_with, tick

with warnings.catch_warnings():  # Starlette 1.x asks for httpx2; the TestClient still runs on httpx
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient

PORT = 8765
BASE = f"http://127.0.0.1:{PORT}"
SCORES = (0.25, None, 0.5, 0.75)  # four ticks, three scored
USER = getpass.getuser()


class Clock:
    """A monotonic clock the test moves (seconds)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def site(*projects: Project, human: bool = True, clock: Clock | None = None) -> Site:
    """A Site as `automaton --dashboard` builds it: started by a human (`auth.human_gate`: the
    secret is loaded, the sessions are keyed by this process; acts are logged for the OS user
    via the dashboard), or read-only."""
    gate = human_gate(clock or Clock()) if human else Gate(None, clock or Clock())
    return Site(list(projects), PORT, gate, Human(USER, "dashboard") if human else None,
                None if human else "--dashboard approvals is a human sign-off: run it from a terminal")


class Browser(TestClient):
    """A TestClient that keeps the form key the login page handed over (`key`, as dashboard.js
    keeps it in localStorage) and puts it into every form it posts that has no key of its own."""

    key: str | None = None

    def post(self, url: Any, *args: Any, data: Any = None, **kwargs: Any) -> Any:  # type: ignore[override]
        if isinstance(data, dict) and self.key and not data.get("key"):
            data = {**data, "key": self.key}
        return super().post(url, *args, data=data, **kwargs)


def client(s: Site, base: str = BASE) -> Browser:
    return Browser(create_app(s), base_url=base, follow_redirects=False, raise_server_exceptions=False)


LOGIN_KEY = re.compile(r'<body data-session="yes" data-key="([0-9a-f]{64})" data-next="/">')


def login(s: Site, c: Browser) -> str:
    """Log `c` in with a fresh one-time token, as the printed URL does; the form key the login
    page handed over (kept in `c.key`, as dashboard.js keeps it)."""
    got = c.get(f"/login?token={s.gate.issue_token()}")
    assert got.status_code == 200, got.text
    assert s.cookie in got.cookies or s.cookie in c.cookies
    found = LOGIN_KEY.search(got.text)
    assert found is not None, got.text
    c.key = found.group(1)
    return c.key


def hidden(page: str, form_id: str) -> dict[str, str]:
    """The hidden fields of the form `form_id` on `page`."""
    found = re.search(rf'<form[^>]*id="{re.escape(form_id)}"[^>]*>(.*?)</form>', page, re.S)
    assert found is not None, f"no form {form_id!r} on the page"
    return {k: html.unescape(v) for k, v in re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)"',
                                                         found.group(1))}


def halted(root: Path, name: str = "demo") -> Project:
    """Loop `name` halted by its iteration brake after four ticks (three scored)."""
    p = loop_with(root, name, brakes={"max_iterations": len(SCORES)})
    for score in SCORES:
        tick(p, score, {"implement": 0.1, "verify": 0.0}, name=name)
    out = check_gate(p, name)
    assert out.data is not None and out.data["halt_reason"] == "iterations_exhausted", out.data
    return p


def state(p: Project, name: str = "demo") -> dict[str, Any]:
    return loops.read_state(p, name)


def last_line(p: Project, name: str = "demo") -> str:
    return (p.root / ".automaton" / "loops" / name / ".state.log").read_text().splitlines()[-1]
