"""SHA-256 and HMAC-SHA256 for the hook path, without loading OpenSSL.

`hashlib` and `hmac` load `_hashlib` (OpenSSL) on import: about 3.5 ms of a hook's start,
an eighth of a bare interpreter's (bench/bench_hook.py). The hook hashes a few small files and
log lines, so CPython's built-in SHA-256 (`_sha2` from 3.12, `_sha256` in 3.11; the same
digests, slower only on megabytes) serves it, and falls back to `hashlib` where a build lacks
it. Bulk hashing (every tracked file of a worktree, git/content.py) keeps `hashlib`.

`hmac_sha256` is RFC 2104 HMAC over that SHA-256, exactly what `hmac.new(key, msg, "sha256")`
computes (tests/core/test_digest.py checks the RFC 4231 vectors and random inputs against
`hmac`); `equal` is the constant-time comparison `hmac.compare_digest` is.
"""

from __future__ import annotations

import sys
from _operator import _compare_digest as equal

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy reads the name)
if TYPE_CHECKING:
    from hashlib import _Hash, sha256
else:
    try:  # a failed import costs a search of sys.path: ask for the name this version has
        if sys.version_info >= (3, 12):
            from _sha2 import sha256
        else:
            from _sha256 import sha256
    except ImportError:  # a build without the built-in hashes: OpenSSL it is
        from hashlib import sha256

_BLOCK = 64  # SHA-256 block size in bytes (RFC 2104's B)
_INNER = bytes(x ^ 0x36 for x in range(256))
_OUTER = bytes(x ^ 0x5C for x in range(256))
# key -> (inner, outer): SHA-256 states that have taken the key's inner and outer pad. Each mac
# copies them instead of hashing a pad again: a quarter less time per line for the audit, which
# verifies every line of every log (bench/bench_audit.py). One key per process.
_pads: dict[bytes, tuple[_Hash, _Hash]] = {}


def sha256_hex(data: bytes) -> str:
    """SHA-256 of `data` as 64 lowercase hex digits."""
    return sha256(data).hexdigest()


def hmac_sha256(key: bytes, message: bytes) -> str:
    """HMAC-SHA256 of `message` under `key` as 64 lowercase hex digits (RFC 2104)."""
    pads = _pads.get(key)
    if pads is None:
        block = (sha256(key).digest() if len(key) > _BLOCK else key).ljust(_BLOCK, b"\0")
        pads = _pads[key] = (sha256(block.translate(_INNER)), sha256(block.translate(_OUTER)))
    inner = pads[0].copy()
    inner.update(message)
    outer = pads[1].copy()
    outer.update(inner.digest())
    return outer.hexdigest()


__all__ = ["equal", "hmac_sha256", "sha256", "sha256_hex"]
