"""`--dashboard [--port N] [--host H] [--project P ...] [--state-remote REMOTE]`: start the local web dashboard.

The dashboard package (starlette, uvicorn, jinja2) is imported here, inside the adapter, so no
other verb (the hook path above all) pays for it. The web stack is the `dashboard` extra
(pyproject.toml): without it `--dashboard` exits 2 with one line naming the extra.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys

from automaton.cli.parser import UsageError
from automaton.core.errors import BadInput
from automaton.core.outcome import Outcome

DEFAULT_PORT = 8765
# Import names of the `dashboard` extra's packages the dashboard runs on (python-multipart,
# the fourth, is only starlette's form parser, which the dashboard never calls).
WEB_STACK = ("starlette", "uvicorn", "jinja2")
EXTRA = "pip install 'automaton-framework[dashboard]'"


def require_web_stack() -> None:
    """BadInput (exit 2, one line naming the extra) when a package of WEB_STACK is not installed."""
    missing = [name for name in WEB_STACK if importlib.util.find_spec(name) is None]
    if missing:
        raise BadInput(f"--dashboard needs the web stack ({', '.join(missing)} not installed): {EXTRA}")


def _port(text: str | None) -> int:
    if text is None:
        return DEFAULT_PORT
    try:
        port = int(text)
    except ValueError:
        raise UsageError(f"--port {text!r} is not a port number (0 to 65535; 0 picks a free port)") from None
    if not 0 <= port <= 65535:
        raise UsageError(f"--port {port} is not a port number (0 to 65535; 0 picks a free port)")
    return port


def _is_terminal() -> bool:
    """Whether stdout is a terminal (else the login URL, a bearer token, must not go there)."""
    try:
        return sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False


def dashboard(ns: argparse.Namespace) -> Outcome:
    """Check everything (exit 2, one line, for a non-loopback --host, a busy port, a --project
    that is empty or not an automaton project, a bad secret file, a `--state-remote` that is
    misspelt or cannot be read, or without the record key), print the URL (and, for a
    human, the one-time login URL: to a terminal only, else the file it was written to), then
    serve until interrupted."""
    port = _port(ns.port)
    require_web_stack()
    projects = list(getattr(ns.project, "all", None) or ([ns.project] if ns.project is not None else []))
    from automaton.dashboard.server import prepare  # lazy: the `dashboard` extra, checked just above

    server = prepare(projects, "127.0.0.1" if ns.host is None else ns.host, port, terminal=_is_terminal(),
                     state_remote=getattr(ns, "state_remote", None))
    try:
        for line in server.lines:
            print(line, flush=True)
        sys.stdout.flush()
    except BaseException:  # nothing served: the socket and the login file go now
        server.close()
        raise
    server.run()
    return Outcome(lines=["automaton dashboard: stopped"])
