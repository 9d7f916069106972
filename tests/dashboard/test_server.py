"""`automaton --dashboard`: bad input is one line and exit 2 before anything is served; a human
start prints a one-time login URL, any other start says it is read-only; a real process serves."""

from __future__ import annotations

import os
import re
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from automaton.core.errors import BadInput
from automaton.dashboard.auth import login_path, secret_path
from automaton.dashboard.server import prepare
from tests.commands.loopkit import loop_with
from tests.helpers import init_repo, run_cli, run_exe


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = init_repo(tmp_path / "proj")
    loop_with(root, "demo")
    return root


@pytest.fixture
def busy() -> Iterator[int]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        yield int(s.getsockname()[1])


def _one_line_exit_2(args: list[str], *, cwd: Path | None = None, match: str) -> str:
    got = run_cli("--dashboard", *args, cwd=cwd)
    assert got.code == 2, (got.out, got.err)
    assert got.err.count("\n") == 1 and "Traceback" not in got.err and re.search(match, got.err), got.err
    return got.err


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.10", "example.com", "::", ""])
def test_a_host_that_is_not_loopback_is_refused(root: Path, host: str) -> None:
    _one_line_exit_2(["--host", host, "--project", str(root)], match="is not loopback")


def test_a_busy_port_names_the_port_and_the_flag(root: Path, busy: int) -> None:
    err = _one_line_exit_2(["--port", str(busy), "--project", str(root)], match=f"port {busy} ")
    assert "--port" in err


@pytest.mark.parametrize("port", ["abc", "-1", "65536", "8.5"])
def test_a_bad_port_is_a_usage_error(root: Path, port: str) -> None:
    _one_line_exit_2(["--port", port, "--project", str(root)], match="--port")


def test_a_project_that_is_not_a_folder_or_not_automatons_is_refused(tmp_path: Path, root: Path) -> None:
    _one_line_exit_2(["--project", str(tmp_path / "missing")], match="is not a directory")
    plain = tmp_path / "plain"
    plain.mkdir()
    _one_line_exit_2(["--project", str(root), "--project", str(plain)], match="not an automaton project")
    _one_line_exit_2([], cwd=plain, match="not an automaton project")


def test_port_and_host_go_only_with_the_dashboard(root: Path) -> None:
    got = run_cli("--loop-list", "--port", "1", "--project", str(root))
    assert got.code == 2 and "--port does not go with --loop-list" in got.err


def test_a_secret_others_may_read_stops_a_human_start(root: Path, approver: str) -> None:
    secret_path().parent.mkdir(parents=True, mode=0o700, exist_ok=True)
    secret_path().write_text("a" * 64 + "\n")
    secret_path().chmod(0o644)
    _one_line_exit_2(["--port", "0", "--project", str(root)], match="chmod 600")


def test_a_human_start_prints_a_login_url_and_makes_the_secret(root: Path, approver: str) -> None:
    server = prepare([str(root), str(root)], "127.0.0.1", 0)
    try:
        port = server.sock.getsockname()[1]
        assert server.url == f"http://127.0.0.1:{port}/" and len(server.site.projects) == 1
        assert re.search(rf"http://127\.0\.0\.1:{port}/login\?token=[A-Za-z0-9_-]{{40,}}", server.lines[1])
        assert oct(secret_path().stat().st_mode & 0o777) == "0o600"
        assert server.site.human is not None and server.site.human.via == "dashboard"
    finally:
        server.close()


def test_a_start_without_a_human_is_read_only_and_says_why(root: Path) -> None:
    server = prepare([str(root)], "localhost", 0)
    try:
        assert server.url.startswith("http://127.0.0.1:")
        assert "read-only" in server.lines[1] and "human sign-off" in server.lines[1]
        assert "token" not in " ".join(server.lines) and not secret_path().exists()
        assert server.site.human is None and not server.site.gate.writable
    finally:
        server.close()


def _serve(root: Path, stdout: Any, **env: str) -> subprocess.Popen[str]:
    exe = str(Path(sys.executable).parent / "automaton")
    return subprocess.Popen([exe, "--dashboard", "--port", "0", "--project", str(root)], stdin=subprocess.DEVNULL,
                            stdout=stdout, stderr=subprocess.PIPE, text=True, env={**os.environ, **env})


def _answers(base: str) -> httpx.Response:
    deadline = time.monotonic() + 20
    while True:
        try:
            return httpx.get(base + "/", timeout=2)
        except httpx.TransportError:
            assert time.monotonic() < deadline
            time.sleep(0.05)


def _stop(proc: subprocess.Popen[str]) -> None:
    proc.terminate()
    proc.wait(timeout=10)
    assert proc.returncode in (0, -15)


def test_the_console_script_serves_and_stops(root: Path) -> None:
    proc = _serve(root, subprocess.PIPE, AUTOMATON_APPROVER="tester")
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        found = re.search(r"(http://127\.0\.0\.1:\d+)/ serving", first)
        assert found, first + (proc.stderr.read() if proc.poll() is not None and proc.stderr else "")
        base = found.group(1)
        second = proc.stdout.readline()
        page = _answers(base)
        assert page.status_code == 200 and 'data-loop="demo"' in page.text
        if "read-only" not in second:  # a process table that shows an agent above the test makes it read-only
            url = login_path().read_text().strip()
            got = httpx.get(url, follow_redirects=False)
            assert got.status_code == 200 and "HttpOnly" in got.headers["set-cookie"]
        assert httpx.get(base + "/", headers={"Host": "evil.example"}).status_code == 403
    finally:
        _stop(proc)


def test_output_that_is_not_a_terminal_never_holds_the_token(root: Path, tmp_path: Path) -> None:
    # `nohup automaton --dashboard &` in the project writes ./nohup.out, which an agent in the
    # project can read: the login URL goes to a 0600 file in the folder the sandbox hides.
    out = tmp_path / "nohup.out"
    with out.open("w") as sink:
        proc = _serve(root, sink, AUTOMATON_APPROVER="tester")
        try:
            deadline = time.monotonic() + 20
            while "\n" not in out.read_text().partition("\n")[2] and proc.poll() is None:
                assert time.monotonic() < deadline, out.read_text()
                time.sleep(0.05)
            printed = out.read_text()
            if "read-only" in printed:
                pytest.skip("the process table shows an agent above the test: the dashboard starts read-only")
            assert "token" not in printed and f"open the URL in {login_path()}" in printed, printed
            base = re.search(r"(http://127\.0\.0\.1:\d+)/ serving", printed).group(1)  # type: ignore[union-attr]
            assert stat.S_IMODE(login_path().stat().st_mode) == 0o600
            url = login_path().read_text().strip()
            assert re.fullmatch(rf"{re.escape(base)}/login\?token=[A-Za-z0-9_-]{{40,}}", url), url
            _answers(base)
            got = httpx.get(url, follow_redirects=False)
            assert got.status_code == 200 and "HttpOnly" in got.headers["set-cookie"]
            assert httpx.get(url, follow_redirects=False).status_code == 403  # once
        finally:
            _stop(proc)
    assert not login_path().exists()  # removed when the dashboard stops
    assert "token" not in out.read_text()


def test_the_login_file_is_replaced_whole_and_removed_only_while_it_is_ours(root: Path, approver: str) -> None:
    first = prepare([str(root)], "127.0.0.1", 0, terminal=False)
    second = prepare([str(root)], "127.0.0.1", 0, terminal=False)
    try:
        assert first.login_file == second.login_file == login_path()
        assert login_path().read_text().strip() == second.login_url != first.login_url
        assert "token" not in " ".join(first.lines + second.lines)
        first.close()  # a later dashboard's URL stays
        assert login_path().read_text().strip() == second.login_url
        assert [p.name for p in login_path().parent.iterdir() if p.name.startswith(".dashboard-login")] == []
    finally:
        first.close()
        second.close()
    assert not login_path().exists()


@pytest.mark.parametrize(("host", "literal"), [("localhost", "127.0.0.1"), ("127.0.0.1", "127.0.0.1"),
                                               ("::1", "[::1]"), ("[::1]", "[::1]")])
def test_the_printed_urls_name_the_address_bound_never_a_name(root: Path, approver: str, host: str,
                                                              literal: str) -> None:
    # A browser may try ::1 first for `localhost`; a program listening there would get the token.
    try:
        server = prepare([str(root)], host, 0)
    except BadInput as exc:
        if literal == "[::1]" and "cannot be used" in exc.message:
            pytest.skip("no IPv6 loopback here")
        raise
    try:
        port = server.sock.getsockname()[1]
        assert server.sock.getsockname()[0] == literal.strip("[]")
        assert server.url == f"http://{literal}:{port}/"
        assert re.search(rf"http://{re.escape(literal)}:{port}/login\?token=", server.lines[1]), server.lines
        assert "localhost" not in " ".join(server.lines)
    finally:
        server.close()


def test_an_empty_project_is_refused_not_taken_for_the_current_directory(root: Path) -> None:
    _one_line_exit_2(["--project", ""], cwd=root, match="--project '' is empty")
    _one_line_exit_2(["--project", str(root), "--project", " "], cwd=root, match="is empty")


@pytest.mark.parametrize("kind", ["directory", "fifo", "symlink"])
def test_a_secret_that_is_not_a_file_stops_the_start_in_one_line(root: Path, kind: str) -> None:
    path = secret_path()
    path.parent.mkdir(parents=True, mode=0o700, exist_ok=True)
    if kind == "directory":
        path.mkdir()
    elif kind == "fifo":
        os.mkfifo(path, 0o600)
    else:
        path.symlink_to(tmp := path.with_name("other"))
        tmp.write_text("a" * 64 + "\n")
    # A real process: a FIFO opened without O_NONBLOCK would hang it (the timeout would say so).
    done = run_exe("automaton", "--dashboard", "--port", "0", "--project", str(root),
                   env={**os.environ, "AUTOMATON_APPROVER": "tester"}, timeout=30)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert "not the dashboard secret" in done.stderr and "fix: move it away" in done.stderr


def test_inside_the_sandbox_a_human_start_is_read_only_and_says_why(root: Path) -> None:
    from automaton.dashboard.auth import load_secret

    load_secret()  # the human used the dashboard before: the secret exists, mode 0600
    exe = str(Path(sys.executable).parent / "automaton")
    proc = subprocess.Popen([exe, "--sandbox", "--project", str(root), "--", exe, "--dashboard", "--port", "0",
                             "--project", str(root)], cwd=root, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "AUTOMATON_APPROVER": "tester"})
    try:
        assert proc.stdout is not None
        first, second = proc.stdout.readline(), proc.stdout.readline()
        if not first:
            err = proc.stderr.read() if proc.stderr else ""
            if "sandbox" in err and "not" in err and proc.wait() == 2 and "Landlock" in err:
                pytest.skip(f"no kernel sandbox here: {err.strip()}")
            raise AssertionError(err)
        assert "serving" in first, first
        # Either reason holds inside the sandbox: the secret is hidden from it, and the session's
        # supervisor (an ancestor outside the sandbox) shows no readable environment.
        hidden = second.startswith("read-only: the dashboard secret") and "kernel sandbox" in second
        unknown_ancestor = second.startswith("read-only: approvals from the page need the human") and (
            "cannot be read, so an agent above it cannot be ruled out" in second)
        assert hidden or unknown_ancestor, second
        assert "chmod" not in second and "token" not in first + second
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_the_guard_refuses_a_websocket_and_never_reaches_the_app() -> None:
    """Only HTTP passes the Host, Origin and body checks: a websocket scope is closed by the
    guard itself, whatever the server's config allows."""
    import asyncio

    from automaton.dashboard.guard import Guard

    reached: list[str] = []

    async def app(scope: dict, receive: object, send: object) -> None:  # type: ignore[type-arg]
        reached.append(scope["type"])

    sent: list[dict] = []  # type: ignore[type-arg]

    async def send(message: dict) -> None:  # type: ignore[type-arg]
        sent.append(message)

    async def receive() -> dict:  # type: ignore[type-arg]
        return {"type": "websocket.connect"}

    scope = {"type": "websocket", "path": "/", "headers": [(b"host", b"127.0.0.1:8765")]}
    asyncio.run(Guard(app, 8765)(scope, receive, send))  # type: ignore[arg-type]
    assert reached == [] and sent == [{"type": "websocket.close", "code": 1008}]
    asyncio.run(Guard(app, 8765)({"type": "lifespan"}, receive, send))  # type: ignore[arg-type]
    assert reached == ["lifespan"]
