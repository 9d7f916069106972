"""What the files in a worktree hold, hashed from disk rather than taken from the index.

The index caches each file's stat data and blob id; an agent can rewrite it so that git status
calls a modified file clean (forged stat data, `--assume-unchanged`, `--skip-worktree`). The
content check below compares every file of HEAD's tree with the file on disk through an index
of automaton's own instead (`worktree_status`).

Why that index cannot be forged: it lives in the loop folder, which the kernel sandbox makes
read-only to every agent process, and it is sealed with the per-user key (`PrivateIndex`),
which the sandbox hides; without the sandbox, forging it takes the key, which would forge the
loop's own state as well. Its stat data cannot be matched by a rewritten file either: git
compares the ctime (`INDEX_CONFIG` insists), which the kernel sets on every write and no
unprivileged process can set back (`utimensat` sets mtime, not ctime); git re-hashes every
entry whose mtime falls in the second the index was written, and `_smudge_ctime_racy` does the
same for the ctime, since git compares whole seconds. The index and the worktree sit on one
filesystem (the worktree is inside the loop folder), so both timestamps come from one clock.
"""

from __future__ import annotations

import hashlib
import os
import struct
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from automaton.core.digest import equal
from automaton.git.errors import DriftError, git_text

DELETED = "deleted"


def blob_id(data: bytes) -> str:
    """git's blob id of `data`: sha1 hex of b"blob <len>\\0" + data (as `git hash-object`)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def worktree_blobs(worktree: Path, paths: list[str]) -> dict[str, str]:
    """{path: blob id of the file now in `worktree`, or "deleted"}. A symlink is hashed as git
    stores it (its target); a folder or unreadable entry gets "unreadable:<kind>" (never equal
    to a recorded blob, so it is never accepted)."""
    found: dict[str, str] = {}
    for rel in paths:
        full = worktree / rel
        try:
            if os.path.islink(full):
                found[rel] = blob_id(os.fsencode(os.readlink(full)))
            elif not os.path.lexists(full):
                found[rel] = DELETED
            elif full.is_file():
                found[rel] = blob_id(full.read_bytes())
            else:
                found[rel] = "unreadable:not-a-file"
        except OSError as exc:
            found[rel] = f"unreadable:{exc.errno}"
    return found


# ---- the worktree against HEAD, through an index only automaton writes --------------------

# Settings that decide what a status on automaton's own index trusts. Given with `-c`, they win
# over every config file of the repository (which the agent can write): the stat check compares
# ctime (which no unprivileged process can set back) besides mtime, size, inode and owner; no
# cache of untracked folders, no split or sparse index (their extra files would live in the
# agent's `.git`), no entry marked assume-unchanged on refresh. fsmonitor is off for every call
# (`automaton.git.harden`).
INDEX_CONFIG: tuple[str, ...] = (
    "core.trustctime=true", "core.checkStat=default", "core.ignoreStat=false", "core.untrackedCache=false",
    "core.splitIndex=false", "core.sparseCheckout=false", "index.sparse=false", "index.version=2",
)


@dataclass(frozen=True)
class PrivateIndex:
    """A git index file automaton keeps for one worktree (`path`, in a folder the agent may not
    write: the loop folder, read-only in the kernel sandbox), and `seal`, which returns the MAC
    (hex) of the index bytes under the user's key. The seal (`<path>.seal`: the tree id the
    index holds and the MAC) is checked before the index is used: an index someone else wrote
    is thrown away, and every file is hashed again."""

    path: Path
    seal: Callable[[bytes], str]


@dataclass(frozen=True)
class WorktreeStatus:
    """The worktree against HEAD's tree, as one `git status` on automaton's own index saw it
    (`worktree_status`); every field a sorted tuple of posix paths relative to the worktree top:
    `changed`, files of the tree whose file on disk differs from the committed one; `untracked`,
    files on disk not in the tree that the status's ignore rules do not ignore (with the
    runner's excludes file given, exactly what `git add -A` with that file would add);
    `ignored`, files on disk not in the tree that those rules ignore."""

    changed: tuple[str, ...]
    untracked: tuple[str, ...]
    ignored: tuple[str, ...]

    @property
    def absent(self) -> list[str]:
        """Every file on disk that is not in the tree, ignored or not, sorted."""
        return sorted((*self.untracked, *self.ignored))


def worktree_status(worktree: Path, tree: str, index: PrivateIndex | None = None, *,
                    excludes_file: Path | None = None) -> WorktreeStatus:
    """The files of `tree` (HEAD's tree id) whose file in `worktree` differs from the committed
    one, and the files on disk that are not in `tree`, split into untracked and ignored
    (`WorktreeStatus`). `excludes_file`: the `core.excludesFile` of the status's ignore rules
    (the runner's commit passes the one its `git add -A` uses, so `untracked` is what that add
    would pick up); None: the repository's own. Which files count as not in `tree` does not
    depend on it.

    Differs: the content as `git hash-object` computes it (with the repository's conversions,
    so a checkout's line-ending conversion is no change), a file turned into a symlink or the
    reverse, a changed symlink target, a file behind a folder that became a symlink, a missing
    file; never a submodule's worktree, which git does not enter (`--ignore-submodules=all`:
    its own config could run a program; a changed gitlink is named by the drift check's tree
    diffs, `automaton.git.drift`). Not in `tree`: every file git would list as
    untracked or ignored, whatever `.gitignore`, `info/exclude` or `core.excludesFile` say.

    The worktree's own index (the agent's to rewrite: stat data, flags) is never read. The
    status runs on `index`: `tree` read into it (`git read-tree --reset`, which keeps the stat data
    of unchanged entries), then refreshed by `git status`, which hashes only the files whose
    stat data (ctime included, `INDEX_CONFIG`) no longer match and writes the new stat data
    back. So a gate hashes what changed since the last one instead of every file. Without
    `index`, a temporary one is used (every file hashed). Raises DriftError/GitMissing when git
    cannot answer.
    """
    if index is None:
        with tempfile.TemporaryDirectory(prefix="automaton-index-") as tmp:
            return _status(worktree, tree, Path(tmp) / "index", None, excludes_file)
    return _status(worktree, tree, index.path, index, excludes_file)


def _status(worktree: Path, tree: str, path: Path, index: PrivateIndex | None,
            excludes_file: Path | None) -> WorktreeStatus:
    env = {"GIT_INDEX_FILE": str(path), "GIT_OPTIONAL_LOCKS": "1"}  # 1: status writes the stat data back
    config = [arg for setting in INDEX_CONFIG for arg in ("-c", setting)]
    if index is None or _trusted_tree(index) != tree:
        git_text(worktree, [*config, "read-tree", "--reset", tree], env=env)
    if excludes_file is not None:
        config += ["-c", f"core.excludesFile={excludes_file}"]
    out = git_text(worktree, [*config, "status", "--porcelain=v1", "-z", "--untracked-files=all",
                              "--ignored=traditional", "--ignore-submodules=all", "--no-renames"], env=env)
    if index is not None:
        _smudge_ctime_racy(index.path, len(tree) // 2)
        _reseal(index, tree)
    found: dict[str, list[str]] = {"??": [], "!!": []}
    changed: list[str] = []
    for entry in out.split("\0"):
        if not entry:
            continue
        if len(entry) < 4 or entry[2] != " ":
            raise DriftError(f"unexpected git status entry {entry[:40]!r}")
        found.get(entry[:2], changed).append(entry[3:])
    return WorktreeStatus(tuple(sorted(changed)), tuple(sorted(found["??"])), tuple(sorted(found["!!"])))


def _smudge_ctime_racy(path: Path, hash_len: int) -> None:
    """Mark every entry of the index at `path` whose ctime falls in the second the index was
    written, or later, as needing a re-hash (its recorded size set to 0, as git itself marks
    "racily clean" entries), and fix the index's checksum.

    git compares timestamps to the second unless built with USE_NSEC (most builds are not),
    and its own racy rule looks at the mtime only, which a file's owner can set back: a file
    whose ctime changed in the second the index was written (a metadata-only change, mtime
    old) could be rewritten in that same second, keeping size and mtime, and still match.
    `hash_len`: bytes of an object id (20 SHA-1, 32 SHA-256).
    """
    try:
        data = path.read_bytes()
        written = path.stat().st_mtime_ns // 1_000_000_000
    except OSError as exc:
        raise DriftError(f"cannot read the index {path}: {exc.strerror}") from None
    # Fast path: no 4-byte big-endian timestamp of this 256-second block (or the next) occurs
    # anywhere in the file, so no entry has a ctime at or after `written`.
    if not any((written >> 8) + k <= 0xFFFFFF and ((written >> 8) + k).to_bytes(3, "big") in data
               for k in (0, 1)):
        return
    if data[:4] != b"DIRC" or int.from_bytes(data[4:8], "big") not in (2, 3):
        raise DriftError(f"{path} is not an index of version 2 or 3")
    head = struct.Struct(f">I{36 + hash_len}xH").unpack_from  # ctime seconds, flags
    buf: bytearray | None = None
    pos, fixed = 12, 40 + hash_len + 2
    for _ in range(int.from_bytes(data[8:12], "big")):
        ctime, flags = head(data, pos)
        start = fixed + 2 if flags & 0x4000 else fixed  # extended flags (version 3)
        length = flags & 0xFFF
        if length == 0xFFF:
            length = data.index(b"\0", pos + start) - pos - start
        if ctime >= written and data[pos + 36:pos + 40] != b"\0\0\0\0":
            buf = buf if buf is not None else bytearray(data)
            buf[pos + 36:pos + 40] = b"\0\0\0\0"
        pos += (start + length + 8) & ~7
    if buf is None:
        return
    if any(buf[-hash_len:]):  # a zero trailer: an index written without its checksum
        buf[-hash_len:] = hashlib.new("sha1" if hash_len == 20 else "sha256", buf[:-hash_len]).digest()
    tmp = path.with_name(path.name + ".smudge.tmp")
    try:
        tmp.write_bytes(bytes(buf))
        os.replace(tmp, path)
    except OSError as exc:
        raise DriftError(f"cannot rewrite the index {path}: {exc.strerror}") from None


def _seal_path(index: PrivateIndex) -> Path:
    return index.path.with_name(index.path.name + ".seal")


def _trusted_tree(index: PrivateIndex) -> str | None:
    """The tree id `index` holds when its seal verifies; otherwise the index and its seal are
    removed (None: start from an empty index)."""
    try:
        words = _seal_path(index).read_text(encoding="ascii").split()
        data = index.path.read_bytes()
    except (OSError, UnicodeDecodeError):
        words, data = [], b""
    if len(words) == 2 and equal(words[1], index.seal(data)):
        return words[0]
    for stale in (index.path, _seal_path(index)):
        try:
            stale.unlink()
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise DriftError(f"cannot remove the unsealed index {stale}: {exc.strerror}") from None
    return None


def _reseal(index: PrivateIndex, tree: str) -> None:
    """Seal the index git just wrote: `<tree> <mac>` in `<path>.seal`, replaced atomically."""
    seal, tmp = _seal_path(index), index.path.with_name(index.path.name + ".seal.tmp")
    try:
        tmp.write_text(f"{tree} {index.seal(index.path.read_bytes())}\n", encoding="ascii")
        os.replace(tmp, seal)
    except OSError as exc:
        raise DriftError(f"cannot seal the index {index.path}: {exc.strerror}") from None
