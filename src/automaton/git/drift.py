"""What a loop's worktree (or, with the folder gone, its branch) changed since its base commit.

"Changed", for `changed_paths`, is the union of:
- committed: the trees of `base_commit` and HEAD differ (`git diff --name-only -z base HEAD`;
  never a bare branch name, so a repository whose only branch is `master` works; two trees, not
  `base...HEAD`, because a branch reset below its base reverts files a merge-base diff never
  shows);
- staged or unstaged, as `git status --porcelain=v1 -z` reports them (submodules included);
- on disk: every file of HEAD's tree hashed from the worktree (`content.content_changes`), since
  the index that `git status` trusts is the agent's to rewrite;
- flagged: every file the index marks assume-unchanged or skip-worktree (`git ls-files -v`);
- untracked: `git ls-files --others -z` with no exclude source at all, minus what the BASE
  commit's `.gitignore` files and `DEFAULT_EXCLUDES` ignore (`ignore.BaseIgnore`), never the
  worktree's own `.gitignore`, `info/exclude` or `core.excludesFile`, all of which the agent
  can write.
Renames count on both sides, so a file moved from outside the scope into it is still drift.
Replace refs never apply (`git replace` cannot make HEAD's tree look like the base's): see
`automaton.git.harden`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from automaton.core.gates import out_of_scope
from automaton.git.content import DELETED, blob_id, content_changes, worktree_blobs
from automaton.git.errors import (
    DriftError,
    GitMissing,
    git_text,
    nul_fields,
    require_commit,
    require_commit_id,
)
from automaton.git.ignore import DEFAULT_EXCLUDES, BaseIgnore
from automaton.git.tree import list_tree

__all__ = ["DEFAULT_EXCLUDES", "DELETED", "DriftError", "GitMissing", "blob_id", "branch_blobs",
           "branch_changed_paths", "changed_paths", "commit_blobs", "committed_out_of_scope",
           "committed_paths", "flagged_paths", "parse_status_z", "untracked_paths", "worktree_blobs"]


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


def flagged_paths(worktree: Path) -> list[str]:
    """Index entries marked assume-unchanged (a lowercase `git ls-files -v` tag) or
    skip-worktree (`S`): git status never looks at them, so they always count as changed."""
    found = []
    for field in nul_fields(git_text(worktree, ["ls-files", "-v", "-z"])):
        tag, _, path = field.partition(" ")
        if len(tag) != 1 or not path:
            raise DriftError(f"unexpected git ls-files -v entry {field[:40]!r}")
        if tag.islower() or tag == "S":
            found.append(path)
    return found


def untracked_paths(worktree: Path, base_commit: str, *, excludes: tuple[str, ...] = DEFAULT_EXCLUDES) -> list[str]:
    """Files not in the index, minus those the base commit's `.gitignore` files or `excludes`
    (gitignore patterns) ignore. A nested repository shows as its folder with a trailing `/`."""
    others = nul_fields(git_text(worktree, ["ls-files", "--others", "-z"]))
    if not others:
        return []
    rules = BaseIgnore.from_commit(worktree, base_commit, excludes)
    return [p for p in others if not rules.ignored(p)]


def changed_paths(worktree: Path, base_commit: str, *, excludes: tuple[str, ...] = DEFAULT_EXCLUDES) -> list[str]:
    """Sorted posix paths, relative to the worktree root, changed since `base_commit` (see the
    module docstring); `excludes`: gitignore patterns of untracked files that are never drift.

    Raises GitMissing when git is not installed; DriftError when the worktree is not the top
    of a git work tree (a deleted `.git` file would make git answer for the enclosing
    checkout), `base_commit` is not a commit, or any git call fails.
    """
    require_commit_id(base_commit, "base_commit")
    if not worktree.is_dir():
        raise DriftError(f"worktree {worktree} does not exist")
    top = git_text(worktree, ["rev-parse", "--show-toplevel"]).strip()
    if not top or os.path.realpath(top) != os.path.realpath(worktree):
        raise DriftError(f"{worktree} is not the top of a git worktree (git answers for {top or 'nothing'})")
    require_commit(worktree, base_commit, "base_commit")
    committed = nul_fields(git_text(worktree, ["diff", "--name-only", "-z", "--no-renames",
                                               "--ignore-submodules=none", base_commit, "HEAD"]))
    status = parse_status_z(git_text(worktree, ["status", "--porcelain=v1", "-z", "--untracked-files=no",
                                                "--ignore-submodules=none"]))
    on_disk = content_changes(worktree, "HEAD")
    flagged = flagged_paths(worktree)
    others = untracked_paths(worktree, base_commit, excludes=excludes)
    return sorted(set(committed) | set(status) | set(on_disk) | set(flagged) | set(others))


def committed_paths(repo: Path, base_commit: str, commit: str) -> list[str]:
    """Sorted posix paths that differ between the trees of `base_commit` and `commit`
    (`git diff --name-only -z --no-renames`): what a commit carries, whatever the worktree
    holds. Raises GitMissing, or DriftError when either is not a commit or git fails."""
    require_commit_id(base_commit, "base_commit")
    base = require_commit(repo, base_commit, "base_commit")
    tip = require_commit(repo, commit, "commit")
    return sorted(set(nul_fields(git_text(repo, ["diff", "--name-only", "-z", "--no-renames",
                                                 "--ignore-submodules=none", base, tip]))))


def commit_blobs(repo: Path, rev: str, paths: list[str]) -> dict[str, str]:
    """{path: blob id in the tree of `rev`, or "deleted"}; a submodule gets "unreadable:commit"."""
    found = dict.fromkeys(paths, DELETED)
    if not paths:
        return found
    for rel, entry in list_tree(repo, rev, paths).items():
        if rel in found:
            found[rel] = "unreadable:commit" if entry.mode == "160000" else entry.oid
    return found


def committed_out_of_scope(repo: Path, base_commit: str, commit: str, file_scope: Iterable[str],
                           accepted: Iterable[str] = ()) -> list[str]:
    """Sorted paths `commit` changed since `base_commit` outside `file_scope` (gitignore
    patterns), minus `accepted` entries (`path@blob`) whose blob is the one in `commit`: the
    drift check right after the runner's own commit. Raises as `committed_paths`."""
    files = committed_paths(repo, base_commit, commit)
    scope, ok = list(file_scope), list(accepted)
    outside = out_of_scope(files, scope, ())
    return out_of_scope(outside, scope, ok, commit_blobs(repo, commit, outside).items()) if ok else outside


def branch_blobs(repo: Path, branch: str, paths: list[str]) -> dict[str, str]:
    """{path: blob id at the tip of local branch `branch`, or "deleted"}."""
    return commit_blobs(repo, f"refs/heads/{branch}", paths)


def branch_changed_paths(repo: Path, base_commit: str, branch: str) -> list[str]:
    """Sorted posix paths, relative to the repository root, that differ between the trees of
    `base_commit` and the tip of local branch `branch`, asked of the main repository.

    For a loop whose worktree folder is gone while `loop/<name>` still holds its commits: only
    committed changes exist then. Raises GitMissing, or DriftError when the branch or the base
    is not a commit or git fails.
    """
    require_commit_id(base_commit, "base_commit")
    ref = f"refs/heads/{branch}"
    require_commit(repo, ref, "branch")
    return committed_paths(repo, base_commit, ref)
