"""core.digest is the standard library's SHA-256 and HMAC-SHA256, checked against RFC 4231 (the
64-byte key boundary included) and against hashlib/hmac directly."""

from __future__ import annotations

import hashlib
import hmac

from hypothesis import given
from hypothesis import strategies as st

from automaton.core import digest

# RFC 4231 §4.2-4.7, HMAC-SHA-256 (test case 5, a truncated output, is left out).
RFC4231 = [
    (b"\x0b" * 20, b"Hi There", "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"),
    (b"Jefe", b"what do ya want for nothing?",
     "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"),
    (b"\xaa" * 20, b"\xdd" * 50, "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe"),
    (bytes(range(1, 26)), b"\xcd" * 50, "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b"),
    (b"\xaa" * 131, b"Test Using Larger Than Block-Size Key - Hash Key First",
     "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"),
    (b"\xaa" * 131, b"This is a test using a larger than block-size key and a larger than block-size data."
     b" The key needs to be hashed before being used by the HMAC algorithm.",
     "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2"),
]


def test_rfc4231_vectors() -> None:
    for key, message, expected in RFC4231:
        assert digest.hmac_sha256(key, message) == expected


@given(st.binary(max_size=200), st.binary(max_size=300))
def test_hmac_matches_the_stdlib(key: bytes, message: bytes) -> None:
    assert digest.hmac_sha256(key, message) == hmac.new(key, message, hashlib.sha256).hexdigest()


@given(st.binary(max_size=5000))
def test_sha256_matches_hashlib(data: bytes) -> None:
    assert digest.sha256_hex(data) == hashlib.sha256(data).hexdigest()


def test_equal_is_compare_digest() -> None:
    assert digest.equal("ab" * 32, "ab" * 32)
    assert not digest.equal("ab" * 32, "ab" * 31 + "ac")
    assert not digest.equal("ab", "abc")


def test_the_block_size_key_is_padded_not_hashed() -> None:
    """RFC 2104: only a key longer than the 64-byte block is hashed first; one of exactly 64
    bytes is used as it is (the hand-written HMAC this module replaced had a surviving mutant
    here: `>=` for `>`)."""
    for size in (63, 64, 65):
        key = bytes(range(size))
        assert digest.hmac_sha256(key, b"m") == hmac.new(key, b"m", hashlib.sha256).hexdigest(), size
    hashed_first = hashlib.sha256(bytes(range(64))).digest()
    assert digest.hmac_sha256(bytes(range(64)), b"m") != digest.hmac_sha256(hashed_first, b"m")
