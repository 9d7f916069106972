"""The keyed checkpoint of a loop log: how far a full check has verified it, so the next process
checks only what was appended since.

A tick verifies its loop's log once (`store.chainlog.read_chain`), and that cost grew with the
log. After a clean full check of a keyed, anchored loop log, the loop's ledger check
(`store.looplog.log_finding`) records here what it verified: the prefix's line `count`, its
length in characters (`chars`), its last line's mac (`head`), the SHA-256 of those characters
(`digest`) and the ledger fold's counters after them (`fold`, compact JSON owned by
`store.looplog`). The file sits beside the log's anchor in the record key's folder, which every
agent sandbox hides (`store.key`, `store.anchor`):
`~/.config/automaton/keyed/<sha256 of the log's resolved path>.checkpoint`, mode 0600, one line:

    v1 <count> <chars> <head> <digest> <fold or -> <mac>

`mac` is HMAC-SHA256 under the record key of "automaton checkpoint v1", the log's resolved path
and the fields before it, each on its own line. A reader trusts a checkpoint only when its mac
verifies, the log's first `chars` characters hash to `digest` and end with the line whose mac is
`head`, and the log's anchor is at or after `head` (`chainlog._from_checkpoint`); anything else
(a missing, malformed or forged checkpoint, a log rewritten or cut under it) means a full check.
Writing is best effort and not fsynced: a lost checkpoint only costs one full check.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

from automaton.core.digest import equal, hmac_sha256, sha256_hex
from automaton.core.errors import BadInput
from automaton.core.record import record
from automaton.store import key as keys

SUFFIX = ".checkpoint"
STEP = 16  # lines appended since the last checkpoint before a new one is written
_LIMIT = 1 << 16  # a checkpoint larger than this was not written by automaton
_HEX = re.compile(r"[0-9a-f]{64}\Z")
_FOLD = re.compile(r"[!-~]+\Z")  # printable ASCII without spaces: the fold is one field
_DOMAIN = "automaton checkpoint v1"


@record(frozen=True)
class Checkpoint:
    """A verified prefix of a log: `count` lines, `chars` characters, the last line's mac
    `head` (64 hex), the SHA-256 hex of those characters `digest`, and the ledger's `fold` ("" none)."""

    count: int
    chars: int
    head: str
    digest: str
    fold: str = ""


def digest(text: str) -> str:
    """SHA-256 hex of `text` as UTF-8: the checkpoint's `digest` of a log's prefix."""
    # OpenSSL's SHA-256 (hashlib) hashes a long log's prefix about eight times faster than the
    # built-in one, but importing it costs a hook more than that: it is used where a runner or
    # command loaded it already, the built-in one (the same digest) elsewhere.
    hashlib = sys.modules.get("hashlib")
    data = text.encode("utf-8")
    return hashlib.sha256(data).hexdigest() if hashlib is not None else sha256_hex(data)


def file_of(log_path: str | Path) -> Path:
    """The checkpoint file of the log at `log_path`. BadInput (exit 2) when no home folder is set."""
    mark = keys.mark_path(Path(log_path))
    return mark.with_name(mark.name + SUFFIX)


def _mac(key: bytes, log_path: str | Path, body: str) -> str:
    return hmac_sha256(key, f"{_DOMAIN}\n{os.path.realpath(log_path)}\n{body}".encode())


def read(log_path: str | Path, key: bytes) -> Checkpoint | None:
    """The checkpoint of `log_path` when one exists and its mac verifies under `key`; None for
    anything else (missing, unreadable, malformed, forged, another log's): never raises."""
    try:
        fd = os.open(file_of(log_path), os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))  # a planted FIFO must not hang
        try:
            data = os.read(fd, _LIMIT + 1)
        finally:
            os.close(fd)
        text = data.decode("ascii")
        version, count, chars, head, digest, fold, mac = text.split(" ")
        body = f"{count} {chars} {head} {digest} {fold}"
        if (version != "v1" or len(data) > _LIMIT or not text.endswith("\n") or not _HEX.match(mac.strip())
                or not equal(mac.strip(), _mac(key, log_path, body))):
            return None
        found = Checkpoint(int(count), int(chars), head, digest, "" if fold == "-" else fold)
    except (OSError, ValueError, BadInput):
        return None
    if found.count < 1 or found.chars < 1 or not _HEX.match(found.head) or not _HEX.match(found.digest):
        return None
    return found


def write(log_path: str | Path, key: bytes, found: Checkpoint) -> None:
    """Record `found` for `log_path` (temp file, rename; no fsync). OSError as raised;
    ValueError for a fold that is not one printable field."""
    if found.fold and not _FOLD.match(found.fold):
        raise ValueError("a checkpoint's fold is printable ASCII without spaces")
    body = f"{found.count} {found.chars} {found.head} {found.digest} {found.fold or '-'}"
    target = file_of(log_path)
    target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.{os.urandom(4).hex()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        try:
            os.write(fd, f"v1 {body} {_mac(key, log_path, body)}\n".encode("ascii"))
        finally:
            os.close(fd)
        os.replace(tmp, target)
    except OSError:  # a full disk, say: no temp file is left in the key's folder
        tmp.unlink(missing_ok=True)
        raise


def forget(log_path: str | Path) -> None:
    """Drop the checkpoint of `log_path` (its chain starts again, or the log moved away)."""
    file_of(log_path).unlink(missing_ok=True)
