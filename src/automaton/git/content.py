"""What the files in a worktree hold, hashed from disk rather than taken from the index.

The index caches each file's stat data and blob id; an agent can rewrite it so that git status
calls a modified file clean (forged stat data, `--assume-unchanged`, `--skip-worktree`). The
content check below compares every file of a commit's tree with the file on disk instead.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

from automaton.git.errors import DriftError, git_text
from automaton.git.tree import GITLINK, SYMLINK, Entry, list_tree

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


def _hashable_by_git(path: str) -> bool:
    # `git hash-object --stdin-paths` reads lines and C-unquotes a leading `"`
    return "\n" not in path and not path.startswith('"') and not path.endswith("\r")


def content_changes(worktree: Path, rev: str = "HEAD") -> list[str]:
    """Sorted paths of the tree of `rev` whose file in `worktree` differs from the committed
    one: content (as `git hash-object` with the repository's conversions, so a checkout's
    line-ending conversion is no change), a file turned into a symlink or the reverse, a
    changed symlink target, or a missing file. Submodules are left to `git status`.
    Raises DriftError/GitMissing when git cannot answer.
    """
    changed: list[str] = []
    by_git: list[Entry] = []
    links: dict[str, bool] = {}
    for entry in list_tree(worktree, rev).values():
        if entry.mode == GITLINK:
            continue
        full = os.path.join(worktree, entry.path)
        try:
            st = os.lstat(full)
        except FileNotFoundError:
            changed.append(entry.path)
            continue
        except OSError as exc:  # NotADirectoryError: a parent became a file or a symlink
            if isinstance(exc, NotADirectoryError):
                changed.append(entry.path)
                continue
            raise DriftError(f"cannot read {full}: {exc.strerror}") from None
        if entry.mode == SYMLINK:
            if not stat.S_ISLNK(st.st_mode) or worktree_blobs(worktree, [entry.path])[entry.path] != entry.oid:
                changed.append(entry.path)
        elif not stat.S_ISREG(st.st_mode) or _parent_is_link(worktree, entry.path, links):
            changed.append(entry.path)
        elif _hashable_by_git(entry.path):
            by_git.append(entry)
        elif worktree_blobs(worktree, [entry.path])[entry.path] != entry.oid:
            changed.append(entry.path)
    if by_git:
        ids = git_text(worktree, ["hash-object", "--stdin-paths"],
                       stdin="".join(f"{e.path}\n" for e in by_git)).split()
        if len(ids) != len(by_git):
            raise DriftError(f"git hash-object answered {len(ids)} ids for {len(by_git)} files in {worktree}")
        changed += [e.path for e, oid in zip(by_git, ids, strict=True) if oid != e.oid]
    return sorted(changed)


def _parent_is_link(worktree: Path, rel: str, seen: dict[str, bool]) -> bool:
    """Whether a folder on the way to `rel` is a symlink (the file then lives elsewhere);
    `seen` caches the answer per folder."""
    folder = rel.rpartition("/")[0]
    if not folder:
        return False
    if folder not in seen:
        seen[folder] = _parent_is_link(worktree, folder, seen) or os.path.islink(os.path.join(worktree, folder))
    return seen[folder]
