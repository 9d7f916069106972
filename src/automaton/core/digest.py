"""SHA-256 and HMAC-SHA256 (RFC 2104) of automaton's keyed records, from `hashlib` and `hmac`.

The one place that names the algorithms of the task logs, the loop logs, their anchors and the
approvals' bindings (core/chain.py, store/key.py): a change of algorithm is a change here and
of the file formats, nowhere else. No primitive is implemented here; each function is the
standard library's (OpenSSL through `_hashlib`).
"""

from __future__ import annotations

import hashlib
import hmac

# The constant-time comparison a MAC check needs: (a: str | bytes, b: same) -> bool.
equal = hmac.compare_digest


def sha256_hex(data: bytes) -> str:
    """SHA-256 of `data` as 64 lowercase hex digits (`hashlib.sha256`)."""
    return hashlib.sha256(data).hexdigest()


def hmac_sha256(key: bytes, message: bytes) -> str:
    """HMAC-SHA256 of `message` under `key` as 64 lowercase hex digits (`hmac.digest`, RFC 2104:
    a key longer than the 64-byte block is hashed first, a shorter one padded with zeros)."""
    return hmac.digest(key, message, "sha256").hex()


__all__ = ["equal", "hmac_sha256", "sha256_hex"]
