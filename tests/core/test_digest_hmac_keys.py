"""HMAC-SHA256 at the key lengths where RFC 2104 changes course: the 64-byte block of SHA-256.

RFC 2104 section 2: a key longer than the block (B = 64 bytes) is hashed first; a key of at
most B bytes is zero-padded, never hashed. Every keyed record (task and loop logs, state
files) rests on `hmac_sha256`, so it must equal the standard library's HMAC for every key
length, whichever way the function is built.
"""

from __future__ import annotations

import hashlib
import hmac
import os

import pytest

from automaton.core.digest import hmac_sha256

# Fresh keys on every run: a per-key cache filled by an earlier call (the same process, or the
# one a test runner forked from) never answers for them.
MESSAGES = (b"", b"a", b"TICK n=3 spent_usd=1.250000", bytes(range(256)) * 5)


@pytest.mark.parametrize("length", [0, 1, 32, 63, 64, 65, 128, 200])
@pytest.mark.parametrize("fill", [0x00, 0x36, 0x5C, 0xA7])
def test_hmac_equals_the_stdlib_at_every_key_length_around_the_block(length: int, fill: int) -> None:
    key = bytes((fill + b) % 256 for b in os.urandom(length))
    for message in MESSAGES:
        assert hmac_sha256(key, message) == hmac.new(key, message, hashlib.sha256).hexdigest()


def test_a_64_byte_key_is_not_hashed_and_a_65_byte_key_is() -> None:
    """The two keys one byte apart around the block give the HMACs RFC 2104 defines, which a
    hash-every-key-of-64-bytes-or-more slip (or a pad-without-hash one) would not."""
    key64 = os.urandom(64)
    key65 = key64 + os.urandom(1)
    padded = hmac.new(key64, b"m", hashlib.sha256).hexdigest()
    hashed = hmac.new(hashlib.sha256(key65).digest(), b"m", hashlib.sha256).hexdigest()
    assert hmac_sha256(key64, b"m") == padded
    assert hmac_sha256(key65, b"m") == hashed == hmac.new(key65, b"m", hashlib.sha256).hexdigest()
    # hashing the 64-byte key would give another MAC: the two rules really differ here
    assert hmac.new(hashlib.sha256(key64).digest(), b"m", hashlib.sha256).hexdigest() != padded


def test_keys_sharing_a_prefix_answer_by_their_own_bytes() -> None:
    """A key's MAC is cached per key: a key with the same first bytes but another length answers
    by RFC 2104 (zero padding makes 63 bytes + NUL the same block as 63 bytes), never by a
    neighbour's cache entry."""
    base = os.urandom(64)
    assert hmac_sha256(base[:63], b"line") == hmac_sha256(base[:63] + b"\0", b"line")
    assert hmac_sha256(base, b"line") != hmac_sha256(base[:63], b"line")
    assert hmac_sha256(base, b"line") == hmac.new(base, b"line", hashlib.sha256).hexdigest()
