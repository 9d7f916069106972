"""Starting the dashboard: check the input, decide read-only or not, bind, print, serve.

Every check runs before anything is served, each failure one line (exit 2): a `--host` that is
not loopback, a `--project` that is empty or not an automaton project, a secret file others can
read (or not a regular file), a busy port. The socket is bound here (so a busy port is an error
naming it, and `--port 0` gets a free one whose number the Host check and the printed URL use),
then handed to uvicorn. With `--state-remote REMOTE` (one project: the checkout whose git
remote it names) the remote is read once before anything is bound (`remote.open_view`: a bad
spelling, no record key, or a remote git cannot reach is one line, exit 2), and its loops are
served as one more project.

The printed URLs name the literal address bound (`127.0.0.1` or `[::1]`), never `localhost`: a
browser may try `::1` first for that name, and another program listening there would receive
the login token. The login URL goes to the terminal only: when stdout is not one (`nohup`, a
log file an agent may read), it is written to `auth.login_path()` instead (mode 0600, in the
folder every agent sandbox hides) and only that path is printed; the file is removed when the
dashboard stops.
"""

from __future__ import annotations

import getpass
import signal
import socket
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import uvicorn

from automaton.commands.human import Human, require_human
from automaton.core.errors import BadInput, Refused
from automaton.dashboard.app import create_app
from automaton.dashboard.auth import TOKEN_TTL_S, Gate, SecretHidden, human_gate, remove_login, write_login
from automaton.dashboard.pages import Site, environment
from automaton.dashboard.remote import RemoteView, open_view
from automaton.store.layout import Project

# --host value -> (the address bound, its family); URLs name the address itself (see above)
LOOPBACK = {"127.0.0.1": ("127.0.0.1", socket.AF_INET), "localhost": ("127.0.0.1", socket.AF_INET),
            "::1": ("::1", socket.AF_INET6), "[::1]": ("::1", socket.AF_INET6)}


@dataclass
class Server:
    """A dashboard ready to serve: `lines` to print first, `run()` serves until interrupted (then
    `close()`s). `app` is the ASGI app and `site` what it serves, for an in-process client.
    `login_file`: where the login URL was written (stdout not a terminal), else None."""

    lines: list[str]
    run: Callable[[], None]
    url: str
    app: Any
    site: Any
    sock: socket.socket
    login_file: Path | None = None
    login_url: str = ""
    remote: RemoteView | None = None

    def close(self) -> None:
        """Close the socket and remove the login file this dashboard wrote (if still its own),
        and the state remote's private folders."""
        self.sock.close()
        if self.remote is not None:
            self.remote.close()
        if self.login_file is not None:
            remove_login(self.login_file, self.login_url)


def url_host(address: str) -> str:
    """How a URL names the bound `address`: the literal address, bracketed for IPv6."""
    return f"[{address}]" if ":" in address else address


def projects_of(given: list[str]) -> list[Project]:
    """The projects to serve: each `--project` (in order, once each), default the current
    directory's. BadInput for a path that is not a folder or not an automaton project."""
    found: list[Project] = []
    args: list[str | None] = list(given) or [None]
    for arg in args:
        if arg is not None and not arg.strip():
            raise BadInput(f"--project {arg!r} is empty: pass the project folder (omit --project for the current"
                           " directory's project)")
        project = Project.at(arg)
        if not (project.dot.is_dir() or project.tasks_dir.is_dir()):
            where = f"--project {arg!r}" if arg is not None else f"the current directory's project {project.root}"
            raise BadInput(f"{where} is not an automaton project (it has no .automaton/ or tasks/ folder): pass"
                           " --project DIR for a project automaton manages")
        if project not in found:
            found.append(project)
    return found


def _human() -> tuple[Human | None, str | None]:
    """(the Human acts are logged for, None) when a human starts the dashboard, else (None, why)."""
    try:
        require_human("--dashboard approvals")
    except Refused as exc:
        return None, exc.message
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = "unknown-user"
    return Human(user, "dashboard"), None


def check_host(host: str) -> None:
    """BadInput (exit 2) unless `host` is a loopback name the dashboard may bind."""
    if host not in LOOPBACK:
        raise BadInput(f"--host {host!r} is not loopback: the dashboard serves only this machine; use 127.0.0.1,"
                       " localhost or ::1")


def bind(host: str, port: int) -> socket.socket:
    """A socket bound to loopback `host`:`port` (0: a free port), not yet listening. BadInput for
    a host that is not loopback, or a port that is busy or may not be used."""
    check_host(host)
    address, family = LOOPBACK[host]
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((address, port))  # uvicorn listens: nothing connects before it serves
    except OSError as exc:
        sock.close()
        raise BadInput(f"port {port} on {host} cannot be used ({exc.strerror or exc}): another program (or"
                       " dashboard) has it; pass --port N, or --port 0 for a free one") from None
    return sock


def _start_gate() -> tuple[Gate, Human | None, str | None, str]:
    """The Gate, the Human acts are logged for, why the dashboard is read-only (None: it is not)
    and the line that says so: read-only when no human starts it, or when the kernel sandbox
    hides the secret (an agent's session: the human passed, the sandbox around them did not)."""
    human, why = _human()
    if human is None:
        return Gate(None), None, why, ("read-only: approvals from the page need the human who started it at a"
                                       f" terminal ({why})")
    try:
        return human_gate(), human, None, ""
    except SecretHidden as exc:
        return Gate(None), None, exc.message, f"read-only: {exc.message}"


def _remote_view(projects: list[Project], state_remote: str | None) -> RemoteView | None:
    if state_remote is None:
        return None
    if len(projects) != 1:
        raise BadInput(f"--state-remote {state_remote!r} reads the remote through one checkout: pass one --project"
                       f" (the clone whose git remote it names), not {len(projects)}")
    return open_view(projects[0], state_remote)


def prepare(given: list[str], host: str, port: int, *, terminal: bool = True,
            state_remote: str | None = None) -> Server:
    """Everything before serving (see the module docstring); BadInput (exit 2) on bad input.
    `terminal`: whether the lines go to a terminal (else the login URL goes to a file).
    `state_remote`: `--state-remote`, whose loops are served as one more project."""
    check_host(host)
    projects = projects_of(given)
    gate, human, why, read_only = _start_gate()
    env = environment()  # every template compiled before the port is taken and the URL printed
    view = _remote_view(projects, state_remote)
    try:
        sock = bind(host, port)
    except BaseException:
        if view is not None:
            view.close()
        raise
    port = sock.getsockname()[1]
    try:
        site = Site(projects, port, gate, human, why, env)
        if view is not None and view.project is not None:
            site.remotes[len(projects)] = view
            projects.append(view.project)
        app = create_app(site)
    except BaseException:
        sock.close()
        if view is not None:
            view.close()
        raise
    base = f"http://{url_host(LOOPBACK[host][0])}:{port}"
    served = [str(p.root) for i, p in enumerate(projects) if i not in site.remotes]
    lines = [f"automaton dashboard: {base}/ serving {', '.join(served)} (Ctrl-C stops it)"]
    if view is not None:
        bad = sum(1 for found in view.loops.values() if found.problem)
        lines.append(f"state remote {view.remote!r}: {len(view.loops)} loop(s), {bad} of them not verified"
                     f" (shown as tampered); read again at most every {view.every_s:.0f} s")
    login_file, login_url = None, ""
    if human is not None:
        login_url = f"{base}/login?token={gate.issue_token()}"
        once = f"it works once, for {TOKEN_TTL_S / 60:.0f} minutes"
        if terminal:
            lines.append(f"log in to act from the page (this URL works once, for {TOKEN_TTL_S / 60:.0f} minutes):"
                         f" {login_url}")
        else:
            try:
                login_file = write_login(login_url)
            except BaseException:
                server_close(sock, view)
                raise
            lines.append(f"log in to act from the page: open the URL in {login_file} ({once}; it is not printed"
                         " because this output is not a terminal)")
    else:
        lines.append(read_only)
    server = Server(lines, lambda: None, f"{base}/", app, site, sock, login_file, login_url, view)

    def run() -> None:
        config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off", proxy_headers=False,
                                server_header=False, ws="none")  # no websocket: the Guard checks HTTP only
        _close_on_signals(server.close)
        try:
            uvicorn.Server(config).run(sockets=[sock])
        finally:
            server.close()

    server.run = run
    return server


def server_close(sock: socket.socket, view: RemoteView | None) -> None:
    sock.close()
    if view is not None:
        view.close()


def _close_on_signals(close: Callable[[], None]) -> None:
    """Run `close` (it removes the login file) on SIGTERM and SIGHUP too, then die of the signal
    as before. uvicorn stops on SIGTERM, then raises it again with the handler it found, which
    would kill the process before any `finally`. A signal the caller ignores (nohup) stays so."""
    def handler(signum: int, frame: object) -> None:
        close()
        signal.signal(signum, signal.SIG_DFL)
        signal.raise_signal(signum)

    for name in ("SIGTERM", "SIGHUP"):
        sig = getattr(signal, name, None)
        if sig is None or signal.getsignal(sig) != signal.SIG_DFL:
            continue
        try:
            signal.signal(sig, handler)
        except ValueError:  # not the main thread (an embedding caller): its own signals, its own cleanup
            return
