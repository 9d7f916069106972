"""The secret, the one-time login token, sessions, CSRF and the Host/Origin guard."""

from __future__ import annotations

import hashlib
import hmac
import os
import stat
from pathlib import Path

import pytest

from automaton.core.errors import BadInput
from automaton.dashboard.auth import SESSION_TTL_S, TOKEN_TTL_S, Gate, load_secret, secret_path
from automaton.store.layout import Project
from tests.dashboard.kit import PORT, Clock, client, halted, hidden, login, site, state
from tests.helpers import init_repo


@pytest.fixture
def proj(tmp_path: Path) -> Project:
    init_repo(tmp_path / "proj")
    return halted(tmp_path / "proj")


def test_the_secret_is_made_once_private_and_beside_the_key(forbid_real_home: Path) -> None:
    first = load_secret()
    path = secret_path()
    assert path == forbid_real_home / ".config" / "automaton" / "dashboard.secret"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert len(first) == 32 and load_secret() == first  # kept, not made again


@pytest.mark.parametrize(("mode", "fix"), [(0o640, "chmod 600"), (0o604, "chmod 600")])
def test_a_secret_others_may_read_is_refused_with_the_fix(mode: int, fix: str) -> None:
    load_secret()
    os.chmod(secret_path(), mode)
    with pytest.raises(BadInput, match=fix) as caught:
        load_secret()
    assert "\n" not in caught.value.message


def test_a_secret_that_is_not_one_is_refused() -> None:
    path = secret_path()
    path.parent.mkdir(parents=True, mode=0o700)
    path.write_text("not a secret\n")
    path.chmod(0o600)
    with pytest.raises(BadInput, match="not a dashboard secret"):
        load_secret()


def test_the_login_token_works_once(proj: Project) -> None:
    s = site(proj)
    c = client(s)
    token = s.gate.issue_token()
    first = c.get(f"/login?token={token}")
    assert first.status_code == 200 and 'data-next="/"' in first.text  # dashboard.js goes on to /
    assert first.headers["cache-control"] == "no-store"
    cookie = first.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/" in cookie
    assert 'data-session="yes"' in c.get("/").text
    other = client(s)
    again = other.get(f"/login?token={token}")
    assert again.status_code == 403 and "already used" in again.text and "set-cookie" not in again.headers
    assert 'data-session="no"' in other.get("/").text
    assert client(s).get("/login?token=wrong").status_code == 403
    assert client(s).get("/login").status_code == 403


def test_the_login_token_expires(proj: Project) -> None:
    clock = Clock()
    s = site(proj, clock=clock)
    token = s.gate.issue_token()
    clock.now += TOKEN_TTL_S + 1
    assert client(s).get(f"/login?token={token}").status_code == 403


def test_a_session_expires_and_a_forged_cookie_is_nothing(proj: Project) -> None:
    clock = Clock()
    s = site(proj, clock=clock)
    c = client(s)
    login(s, c)
    value = c.cookies[s.cookie]
    sid, _, mac = value.partition(".")
    forged = client(s)
    forged.cookies.set(s.cookie, f"{sid}.{'0' * len(mac)}")
    assert 'data-session="no"' in forged.get("/").text
    clock.now += SESSION_TTL_S + 1
    assert 'data-session="no"' in c.get("/").text


def test_a_read_only_dashboard_has_no_login_at_all(proj: Project) -> None:
    s = site(proj, human=False)
    with pytest.raises(ValueError):
        s.gate.issue_token()
    c = client(s)
    page = c.get("/")
    assert 'data-session="no"' in page.text and 'id="read-only"' in page.text and "human sign-off" in page.text
    assert c.get("/login?token=x").status_code == 403


def test_logout_ends_the_session_everywhere(proj: Project) -> None:
    s = site(proj)
    c = client(s)
    login(s, c)
    copied = c.cookies[s.cookie]
    logout = hidden(c.get("/").text, "logout-form")
    assert logout["key"] == "" and 'data-logout="yes"' in c.get("/").text  # dashboard.js fills it, then forgets it
    assert c.post("/logout", data=logout).status_code == 303
    stale = client(s)
    stale.cookies.set(s.cookie, copied)
    assert 'data-session="no"' in stale.get("/").text


@pytest.mark.parametrize("host", ["evil.example", f"evil.example:{PORT}", f"127.0.0.1:{PORT + 1}", f"10.0.0.1:{PORT}",
                                  "127.0.0.1"])
def test_a_request_for_another_host_is_refused(proj: Project, host: str) -> None:
    got = client(site(proj)).get("/", headers={"Host": host})
    assert got.status_code == 403
    assert "Host/Origin" in got.text


@pytest.mark.parametrize("base", [f"http://localhost:{PORT}", f"http://127.0.0.1:{PORT}", f"http://[::1]:{PORT}"])
def test_every_loopback_name_with_the_port_is_served(proj: Project, base: str) -> None:
    got = client(site(proj), base).get("/")
    assert got.status_code == 200
    assert "frame-ancestors 'none'" in got.headers["content-security-policy"]
    assert got.headers["x-frame-options"] == "DENY" and got.headers["referrer-policy"] == "same-origin"


def test_a_post_from_another_origin_is_refused_even_with_a_session(proj: Project) -> None:
    s = site(proj)
    c = client(s)
    login(s, c)
    fields = hidden(c.get("/p/0/loop/demo/approve").text, "approve-form")
    for origin in ("http://evil.example", f"http://127.0.0.1:{PORT + 1}", "null"):
        got = c.post("/p/0/loop/demo/approve", data=fields, headers={"Origin": origin})
        assert got.status_code == 403, origin
    assert state(proj).status == "halted"
    ok = c.post("/p/0/loop/demo/approve", data=fields, headers={"Origin": f"http://127.0.0.1:{PORT}"})
    assert ok.status_code == 303 and state(proj).status == "running"


@pytest.mark.parametrize("csrf", [None, "", "0" * 64, "wrong"])
def test_an_act_without_the_csrf_token_is_refused_and_changes_nothing(proj: Project, csrf: str | None) -> None:
    s = site(proj)
    c = client(s)
    login(s, c)
    fields = hidden(c.get("/p/0/loop/demo/approve").text, "approve-form")
    if csrf is None:
        fields.pop("csrf")
    else:
        fields["csrf"] = csrf
    before = (proj.root / ".automaton" / "loops" / "demo" / ".state.loop").read_bytes()
    got = c.post("/p/0/loop/demo/approve", data=fields)
    assert got.status_code == 403 and "nothing changed" in got.text
    assert (proj.root / ".automaton" / "loops" / "demo" / ".state.loop").read_bytes() == before


def test_a_csrf_token_of_another_session_is_refused(proj: Project) -> None:
    s = site(proj)
    mine, theirs = client(s), client(s)
    login(s, mine)
    login(s, theirs)
    fields = hidden(theirs.get("/p/0/loop/demo/approve").text, "approve-form")
    assert mine.post("/p/0/loop/demo/pause", data={"csrf": fields["csrf"]}).status_code == 403
    nobody = client(s)  # the right token, but no session cookie at all
    assert nobody.post("/p/0/loop/demo/approve", data=fields).status_code == 403
    assert state(proj).status == "halted"


def test_a_review_binding_the_page_did_not_issue_is_refused(proj: Project) -> None:
    s = site(proj)
    c = client(s)
    login(s, c)
    fields = hidden(c.get("/p/0/loop/demo/approve").text, "approve-form")
    fields["seen_mac"] = "0" * 64
    got = c.post("/p/0/loop/demo/approve", data=fields)
    assert got.status_code == 403 and "not bound to a review" in got.text
    assert state(proj).status == "halted"


def test_a_gate_without_a_secret_never_accepts_a_session() -> None:
    gate = Gate(None)
    assert not gate.writable and gate.redeem("x") is None and gate.session("a.b") is None


def test_a_cookie_alone_cannot_act_even_with_every_field_of_the_page(proj: Project) -> None:
    # Browsers send a cookie to every port of its host: a server on another port of 127.0.0.1
    # the browser visits gets the session cookie. With it, it can GET any page (the CSRF token
    # and the review binding included) and POST; the form key is what it cannot get.
    s = site(proj)
    mine = client(s)
    login(s, mine)
    thief = client(s)  # the stolen cookie, nothing else
    thief.cookies.set(s.cookie, mine.cookies[s.cookie])
    page = thief.get("/p/0/loop/demo/approve").text
    assert 'data-session="yes"' in page
    fields = hidden(page, "approve-form")
    assert fields["csrf"] and fields["seen_mac"] and fields["key"] == ""
    for key in ("", fields["csrf"], "0" * 64, "é" * 64):
        got = thief.post("/p/0/loop/demo/approve", data={**fields, "key": key})
        assert got.status_code == 403 and "nothing changed" in got.text, key
    loop = hidden(thief.get("/p/0/loop/demo").text, "pause-form")
    assert thief.post("/p/0/loop/demo/pause", data=loop).status_code == 403
    assert thief.post("/logout", data=hidden(thief.get("/").text, "logout-form")).status_code == 403
    assert state(proj).status == "halted"
    assert mine.post("/p/0/loop/demo/approve", data=fields).status_code == 303  # the key holder can
    assert state(proj).status == "running"


def test_a_cookie_and_the_secret_file_together_cannot_act(proj: Project) -> None:
    # A same-user program outside the sandbox that receives the cookie (another server on
    # 127.0.0.1) can also read ~/.config/automaton/dashboard.secret: the CSRF token and the form
    # key are not HMACs under that file, so it still cannot derive them.
    s = site(proj)
    mine = client(s)
    login(s, mine)
    sid = mine.cookies[s.cookie].split(".")[0]
    secret = bytes.fromhex(secret_path().read_text()[:64])

    def mac(text: str) -> str:
        return hmac.new(secret, text.encode(), hashlib.sha256).hexdigest()

    thief = client(s)
    thief.cookies.set(s.cookie, mine.cookies[s.cookie])
    got = thief.post("/p/0/loop/demo/pause", data={"csrf": mac("csrf:" + sid), "key": mac("key:" + sid)})
    assert got.status_code == 403 and state(proj).status == "halted"


def test_the_form_key_is_on_the_login_page_only(proj: Project) -> None:
    (proj.root / ".automaton" / "loops" / "demo" / "runs" / "1").mkdir(parents=True, exist_ok=True)
    s = site(proj)
    c = client(s)
    key = login(s, c)
    assert key == s.gate.key(c.cookies[s.cookie].partition(".")[0]) and key != s.gate.csrf("x")
    for url in ("/", "/fragment/loops", "/tasks", "/p/0/loop/demo", "/fragment/p/0/loop/demo",
                "/p/0/loop/demo/approve", "/p/0/loop/demo/tick/1", "/p/0/loop/nope", "/nowhere",
                "/static/dashboard.js", f"/login?token={s.gate.issue_token()}"):
        got = c.get(url)
        assert key not in got.text and key not in str(got.headers), url
        assert got.headers["cache-control"] == "no-store", url
    refused = c.post("/p/0/loop/demo/pause", data={"csrf": "x"})  # even an error page holds no key
    assert refused.status_code == 403 and key not in refused.text


@pytest.mark.parametrize(("headers", "body", "status"), [
    ({"Content-Type": "multipart/form-data; boundary=x"}, b"--x\r\n" + b"a" * 1000, 415),
    ({"Content-Type": "application/json"}, b"{}", 415),
    ({}, b"csrf=x", 415),
    ({"Content-Type": "application/x-www-form-urlencoded"}, b"csrf=" + b"a" * (64 * 1024), 413),
])
def test_a_post_body_that_is_not_a_small_form_is_refused_unread(proj: Project, headers: dict[str, str],
                                                                 body: bytes, status: int) -> None:
    s = site(proj)
    c = client(s)
    login(s, c)
    got = c.post("/p/0/loop/demo/pause", content=body, headers=headers)
    assert got.status_code == status
    assert client(s).post("/p/0/loop/demo/pause", content=body, headers=headers).status_code == status
    assert state(proj).status == "halted"


def test_no_body_is_read_before_the_host_and_the_session_are_checked(proj: Project) -> None:
    import asyncio

    from automaton.dashboard.app import create_app

    s = site(proj)
    app = create_app(s)
    cookie = f"{s.cookie}={s.gate.redeem(s.gate.issue_token())}".encode()

    def post(host: bytes, cookies: bytes, length: bytes = b"10", *more: tuple[bytes, bytes]) -> tuple[int, bool]:
        read = False
        sent: list[dict[str, object]] = []

        async def receive() -> dict[str, object]:
            nonlocal read
            read = True
            return {"type": "http.request", "body": b"csrf=x&k=y", "more_body": False}

        async def send(message: dict[str, object]) -> None:
            sent.append(message)

        scope = {"type": "http", "method": "POST", "path": "/p/0/loop/demo/pause", "raw_path": b"/p/0/loop/demo/pause",
                 "query_string": b"", "root_path": "", "scheme": "http", "http_version": "1.1",
                 "server": ("127.0.0.1", PORT), "client": ("127.0.0.1", 5000),
                 "headers": [(b"host", host), (b"content-type", b"application/x-www-form-urlencoded"),
                             (b"content-length", length), *([(b"cookie", cookies)] if cookies else []), *more]}
        asyncio.run(app(scope, receive, send))
        return int(sent[0]["status"]), read  # type: ignore[call-overload]

    assert post(b"evil.example", cookie) == (403, False)
    assert post(f"127.0.0.1:{PORT}".encode(), b"") == (403, False)
    assert post(f"127.0.0.1:{PORT}".encode(), cookie, b"999999") == (413, False)
    assert post(f"127.0.0.1:{PORT}".encode(), cookie, b"10", (b"transfer-encoding", b"chunked")) == (411, False)
    assert post(f"127.0.0.1:{PORT}".encode(), cookie) == (403, True)  # a session: the form is read, then refused


@pytest.mark.parametrize("kind", ["directory", "fifo", "symlink"])
def test_a_secret_that_is_not_a_regular_file_is_refused_with_the_fix(forbid_real_home: Path, kind: str) -> None:
    path = secret_path()
    path.parent.mkdir(parents=True, mode=0o700)
    if kind == "directory":
        path.mkdir()
    elif kind == "fifo":
        os.mkfifo(path, 0o600)  # opening it for reading would wait for a writer: O_NONBLOCK does not
    else:
        target = path.with_name("elsewhere")
        target.write_text("a" * 64 + "\n")
        target.chmod(0o600)
        path.symlink_to(target)
    with pytest.raises(BadInput) as caught:
        load_secret()
    text = caught.value.message
    assert {"directory": "a directory", "fifo": "a FIFO", "symlink": "a symbolic link"}[kind] in text
    assert "not the dashboard secret" in text and "fix: move it away" in text and "\n" not in text


def test_a_secret_the_sandbox_hides_is_told_apart_from_a_chmod(forbid_real_home: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    from automaton.dashboard import auth

    load_secret()
    real_open = os.open

    def denied(path: object, flags: int, *args: object, **kwargs: object) -> int:
        if str(path) == str(secret_path()):
            raise PermissionError(13, "Permission denied")
        return real_open(path, flags, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", denied)
    with pytest.raises(auth.SecretHidden, match="kernel sandbox"):  # the bits allow it: a sandbox
        load_secret()
    if os.geteuid() == 0:  # root reads whatever the bits say: judge as the user who owns the folder
        for path in (secret_path().parent, secret_path()):
            os.chown(path, 12345, 12345)
        monkeypatch.setattr(os, "geteuid", lambda: 12345)
    os.chmod(secret_path(), 0o000)
    with pytest.raises(BadInput, match="chmod 600") as caught:  # the bits refuse it: the chmod fix
        load_secret()
    assert not isinstance(caught.value, auth.SecretHidden)
