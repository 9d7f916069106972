"""The per-user key that seals every chained log line (`mac=`), and the marks of keyed logs.

The key is `~/.config/automaton/key`: 64 lowercase hex digits (32 random bytes) and a newline,
file mode 0600, owned by the user, in a folder made with mode 0700. It lives outside every project so
that an agent confined to a project (the sandbox hides this folder) cannot recompute a mac.
Writers create it on first use (`load_key(create=True)`); readers never do (`create=False`:
no key means keyed lines cannot be verified, which the chain check treats as tampering).
A key this process may not open (`KeyHidden`: an agent's sandbox hides the folder) is another
matter: such a process cannot write the logs either (the sandbox makes them read-only), so
readers there take keyed lines on their SHA-256 chain alone, and writers refuse.

Beside it, `keyed/` holds one small mark file per log that automaton has sealed with the key
(named by the SHA-256 of the log's resolved path; it holds that path, for a human, and the line
`anchored` once the log has an anchor). A log at a marked path that reads as
unkeyed was replaced by a forger, not left over from before keys existed (see
`store.chainlog.read_chain`). The anchor of each log (its head: `store.anchor`) is the file
of the same name with `.anchor` appended.

On a runner that starts fresh (a GitHub Actions job, a Kubernetes pod) the key is a secret
handed in, never made there (README.md#running-loops-on-github-actions):
`$AUTOMATON_RECORD_KEY` (the 64 hex digits themselves) or `$AUTOMATON_RECORD_KEY_FILE` (the
absolute path of a file holding them, e.g. a mounted Secret), checked in that order before the
file above. Either one is used as given: never created, never copied to disk; a bad one fails
closed. The marks and anchors stay in `~/.config/automaton`. The runner withholds both
variables from every agent process and sets `$AUTOMATON_RECORD_KEY_WITHHELD` there instead
(`harnesses._env`), which makes `load_key` answer KeyHidden, as for the hidden folder: a process
that may not have the key reads keyed lines on their chain alone and writes no log.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from automaton.core.digest import sha256_hex
from automaton.core.errors import BadInput, CorruptState

KEY_BYTES = 32
_HEX = re.compile(rb"[0-9a-f]{64}\n?\Z")
_POSIX = os.name != "nt"  # Windows has no mode bits to check: its ACLs are the user's profile's
_cache: dict[Path, bytes] = {}  # key file -> key, per process (tests give each test its own HOME)
_SETUP = "(automaton creates it on its next write when it is absent)"


# The names `core.secrets.RECORD_KEY_ENV` and `RECORD_KEY_WITHHELD` give (a test keeps them
# equal): spelled here because the hook imports this module and must not load core.secrets.
KEY_ENV, KEY_FILE_ENV = "AUTOMATON_RECORD_KEY", "AUTOMATON_RECORD_KEY_FILE"
WITHHELD_ENV = "AUTOMATON_RECORD_KEY_WITHHELD"


class KeyHidden(BadInput):
    """The key exists but this process may not open it (exit 2 for a writer): an agent's sandbox."""


def secret_source() -> tuple[str, Path | None] | None:
    """Where a key handed in as a secret comes from: (`KEY_ENV`, None), (`KEY_FILE_ENV`, its
    path), or None when neither variable is set (non-empty), and the key is `key_path()`.
    BadInput (exit 2) for a `KEY_FILE_ENV` that is not an absolute path."""
    if os.environ.get(KEY_ENV):
        return KEY_ENV, None
    named = os.environ.get(KEY_FILE_ENV)
    if not named:
        return None
    if not os.path.isabs(named):
        raise BadInput(f"${KEY_FILE_ENV} {named!r} is not an absolute path: name the mounted key file by its full path")
    return KEY_FILE_ENV, Path(named)


def _parse_secret(data: bytes, where: str) -> bytes:
    """The key of a secret's bytes (64 lowercase hex digits, an optional trailing newline).
    CorruptState naming `where`, never the value, otherwise."""
    if not _HEX.match(data):
        raise CorruptState(f"{where} is not an automaton key ({len(data)} bytes; it holds 64 lowercase hex digits):"
                           " put the key file's 64 hex digits there")
    return bytes.fromhex(data[:64].decode("ascii"))


def _read_secret_file(path: Path) -> bytes:
    """The key in the file `$AUTOMATON_RECORD_KEY_FILE` names. A mounted secret may belong to
    root (a Kubernetes Secret volume), so the owner is not checked; others may neither read
    nor write it. BadInput (exit 2) for a missing, unreadable or exposed file: never created."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        raise BadInput(f"${KEY_FILE_ENV} names {path}, which does not exist: mount the record key there or unset"
                       f" ${KEY_FILE_ENV}") from None
    except OSError as exc:
        raise BadInput(f"${KEY_FILE_ENV} {path}: cannot read the record key ({exc.strerror}); make it readable by"
                       " this user (a Secret volume's defaultMode 0400 with the pod's fsGroup)") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise BadInput(f"${KEY_FILE_ENV} {path}: not a regular file, so not the record key")
        data = os.read(fd, 4 * KEY_BYTES)
    finally:
        os.close(fd)
    if _POSIX and info.st_mode & 0o007:
        raise BadInput(f"${KEY_FILE_ENV} {path}: mode {info.st_mode & 0o777:04o} lets every user see or change the"
                       f" record key; fix: chmod 600 {path} (a Secret volume: defaultMode 0400)")
    return _parse_secret(data, f"${KEY_FILE_ENV} {path}")


def load_secret(source: tuple[str, Path | None]) -> bytes:
    """The key of `secret_source()`: the variable parsed each time (cheap, and it may change),
    the file read once per process like `key_path()` (`forget` drops it)."""
    kind, path = source
    if path is None:
        return _parse_secret(os.environ.get(kind, "").encode("utf-8", "surrogateescape"), f"${kind}")
    cached = _cache.get(path)
    if cached is None:
        cached = _cache[path] = _read_secret_file(path)
    return cached


_paths: dict[str | None, Path] = {}  # $HOME -> its key path (every log read asks; the audit reads thousands)


def key_path() -> Path:
    """`~/.config/automaton/key`. BadInput (exit 2) when the home folder cannot be found."""
    home = os.environ.get("HOME")
    found = _paths.get(home)
    if found is None:
        try:
            found = _paths[home] = Path.home() / ".config" / "automaton" / "key"
        except RuntimeError:
            raise BadInput("cannot find the home folder for the automaton key: set HOME") from None
    return found


def load_key(create: bool) -> bytes | None:
    """The key (32 bytes), cached per process; None when it does not exist and `create` is False.

    `create=True` (writers only) makes it when absent: written whole to a private temp file,
    then published with `os.link`, which like O_EXCL fails when the name exists, so of several
    processes racing exactly one key wins and every loser reads the winner's.
    With `$AUTOMATON_RECORD_KEY` or `$AUTOMATON_RECORD_KEY_FILE` set (`secret_source`) that
    key, whatever `create` says; with neither and `$AUTOMATON_RECORD_KEY_WITHHELD` set, KeyHidden.
    Raises BadInput (exit 2) for a key file readable or writable by others, owned by another
    user, or unreadable, and CorruptState (exit 2) for one that is not 64 hex digits; each
    names the file and the fix. KeyHidden (a BadInput) when the key may not be opened here.
    """
    source = secret_source()
    if source is not None:  # a secret handed in: used as it is, never made
        return load_secret(source)
    if os.environ.get(WITHHELD_ENV):
        raise KeyHidden(f"the runner withholds the record key from this process (${WITHHELD_ENV}): inside an"
                        " agent's sandbox automaton writes no log (run it outside the sandbox)")
    path = key_path()
    cached = _cache.get(path)
    if cached is not None:
        return cached
    key = _read(path)
    if key is None and create:
        key = _create(path)
    if key is not None:
        _cache[path] = key
    return key


def forget() -> None:
    """Drop the per-process cache (tests that replace the key file within one process)."""
    _cache.clear()


def _read(path: Path) -> bytes | None:
    try:
        # O_NONBLOCK: a FIFO planted at the key's path must not hang every reader (the hook too).
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        return None
    except PermissionError as exc:
        if not _owner_may_read(path):
            # The file's own permissions refuse us (someone ran `chmod 000` on it or its folder):
            # that is not a sandbox, and readers must not fall back to the unkeyed chain for it.
            raise BadInput(f"{path}: this process may not read the automaton key ({exc.strerror}); fix the"
                           f" permissions: chmod 700 {path.parent}; chmod 600 {path}") from None
        raise KeyHidden(f"{path}: this process may not read the automaton key ({exc.strerror}): inside an"
                        " agent's sandbox automaton writes no log (run it outside the sandbox)") from None
    except OSError as exc:
        raise BadInput(f"{path}: cannot read the automaton key ({exc.strerror}); make it the file automaton"
                       f" wrote (mode 600) or restore it from a backup") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise BadInput(f"{path}: not a regular file, so not the automaton key; fix: move it away and restore"
                           " the key from a backup (or let the next write make a new one and re-seal each log)")
        data = os.read(fd, 4 * KEY_BYTES)
    finally:
        os.close(fd)
    if _POSIX and info.st_mode & 0o077:
        raise BadInput(f"{path}: mode {info.st_mode & 0o777:04o} lets other users see or change the key that seals"
                       f" automaton's logs; fix: chmod 600 {path}")
    if _POSIX and info.st_uid != os.getuid():
        raise BadInput(f"{path}: owned by another user (uid {info.st_uid}), so it does not seal your logs;"
                       f" fix: remove it {_SETUP}, then re-seal each log a human vouches for")
    if not _HEX.match(data):
        raise CorruptState(f"{path}: not an automaton key ({info.st_size} bytes; it holds 64 hex digits and a"
                           " newline): restore it from a backup, or remove it (a new key is made on the next"
                           " write) and re-seal each keyed log with a human --approve or --focus")
    return bytes.fromhex(data[:64].decode("ascii"))


def _owner_may_read(path: Path) -> bool:
    """Whether the permission bits let this process read `path` (root: always; else owner read on
    the file and owner search on its folder, both ours). An EACCES where they do comes from a
    security module: the kernel sandbox hiding the key's folder, which only automaton sets up
    around agents. `stat` needs no read right, so it still answers inside that sandbox."""
    if not _POSIX or os.geteuid() == 0:
        return True
    try:
        folder, file = os.stat(path.parent), os.stat(path)
    except OSError:
        return False
    uid = os.geteuid()
    return (folder.st_uid == uid and bool(folder.st_mode & 0o100)
            and file.st_uid == uid and bool(file.st_mode & 0o400))


def hidden_here(path: Path) -> bool:
    """Whether a PermissionError on `path` (a file in the key's folder) is a denial its
    permission bits do not explain: the kernel sandbox around an agent hides that folder. The
    decision `KeyHidden` rests on, for the other files kept beside the key."""
    return _owner_may_read(path)


def publish_random(path: Path, nbytes: int) -> None:
    """Create `path` (mode 0600, its folder 0700) holding `nbytes` random bytes as hex and a
    newline, published whole: written and synced under a temporary name, then linked, so a
    reader never sees a partial file. When `path` exists already (another process won the
    race, or it was there) it is left as it is. OSError (PermissionError included) as raised."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, os.urandom(nbytes).hex().encode("ascii") + b"\n")
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        os.link(tmp, path)  # fails like O_EXCL when the name exists: of two creators one wins
    except FileExistsError:
        pass
    finally:
        tmp.unlink()


def _create(path: Path) -> bytes:
    try:
        publish_random(path, KEY_BYTES)
    except PermissionError as exc:
        raise KeyHidden(f"{path}: this process may not create the automaton key ({exc.strerror}): inside an"
                        f" agent's sandbox automaton writes no log (run it outside); elsewhere make {path.parent}"
                        " a folder you can write (mode 0700)") from None
    except OSError as exc:
        raise BadInput(f"{path}: cannot create the automaton key ({exc.strerror}); make"
                       f" {path.parent} a folder you can write (mode 0700)") from None
    key = _read(path)
    if key is None:  # removed between the link and the read: never seal with a key nobody kept
        raise BadInput(f"{path}: removed while it was being created; run the command again")
    return key


ANCHORED = "anchored"  # the mark's second line once the log has an anchor (store/anchor.py)


def mark_path(log_path: Path) -> Path:
    """The keyed mark of the log at `log_path`: `keyed/<sha256 of its resolved path>`."""
    # os.path.realpath, the string Path.resolve() gives, without its RuntimeError for a symlink
    # loop planted at the log's path (the read of the log reports that).
    name = sha256_hex(os.path.realpath(log_path).encode("utf-8", "surrogateescape"))
    return key_path().parent / "keyed" / name


def mark_keyed(log_path: Path, *, anchored: bool = False) -> None:
    """Record that automaton sealed `log_path` with the key. Best effort: without the mark, a
    replaced log at this path reads as unkeyed legacy (flagged by --audit) instead of tampered.
    `anchored`: the log now has an anchor (`store.anchor`); the mark is rewritten to say so,
    so that a missing anchor later reads as tampering, not as a log from before anchors."""
    mark = mark_path(log_path)
    text = f"{os.path.realpath(log_path)}\n" + (f"{ANCHORED}\n" if anchored else "")
    try:
        mark.parent.mkdir(mode=0o700, exist_ok=True)
        if anchored:
            tmp = mark.with_name(f".{mark.name}.{os.getpid()}.{os.urandom(4).hex()}")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        else:
            fd = os.open(mark, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError:  # FileExistsError included: marked before
        return
    try:  # the path, for a human who wonders what a mark stands for
        os.write(fd, text.encode("utf-8", "surrogateescape"))
        if anchored:
            os.fsync(fd)
    except OSError:
        return
    finally:
        os.close(fd)
    if anchored:
        os.replace(tmp, mark)


def was_keyed(log_path: Path) -> bool:
    """Whether automaton has sealed the log at `log_path` with the key (see `mark_keyed`).
    False where the mark cannot be looked at because the kernel sandbox hides the key's folder
    (see KeyHidden); True where the permission bits refuse the look (fail closed: an unkeyed log
    then reads as replaced, not as legacy)."""
    mark = mark_path(log_path)
    try:
        return mark.exists()
    except OSError:
        return not _owner_may_read(mark.parent)


def was_anchored(log_path: Path) -> bool:
    """Whether the mark of `log_path` says the log had an anchor (`mark_keyed(anchored=True)`).
    False where there is no mark or the sandbox hides the folder; True where the mark exists
    but cannot be read (fail closed: the missing anchor then reads as tampering)."""
    mark = mark_path(log_path)
    try:
        fd = os.open(mark, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        return False
    except OSError:
        return not _owner_may_read(mark.parent)
    try:
        data = os.read(fd, 1 << 16)
    except OSError:
        return True
    finally:
        os.close(fd)
    return f"\n{ANCHORED}\n".encode() in data


def seal_bytes(data: bytes) -> str:
    """HMAC-SHA256 (hex) of `data` under the key, created when absent (writers only): the seal of
    a file automaton writes outside the chained logs (the drift check's own index,
    `automaton.git.content.PrivateIndex`). Raises as `load_key(create=True)`."""
    import hashlib  # here, not at the top: the hook path imports this module and never seals
    import hmac

    key = load_key(create=True)
    if key is None:  # pragma: no cover - create=True returns a key or raises
        raise BadInput(f"{key_path()}: no automaton key could be made")
    return hmac.new(key, data, hashlib.sha256).hexdigest()
