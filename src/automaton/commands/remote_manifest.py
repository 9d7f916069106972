"""The keyed manifest of a loop's state commit (`sealed/state-files`): every file of the commit
sealed under the record key, so that push rights alone cannot change what a runner runs.

A state commit (`commands.remote_state`) carries the whole loop folder: besides the keyed log
and the state it seals, the verifier's `scorer.py`, the prompts (`implement.md`, `verify.md`,
`orchestrate.md`) and `runs/<n>/…`. The log's macs cover only the log; loop.json is covered by
its seal in the state. Anyone who may push `refs/automaton/loops/<name>` could otherwise swap
the scorer in a new commit on top of the real one, and the next runner would run it.

The manifest is the commit's file `sealed/state-files`, UTF-8 JSON:

    {"version": 1, "loop": NAME, "head": MAC, "files": {PATH: SHA256, ...}, "mac": HMAC}

- `files`: every other file of the commit (path relative to the loop folder) -> SHA-256 hex
  of its bytes (`core.digest.sha256_hex`).
- `head`: the `mac=` of the last line of the commit's `.state.log` (64 hex): the manifest is
  bound to the log it was sealed with.
- `mac`: HMAC-SHA256 (`core.digest.hmac_sha256`) under the record key (`store.key`) of the
  line "automaton state-files v1", a newline, and the canonical JSON (sorted keys, no spaces,
  ASCII) of the other four keys.

`sealed` adds it on every publish (the claim, the settle, a gate's halt, a human act);
`checked` verifies it on every fetch before any fetched file is written into the loop folder.
A commit without one (published before this check existed, or stripped) is refused like a
forged one: fail closed; README "State in the git remote" says how a human re-seals it.

What this does not cover: the whole of an older state commit pushed back (its manifest, log
and files agree with each other): that is a rollback, caught only by anchors kept outside the
remote (SECURITY.md "The state remote").
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from automaton.core import jsontext
from automaton.core.chain import LogLine, line_mac, parse_line
from automaton.core.digest import equal, hmac_sha256, sha256_hex
from automaton.core.errors import CorruptState
from automaton.core.names import LoopName
from automaton.git.remote import state_ref
from automaton.store import key as keys
from automaton.store.loops import LOG_FILE

MANIFEST = "sealed/state-files"
VERSION = 1
_DOMAIN = b"automaton state-files v1\n"
_HEX = frozenset("0123456789abcdef")


@dataclass(frozen=True)
class Manifest:
    """What a state commit's manifest seals: the `loop` name, the log's `head` (the last
    line's mac, 64 hex; "" for a log without a keyed last line) and `files` (path -> SHA-256
    hex of every other file of the commit)."""

    loop: str
    head: str
    files: dict[str, str]

    def body(self) -> bytes:
        """The bytes the mac covers (after the domain line): canonical JSON of the fields."""
        obj = {"version": VERSION, "loop": self.loop, "head": self.head, "files": self.files}
        return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode("ascii")


def _mac(key: bytes, manifest: Manifest) -> str:
    return hmac_sha256(key, _DOMAIN + manifest.body())


def _last_line(log: bytes) -> LogLine | None:
    lines = log.decode("utf-8", "replace").splitlines()
    return parse_line(next((line for line in reversed(lines) if line.strip()), ""))


def head_of(log: bytes) -> str:
    """The `mac=` of the last non-empty line of a log's bytes; "" when that line has none or
    is not a chained line (then no manifest can name it, and `checked` refuses)."""
    last = _last_line(log)
    return last.mac if last is not None else ""


def _keyed_by(log: bytes, key: bytes) -> bool:
    """Whether the log's last line carries `key`'s mac: False tells a runner handed another
    loop's key (or none of the log's) from a state someone without the key wrote."""
    last = _last_line(log)
    if last is None or not last.mac:
        return False
    return equal(last.mac, line_mac(key, last.raw[: -len(" mac=") - len(last.mac)]))


def manifest_of(loop: LoopName, files: dict[str, bytes]) -> Manifest:
    """The manifest of `files` (relative path -> bytes) for loop `loop`, the file MANIFEST
    itself left out."""
    listed = {rel: sha256_hex(data) for rel, data in sorted(files.items()) if rel != MANIFEST}
    return Manifest(str(loop), head_of(files.get(LOG_FILE, b"")), listed)


def sealed(loop: LoopName, files: dict[str, bytes]) -> dict[str, bytes]:
    """`files` (relative path -> bytes: the loop folder's durable files) with MANIFEST set to
    their manifest, macced under the record key (a stale MANIFEST among them is replaced).
    Raises as `store.key.load_key(create=True)` (BadInput, exit 2) when no key can be had."""
    key = keys.load_key(create=True)
    if key is None:  # pragma: no cover - create=True returns a key or raises
        raise CorruptState(f"loop {loop}: no record key to seal its state with")
    manifest = manifest_of(loop, files)
    obj = {"version": VERSION, "loop": manifest.loop, "head": manifest.head, "files": manifest.files,
           "mac": _mac(key, manifest)}
    text = json.dumps(obj, indent=1, sort_keys=True, ensure_ascii=True) + "\n"
    return {**{rel: data for rel, data in files.items() if rel != MANIFEST}, MANIFEST: text.encode("ascii")}


def _parse(data: bytes) -> tuple[Manifest, str] | None:
    """(the manifest, its mac) of MANIFEST's bytes; None when they are not one automaton wrote."""
    try:
        obj = jsontext.loads(data.decode("utf-8"), unique=True)
    except (UnicodeDecodeError, ValueError):
        return None
    if not isinstance(obj, dict) or set(obj) != {"version", "loop", "head", "files", "mac"}:
        return None
    loop, head, files, mac = obj["loop"], obj["head"], obj["files"], obj["mac"]
    if (obj["version"] != VERSION or not isinstance(loop, str) or not isinstance(head, str)
            or not isinstance(mac, str) or not isinstance(files, dict)
            or not all(isinstance(v, str) for v in files.values())):
        return None
    return Manifest(loop, head, files), mac


def _differs(manifest: Manifest, actual: Manifest) -> str | None:
    """The first file (by path) where `actual` is not `manifest`, as the words that say how;
    None when they list the same files with the same digests."""
    for rel in sorted(set(manifest.files) | set(actual.files)):
        if rel not in manifest.files:
            return f"{rel} is not one of the files it seals (a file was added)"
        if rel not in actual.files:
            return f"{rel}, which it seals, is missing (a file was removed)"
        if manifest.files[rel] != actual.files[rel]:
            got, want = actual.files[rel][:12], manifest.files[rel][:12]
            return f"{rel} is not the file it seals (sha256 {got}, sealed {want})"
    return None


def problem(loop: LoopName, files: dict[str, bytes], key: bytes) -> str | None:
    """Why `files` (a fetched state commit's tree) are not what their manifest seals under
    `key`, as the words to show; None when they are."""
    data = files.get(MANIFEST)
    if data is None:
        return f"it has no {MANIFEST} (published before automaton sealed every file of a loop's state, or removed)"
    parsed = _parse(data)
    if parsed is None:
        return f"its {MANIFEST} is not one automaton wrote"
    manifest, mac = parsed
    if len(mac) != 64 or not set(mac) <= _HEX or not equal(mac, _mac(key, manifest)):
        return f"its {MANIFEST} does not carry the record key's mac (written without the key)"
    actual = manifest_of(loop, files)
    if manifest.loop != actual.loop:
        return f"its {MANIFEST} seals loop {manifest.loop!r}, not {actual.loop!r}"
    if not actual.head or not equal(manifest.head, actual.head):
        return f"its {MANIFEST} was sealed with another {LOG_FILE} (not the one whose last line it names):" \
               " a manifest of another state commit"
    return _differs(manifest, actual)


def checked(loop: LoopName, remote: str, commit: str, files: dict[str, bytes]) -> dict[str, bytes]:
    """`files` (the state commit `commit`'s tree fetched from `remote`: relative path ->
    bytes) without MANIFEST, once the manifest verifies under the record key, is bound to the
    commit's log, and lists exactly these files with these digests. CorruptState (exit 2, one
    line naming the ref, the file that differs and what a human does) otherwise; nothing is
    written. KeyHidden/BadInput (exit 2) as `store.key.load_key` raises them."""
    key = keys.load_key(create=False)
    ref = state_ref(loop)
    head = f"loop {loop}: the state commit {commit[:12]} ({ref} on {remote!r}) does not verify with the record key"
    if key is None:
        raise CorruptState(f"{head}: this machine has no record key; nothing was run. Hand the loop's key in"
                           " (AUTOMATON_RECORD_KEY or AUTOMATON_RECORD_KEY_FILE)")
    why = problem(loop, files, key)
    if why is None:
        return {rel: data for rel, data in files.items() if rel != MANIFEST}
    if not _keyed_by(files.get(LOG_FILE, b""), key):  # not even the log's last line: most likely the wrong key
        raise CorruptState(f"{head}: {why}, and the last line of its {LOG_FILE} does not carry this key's mac"
                           f" either; nothing was run. Fix: check AUTOMATON_RECORD_KEY is this loop's key; if it is,"
                           f" a human restores {ref} to the last state commit that verifies")
    if MANIFEST not in files:
        fix = (f"a human checks its files (git fetch {remote} {ref}; git show --stat FETCH_HEAD) and re-seals them"
               " from a trusted machine with the record key (README: State in the git remote, re-sealing)")
    else:
        fix = (f"someone without the key wrote it: a human restores {ref} to the last state commit that verifies"
               f" (e.g. its parent: git push --force {remote} {commit[:12]}^:{ref}; check with automaton --doctor"
               f" --loop {loop} --state-remote {remote})")
    raise CorruptState(f"{head}: {why}; nothing was run. Fix: {fix}")
