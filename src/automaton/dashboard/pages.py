"""Rendering: the Jinja2 environment (autoescape on for every template), the packaged static
files, and the site every page is rendered for."""

from __future__ import annotations

import sys
import traceback
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from markupsafe import Markup
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from automaton.commands.human import Human
from automaton.core.errors import one_line
from automaton.dashboard.auth import Gate
from automaton.dashboard.remote import RemoteView
from automaton.store.layout import Project

HERE = Path(__file__).parent
STATIC = {"dashboard.css": "text/css; charset=utf-8", "dashboard.js": "text/javascript; charset=utf-8"}


# Characters that make a page read other than the text is: control characters (ESC, NUL, BEL
# ...), invisible format characters (bidi overrides and isolates such as U+202E and U+2066,
# zero-width joiners), line and paragraph separators, lone surrogates.
_UNSAFE = frozenset(("Cc", "Cf", "Cs", "Zl", "Zp"))


def _escape(c: str) -> str:
    return f"\\u{ord(c):04x}" if ord(c) <= 0xFFFF else f"\\U{ord(c):08x}"


def _neutral_line(line: str, keep: str) -> str:
    if line.isprintable():  # the common case, in C
        return line
    return "".join(_escape(c) if c not in keep and unicodedata.category(c) in _UNSAFE else c for c in line)


def neutral(value: object) -> object:
    """Every `{{ ... }}` of every template goes through this (the environment's `finalize`): a
    text from the agent's files, git, logs or state keeps its line breaks and tabs, and every
    other unsafe character is escaped as `\\uXXXX`, so no template can forget it. Markup (the
    SVG plots, built and escaped here) and non-text values pass as they are."""
    if not isinstance(value, str) or isinstance(value, Markup):
        return value
    if value.isprintable():
        return value
    value = value.replace("\r\n", "\n")  # a CRLF log reads the same without its CRs
    return "\n".join(_neutral_line(line, "\t") for line in value.split("\n"))


def shown(text: object) -> str:
    """`text` as one line that reads as written: line breaks escaped (`\\n`) as well as what
    `neutral` escapes, for a value shown inline (a halt detail, a diff line, a verdict)."""
    return _neutral_line(one_line(str(text)), "\t")


def environment() -> Environment:
    """The Jinja2 environment of the templates (autoescape on for all, every value through
    `neutral`), each compiled now."""
    env = Environment(loader=FileSystemLoader(str(HERE / "templates")), autoescape=True, undefined=StrictUndefined,
                      trim_blocks=True, lstrip_blocks=True, finalize=neutral)
    env.filters["shown"] = shown
    for name in env.list_templates():
        env.get_template(name)
    return env


@dataclass
class Site:
    """What the dashboard serves: its projects (URLs carry the index), the port it answers on,
    the Gate of its sessions, the Human acts are logged for (None: read-only) and why it is
    read-only (None when a human started it). `remotes`: project index -> the state remote
    whose loops that project shows (`--state-remote`; its project is the view's private
    folder of verified states, swapped on each refresh that sees a change)."""

    projects: list[Project]
    port: int
    gate: Gate
    human: Human | None
    read_only_reason: str | None
    env: Environment = field(default_factory=environment)
    static: dict[str, bytes] = field(default_factory=dict)
    remotes: dict[int, RemoteView] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in STATIC:
            self.static[name] = (HERE / "static" / name).read_bytes()

    @property
    def cookie(self) -> str:
        """The session cookie's name. Cookies do not tell ports apart: one name per port keeps
        two dashboards (and other local services) from reading each other's session."""
        return f"automaton_dashboard_{self.port}"

    def refresh(self) -> list[str]:
        """Refresh every state remote (each at most once per its `every_s`) and point its
        project index at its newest folder; the banner lines of those whose refresh failed."""
        banners: list[str] = []
        for i, view in self.remotes.items():
            view.refresh()
            if view.project is not None:
                self.projects[i] = view.project
            if view.error:
                banners.append(f"state remote {view.remote!r}: {view.error}")
        return banners

    def sid(self, request: Request) -> str | None:
        """The session of this request (None: a read-only viewer)."""
        return self.gate.session(request.cookies.get(self.cookie))

    def render(self, request: Request, template: str, status: int = 200, **context: Any) -> HTMLResponse:
        sid = self.sid(request)
        reason = ("log in with the one-time URL printed where the dashboard was started" if self.gate.writable
                  else self.read_only_reason or "read-only")
        base = {"session": sid is not None, "csrf": self.gate.csrf(sid) if sid else "", "read_only_reason": reason,
                "projects": [p.root.name for p in self.projects]}
        html = self.env.get_template(template).render({**base, **context})
        return HTMLResponse(html, status_code=status)

    def message(self, request: Request, status: int, title: str, text: str, back: str = "/") -> HTMLResponse:
        return self.render(request, "message.html", status, title=title, text=text, back=back)

    def crashed(self, request: Request, exc: BaseException) -> Response:
        """A one-line 500 page; the traceback goes to stderr (never to the page)."""
        print(f"automaton dashboard: internal error on {request.method} {request.url.path}:", file=sys.stderr)
        traceback.print_exception(exc, file=sys.stderr)
        try:
            return self.message(request, 500, "internal error",
                                f"internal error: {type(exc).__name__}; the traceback is on the dashboard's stderr")
        except Exception:  # the template itself failed: still one line, still no traceback
            return HTMLResponse("<!doctype html><p>500: internal error</p>\n", status_code=500)
