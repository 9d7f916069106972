"""What a loop's worktree (or, with the folder gone, its branch) changed since its base commit
(DESIGN §5 gate 5: drift).

"Changed" = differs between the `base_commit` tree and HEAD's (`git diff --name-only -z base HEAD`,
never a bare branch name: a repo whose only branch is `master` must work; two trees, not
`base...HEAD`, because a branch reset below its base reverts files that a merge-base diff
never shows) + staged + unstaged + untracked
(`git status --porcelain=v1 -z --untracked-files=all`, plus
`git ls-files --others -z --exclude-per-directory=.gitignore`: only the project's own
`.gitignore` files hide a file, never `$GIT_COMMON_DIR/info/exclude` or `core.excludesFile`,
which an agent can append to without touching the worktree). Renames count on both sides, so a
file moved from outside the scope into it is still drift.
Sources: git-diff(1) "git diff <commit> <commit>" (the changes between two arbitrary commits);
git-status(1) "Porcelain Format Version 1" and "-z" (NUL-terminated, unquoted paths; a rename
or copy entry carries a second NUL-terminated path); git-ls-files(1) "--others",
"--exclude-per-directory" (without `--exclude-standard` neither info/exclude nor
core.excludesFile applies); git-hash-object(1) / gitformat-object: a blob id is
sha1(b"blob <len>\0" + content).
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

from automaton.git import run_git

_COMMIT = re.compile(r"^[0-9a-fA-F]{7,64}$")


class GitMissing(Exception):
    """git is not installed: the drift gate is skipped with a warning (seed 000 R4)."""


class DriftError(Exception):
    """git is installed but the changes cannot be computed: the drift gate halts, never "0 files"."""


def _first_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[0] if lines else "no message"


def _git(worktree: Path, args: list[str]) -> str:
    done = run_git(worktree, args)
    if done.code == 127:
        raise GitMissing(f"git is not installed ({_first_line(done.err)})")
    if done.code != 0:
        raise DriftError(f"git {' '.join(args[:2])} failed in {worktree} (exit {done.code}): {_first_line(done.err)}")
    return done.out


def _nul_fields(text: str) -> list[str]:
    return [f for f in text.split("\0") if f]


def parse_status_z(text: str) -> list[str]:
    """Paths of `git status --porcelain=v1 -z` output; both paths of a rename/copy entry."""
    fields = text.split("\0")
    paths: list[str] = []
    i = 0
    while i < len(fields):
        entry = fields[i]
        i += 1
        if not entry:
            continue
        if len(entry) < 4 or entry[2] != " ":
            raise DriftError(f"unexpected git status entry {entry[:40]!r}")
        xy, path = entry[:2], entry[3:]
        paths.append(path)
        if "R" in xy or "C" in xy:  # the other side of the rename follows as its own field
            if i >= len(fields) or not fields[i]:
                raise DriftError(f"git status rename entry {entry[:40]!r} lacks its source path")
            paths.append(fields[i])
            i += 1
    return paths


def changed_paths(worktree: Path, base_commit: str) -> list[str]:
    """Sorted posix paths, relative to the worktree root, changed since `base_commit`.

    Raises GitMissing when git is not installed; DriftError when the worktree is not the top
    of a git work tree (a deleted `.git` file would make git answer for the enclosing
    checkout), `base_commit` is not a commit, or any git call fails.
    """
    if not _COMMIT.match(base_commit or ""):
        raise DriftError(f"base_commit {base_commit!r} is not a commit id")
    if not worktree.is_dir():
        raise DriftError(f"worktree {worktree} does not exist")
    top = _git(worktree, ["rev-parse", "--show-toplevel"]).strip()
    if not top or os.path.realpath(top) != os.path.realpath(worktree):
        raise DriftError(f"{worktree} is not the top of a git worktree (git answers for {top or 'nothing'})")
    try:
        _git(worktree, ["rev-parse", "--verify", "--quiet", f"{base_commit}^{{commit}}"])
    except DriftError:
        raise DriftError(f"base_commit {base_commit} is not a commit of the worktree {worktree}") from None
    committed = _nul_fields(_git(worktree, ["diff", "--name-only", "-z", "--no-renames", base_commit, "HEAD"]))
    status = parse_status_z(_git(worktree, ["status", "--porcelain=v1", "-z", "--untracked-files=all"]))
    others = _nul_fields(_git(worktree, ["ls-files", "--others", "-z", "--exclude-per-directory=.gitignore"]))
    return sorted(set(committed) | set(status) | set(others))


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


def branch_blobs(repo: Path, branch: str, paths: list[str]) -> dict[str, str]:
    """{path: blob id at the tip of local branch `branch`, or "deleted"} (`git ls-tree -z`)."""
    found = {rel: DELETED for rel in paths}
    if not paths:
        return found
    out = _git(repo, ["ls-tree", "-z", "--full-tree", f"refs/heads/{branch}", "--", *paths])
    for entry in _nul_fields(out):
        meta, _, rel = entry.partition("\t")
        parts = meta.split()
        if rel in found and len(parts) == 3:
            found[rel] = parts[2] if parts[1] == "blob" else f"unreadable:{parts[1]}"
    return found


def branch_changed_paths(repo: Path, base_commit: str, branch: str) -> list[str]:
    """Sorted posix paths, relative to the repository root, that differ between the trees of
    `base_commit` and the tip of local branch `branch` (`git diff --name-only -z --no-renames
    <base> refs/heads/<branch>`, two trees as in `changed_paths`), asked of the main repository.

    For a loop whose worktree folder is gone while `loop/<name>` still holds its commits: only
    committed changes exist then. Raises GitMissing, or DriftError when the branch or the base
    is not a commit or git fails.
    """
    if not _COMMIT.match(base_commit or ""):
        raise DriftError(f"base_commit {base_commit!r} is not a commit id")
    ref = f"refs/heads/{branch}"
    for what, rev in (("branch", ref), ("base_commit", base_commit)):
        try:
            _git(repo, ["rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"])
        except DriftError:
            raise DriftError(f"{what} {rev} is not a commit of the repository {repo}") from None
    return sorted(set(_nul_fields(_git(repo, ["diff", "--name-only", "-z", "--no-renames", base_commit, ref]))))
