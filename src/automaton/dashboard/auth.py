"""Who may act from the dashboard: the per-user secret, the one-time login token, sessions, CSRF.

The secret file is `~/.config/automaton/dashboard.secret` (64 hex digits and a newline: 32
random bytes; mode 0600, owned by the user), beside the key that seals the logs, in the folder
the tick sandbox hides from every agent. Reading it is how a dashboard proves it was not started
inside that sandbox (`human_gate`); its bytes sign nothing. Everything a browser is given to act
with is an HMAC under a random key of the running process: the session cookie
(`<id>.<HMAC("session:"+id)>`), each form's CSRF token (`HMAC("csrf:"+id)`), the session's form
key (`HMAC("key:"+id)`) and the review an approval is bound to, so nothing signed outlives the
process and the file cannot mint any of them.

The form key exists because browsers scope cookies by host, not port: any server on another
port of 127.0.0.1 the browser visits receives the session cookie, and with it could GET a page
(its CSRF token and review binding included) and POST. The key is never in a cookie and never in
a page a cookie holder can fetch: only the login answer carries it, once, and the page's script
keeps it in `localStorage` (scoped to this origin, port included) and adds it to every form.

A session starts only from the one-time token printed at start to the human who started the
server: random, kept in memory as its SHA-256 only, usable once, valid TOKEN_TTL_S seconds.
Sessions live in this process's memory (a restart logs everyone out) for SESSION_TTL_S seconds.
"""

from __future__ import annotations

import errno
import hashlib
import hmac
import os
import re
import secrets
import stat
import time
from collections.abc import Callable
from pathlib import Path

from automaton.core.errors import BadInput, CorruptState
from automaton.store.key import hidden_here, key_path, publish_random

SECRET_NAME = "dashboard.secret"
LOGIN_NAME = "dashboard-login.url"  # the login URL, when stdout is not a terminal
SECRET_BYTES = 32
TOKEN_TTL_S = 600.0  # seconds a login URL may be used
SESSION_TTL_S = 12 * 3600.0  # seconds a session lasts
_HEX = re.compile(rb"[0-9a-f]{64}\n?\Z")
_POSIX = os.name != "nt"
# A link could point the start at any file; a FIFO would block the open; neither is our secret.
_OPEN = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
_REMAKE = "(the dashboard makes a new one at its next start)"


class SecretHidden(BadInput):
    """The secret may not be opened here for a reason its permission bits do not explain: the
    kernel sandbox around an agent hides its folder. The dashboard then starts read-only."""


def secret_path() -> Path:
    """`~/.config/automaton/dashboard.secret`. BadInput (exit 2) when there is no home folder."""
    return key_path().parent / SECRET_NAME


def load_secret() -> bytes:
    """The secret (32 bytes), created on first use. BadInput (exit 2, one line naming the file
    and the fix) for a file that others may read or write, owned by another user, unreadable or
    not 64 hex digits, anything but a regular file (a link, a folder, a FIFO), or a folder where
    it cannot be created. SecretHidden (a BadInput) when the kernel sandbox hides it."""
    path = secret_path()
    found = _read(path)
    if found is not None:
        return found
    try:
        publish_random(path, SECRET_BYTES)  # of two starts at once, one secret wins
    except PermissionError as exc:
        if path.parent.is_dir() and hidden_here(path.parent) and os.access(path.parent, os.W_OK | os.X_OK):
            raise _hidden(path, exc) from None
        raise BadInput(f"{path}: cannot create the dashboard secret ({exc.strerror}); make {path.parent}"
                       " a folder you can write (mode 0700)") from None
    except OSError as exc:
        raise BadInput(f"{path}: cannot create the dashboard secret ({exc.strerror}); make {path.parent}"
                       " a folder you can write (mode 0700)") from None
    found = _read(path)
    if found is None:
        raise BadInput(f"{path}: removed while it was being created; start the dashboard again")
    return found


def _read(path: Path) -> bytes | None:
    try:
        fd = os.open(path, _OPEN)
    except FileNotFoundError:
        return None
    except PermissionError as exc:
        if hidden_here(path):
            raise _hidden(path, exc) from None
        raise BadInput(f"{path}: cannot read the dashboard secret ({exc.strerror}); fix: chmod 700 {path.parent};"
                       f" chmod 600 {path}") from None
    except OSError as exc:
        what = "a symbolic link" if exc.errno == errno.ELOOP else f"not readable ({exc.strerror})"
        raise BadInput(f"{path}: {what}, not the dashboard secret (a regular file); fix: move it away"
                       f" {_REMAKE}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise BadInput(f"{path}: {_kind(info.st_mode)}, not the dashboard secret (a regular file); fix: move it"
                           f" away {_REMAKE}")
        data = os.read(fd, 4 * SECRET_BYTES)
    except OSError as exc:
        raise BadInput(f"{path}: cannot read the dashboard secret ({exc.strerror}); fix: move it away"
                       f" {_REMAKE}") from None
    finally:
        os.close(fd)
    if _POSIX and info.st_mode & 0o077:
        raise BadInput(f"{path}: mode {info.st_mode & 0o777:04o} lets other users read the secret that guards"
                       f" dashboard approvals; fix: chmod 600 {path}")
    if _POSIX and info.st_uid != os.getuid():
        raise BadInput(f"{path}: owned by another user (uid {info.st_uid}); fix: remove it {_REMAKE}")
    if not _HEX.match(data):
        raise CorruptState(f"{path}: not a dashboard secret (it holds 64 hex digits and a newline); fix: remove it"
                           f" {_REMAKE}")
    return bytes.fromhex(data[:64].decode("ascii"))


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISCHR, "a device"), (stat.S_ISBLK, "a device")):
        if test(mode):
            return name
    return "not a regular file"


def _hidden(path: Path, exc: OSError) -> SecretHidden:
    return SecretHidden(f"the dashboard secret {path} may not be opened here ({exc.strerror}) although its"
                        " permissions allow it: the kernel sandbox around an agent hides that folder; start"
                        " automaton --dashboard outside the sandbox to act from the page")


def login_path() -> Path:
    """`~/.config/automaton/dashboard-login.url`: where a dashboard whose output is not a
    terminal leaves its login URL (the folder every agent sandbox hides; a log file is not)."""
    return key_path().parent / LOGIN_NAME


def write_login(url: str) -> Path:
    """Write `url` to `login_path()`: mode 0600, replaced atomically (a reader sees the old URL
    or the new one, never half). BadInput when the folder cannot be written."""
    path = login_path()
    tmp = path.with_name(f".{LOGIN_NAME}.{os.getpid()}.{secrets.token_hex(4)}")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
        try:
            os.write(fd, url.encode("ascii") + b"\n")
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise BadInput(f"{path}: cannot write the dashboard login URL ({exc.strerror}); make {path.parent} a"
                       " folder you can write (mode 0700)") from None
    return path


def remove_login(path: Path, url: str) -> None:
    """Remove the login file `path` if it still holds `url` (a later dashboard may have put its
    own there). Best effort: the URL in it stops working with this process anyway."""
    try:
        if path.read_bytes().strip() == url.encode("ascii"):
            path.unlink()
    except OSError:
        pass


def human_gate(clock: Callable[[], float] = time.monotonic) -> Gate:
    """The Gate of a dashboard a human started. `load_secret()` first: it proves this process
    sees `~/.config/automaton`, which the kernel sandbox hides (SecretHidden there; BadInput or
    CorruptState for a bad file). Sessions, tokens and form keys are then HMACs under a random
    key of this process alone, never the file's: nothing signed outlives the process, and a
    same-user program that receives the session cookie (another server on 127.0.0.1) cannot
    derive the CSRF token and the form key by reading the file."""
    load_secret()
    return Gate(secrets.token_bytes(SECRET_BYTES), clock)


class Gate:
    """The login token, the sessions and the CSRF tokens of one running dashboard.

    `secret` None: read-only; no token is issued and no session is ever valid. `clock`:
    seconds, monotonic (tests move it).
    """

    def __init__(self, secret: bytes | None, clock: Callable[[], float] = time.monotonic) -> None:
        self._secret = secret
        self._clock = clock
        self._tokens: dict[str, float] = {}  # sha256 hex of a login token -> when it expires
        self._sessions: dict[str, float] = {}  # session id -> when it expires

    @property
    def writable(self) -> bool:
        """Whether anyone may ever act through this dashboard (the starter was a human)."""
        return self._secret is not None

    def _mac(self, text: str) -> str:
        assert self._secret is not None
        return hmac.new(self._secret, text.encode("utf-8"), hashlib.sha256).hexdigest()

    def issue_token(self) -> str:
        """A new one-time login token (only its hash is kept). ValueError when read-only."""
        if self._secret is None:
            raise ValueError("a read-only dashboard issues no login token")
        token = secrets.token_urlsafe(32)
        self._tokens[hashlib.sha256(token.encode()).hexdigest()] = self._clock() + TOKEN_TTL_S
        return token

    def redeem(self, token: str) -> str | None:
        """The cookie value of a new session for a valid, unused, unexpired token (which is used
        up by this call), else None."""
        if self._secret is None or not token or len(token) > 200:
            return None
        expires = self._tokens.pop(hashlib.sha256(token.encode("utf-8", "replace")).hexdigest(), None)
        if expires is None or self._clock() > expires:
            return None
        sid = secrets.token_urlsafe(32)
        self._sessions[sid] = self._clock() + SESSION_TTL_S
        return f"{sid}.{self._mac('session:' + sid)}"

    def session(self, cookie: str | None) -> str | None:
        """The session id a cookie value stands for, None unless it is one this process issued,
        its HMAC verifies, and it has not expired."""
        if self._secret is None or not cookie or len(cookie) > 200:
            return None
        sid, _, mac = cookie.partition(".")
        expires = self._sessions.get(sid)
        if expires is None or not _same(mac, self._mac("session:" + sid)):
            return None
        if self._clock() > expires:
            self._sessions.pop(sid, None)
            return None
        return sid

    def end(self, sid: str) -> None:
        """Log session `sid` out: its cookie is never valid again, wherever it was copied to."""
        self._sessions.pop(sid, None)

    def csrf(self, sid: str) -> str:
        """The CSRF token of every form of session `sid`."""
        return self._mac("csrf:" + sid)

    def check_csrf(self, sid: str | None, value: str | None) -> bool:
        return sid is not None and bool(value) and _same(value, self.csrf(sid))

    def key(self, sid: str) -> str:
        """The form key of session `sid`: given to the browser once, by the login answer."""
        return self._mac("key:" + sid)

    def check_key(self, sid: str | None, value: str | None) -> bool:
        return sid is not None and bool(value) and _same(value, self.key(sid))

    def sign(self, sid: str, purpose: str, text: str) -> str:
        """An HMAC binding `text` (what a page showed) to session `sid` and `purpose`."""
        return self._mac(f"{purpose}:{sid}:{text}")

    def check_sign(self, sid: str, purpose: str, text: str, mac: str | None) -> bool:
        return bool(mac) and _same(mac, self.sign(sid, purpose, text))


def _same(given: object, expected: str) -> bool:
    """A constant-time comparison that also takes what a hostile form sends (non-ASCII text, on
    which `hmac.compare_digest` of two str raises)."""
    return hmac.compare_digest(str(given).encode("utf-8", "replace"), expected.encode("ascii"))
