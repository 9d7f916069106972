"""What a loop's worktree (or, with the folder gone, its branch) changed since its base commit.

"Changed", for `changed_paths`, is the union of:
- committed: the trees of `base_commit` and HEAD differ (`git diff-tree -r --raw -z base HEAD`;
  never a bare branch name, so a repository whose only branch is `master` works; two trees, not
  `base...HEAD`, because a branch reset below its base reverts files a merge-base diff never
  shows);
- staged: the worktree's index differs from HEAD (`git diff-index --cached`: added, removed,
  changed entries, submodules included);
- on disk: every file of HEAD's tree whose file in the worktree differs from the committed one
  (`content.worktree_status`: a status on an index of automaton's own, since the worktree's
  index, which a plain `git status` trusts, is the agent's to rewrite); this covers unstaged
  changes, whatever the agent's index says;
- flagged: every file the index marks assume-unchanged or skip-worktree (`git ls-files -v`);
- untracked: every file on disk that is not in HEAD's tree (the same status, which lists
  untracked and ignored files alike, so no exclude source hides one), minus what the BASE
  commit's `.gitignore` files and `DEFAULT_EXCLUDES` ignore (`ignore.BaseIgnore`), never the
  worktree's own `.gitignore`, `info/exclude` or `core.excludesFile`, all of which the agent
  can write. A file the agent staged is drift whatever the base ignores (it is staged).
Renames count on both sides, so a file moved from outside the scope into it is still drift.

A repository nested in the worktree is never drift to be judged by scope: `changed_paths`
raises `NestedRepository` for a gitlink (mode 160000) that is new or changed since the base
commit, committed or staged, and for an untracked folder git reports as a repository of its
own (`dir/` in the status). No git call here enters one (`automaton.git.harden` switches
submodule recursion off).
Replace refs never apply (`git replace` cannot make HEAD's tree look like the base's): see
`automaton.git.harden`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from automaton.core.gates import out_of_scope
from automaton.git import run_git
from automaton.git.content import DELETED, PrivateIndex, WorktreeStatus, blob_id, worktree_blobs, worktree_status
from automaton.git.errors import (
    DriftError,
    GitMissing,
    first_line,
    git_text,
    nul_fields,
    require_commit,
    require_commit_id,
)
from automaton.git.harden import probe_once
from automaton.git.ignore import DEFAULT_EXCLUDES, BaseIgnore
from automaton.git.nested import NestedRepository
from automaton.git.tree import GITLINK, list_tree

__all__ = ["DEFAULT_EXCLUDES", "DELETED", "DriftError", "GitMissing", "NestedRepository", "PrivateIndex", "Reading",
           "blob_id", "branch_blobs", "branch_changed_paths", "changed_paths", "commit_blobs", "committed_out_of_scope",
           "committed_paths", "flagged_paths", "parse_status_z", "read_changes", "untracked_paths",
           "worktree_blobs"]


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
    # "H " (a plain cached entry) is nearly every line of a big index: skip it before parsing.
    for field in nul_fields(git_text(worktree, ["ls-files", "-v", "-z"])):
        if field.startswith("H ") and len(field) > 2:
            continue
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


@dataclass(frozen=True)
class Reading:
    """One reading of a worktree against its base commit (`read_changes`): what the drift
    check judges, kept so that the runner's commit, the drift check after it and the protected
    paths check share it instead of asking git again.

    Asked: `worktree`, `base_commit` (as given), `excludes`, `branch` (None: not checked),
    `add_excludes` (the runner's excludes file the status used, or None). Found: `head` and
    `tree` (HEAD's commit and tree ids), `base` (the base commit's full id), and sorted tuples
    of posix paths: `committed` (base tree vs HEAD's tree; `committed_links` those that are
    gitlinks now), `staged` (the worktree's index vs HEAD's tree; `staged_links`), `status`
    (the worktree's files vs HEAD's tree, `content.WorktreeStatus`), `flagged`
    (assume-unchanged or skip-worktree entries), `others` (files not in HEAD's tree that
    neither the base commit's `.gitignore` nor `excludes` ignore)."""

    worktree: Path
    base_commit: str
    excludes: tuple[str, ...]
    branch: str | None
    add_excludes: Path | None
    head: str
    tree: str
    base: str
    committed: tuple[str, ...]
    committed_links: tuple[str, ...]
    staged: tuple[str, ...]
    staged_links: tuple[str, ...]
    status: WorktreeStatus
    flagged: tuple[str, ...]
    others: tuple[str, ...]

    def changed(self) -> list[str]:
        """Sorted paths changed since the base commit (`changed_paths`). Raises NestedRepository
        for a new or changed gitlink, or an untracked folder git reports as a repository."""
        nested = [*self.committed_links, *self.staged_links, *(p.rstrip("/") for p in self.others if p.endswith("/"))]
        if nested:
            raise NestedRepository(nested)
        return sorted({*self.committed, *self.staged, *self.status.changed, *self.flagged, *self.others})

    def nothing_to_commit(self) -> bool:
        """Whether `git add -A` with the excludes file `add_excludes` would stage nothing in the
        worktree: its index holds HEAD's tree (no staged entry, intent-to-add ones included,
        and no flag that makes git skip a file), every file of that tree is on disk as
        committed, and no file outside it escapes the add's ignore rules. False when the
        reading was made without `add_excludes` (nothing known about what the add picks up)."""
        return (self.add_excludes is not None and not self.staged and not self.flagged
                and not self.status.changed and not self.status.untracked)


def read_changes(worktree: Path, base_commit: str, *, excludes: tuple[str, ...] = DEFAULT_EXCLUDES,
                 index: PrivateIndex | None = None, branch: str | None = None,
                 add_excludes: Path | None = None) -> Reading:
    """The `Reading` of `worktree` since `base_commit` (arguments as for `changed_paths`;
    `add_excludes`: the `core.excludesFile` the runner's `git add -A` will use, so the
    reading can tell whether that add has anything to stage). Five git processes, and a
    filter-driver probe outside a `probe_once` window that made it already. Raises as
    `changed_paths`, but never NestedRepository (`Reading.changed` does)."""
    require_commit_id(base_commit, "base_commit")
    if not worktree.is_dir():
        raise DriftError(f"worktree {worktree} does not exist")
    with probe_once():  # nothing writes the repository's config during one check (harden.probe_once)
        tree, base, head = _head_facts(worktree, base_commit, branch)
        # Two trees, then the index against a tree: no worktree, so `none` (gitlinks listed)
        # makes git compare object ids only, never enter a submodule.
        # `diff-tree` (two trees, never the worktree) needs no filter-driver probe (git.harden).
        # HEAD as the rev-parse above resolved it: every fact of the reading is of that one commit.
        committed, linked = raw_paths(git_text(worktree, ["diff-tree", "-r", "--raw", "-z", "--no-renames",
                                                          "--ignore-submodules=none", base, head, "--"]))
        staged, staged_links = raw_paths(git_text(worktree, ["diff-index", "--cached", "--raw", "-z", "--no-renames",
                                                             "--ignore-submodules=none", tree]))
        status = worktree_status(worktree, tree, index, excludes_file=add_excludes)
        flagged = flagged_paths(worktree)
        others: list[str] = []
        if status.absent:
            rules = BaseIgnore.from_commit(worktree, base, excludes)
            others = [p for p in status.absent if not rules.ignored(p)]
    return Reading(worktree, base_commit, excludes, branch, add_excludes, head, tree, base,
                   tuple(sorted(set(committed))), tuple(linked), tuple(sorted(set(staged))), tuple(staged_links),
                   status, tuple(sorted(set(flagged))), tuple(others))


def changed_paths(worktree: Path, base_commit: str, *, excludes: tuple[str, ...] = DEFAULT_EXCLUDES,
                  index: PrivateIndex | None = None, branch: str | None = None) -> list[str]:
    """Sorted posix paths, relative to the worktree root, changed since `base_commit` (see the
    module docstring); `excludes`: gitignore patterns of untracked files that are never drift.
    `index`: where automaton keeps its own index of this worktree, so that a check hashes only
    the files changed since the last one (`content.PrivateIndex`); without it every file is
    hashed.

    `branch`: the local branch (`refs/heads/...`) the worktree must be on; DriftError naming
    the branch it is on, or a detached HEAD, otherwise. None: not checked.

    Raises GitMissing when git is not installed; DriftError when the worktree is not the top
    of a git work tree (a deleted `.git` file would make git answer for the enclosing
    checkout), `base_commit` is not a commit, or any git call fails.
    """
    return read_changes(worktree, base_commit, excludes=excludes, index=index, branch=branch).changed()


def raw_paths(text: str) -> tuple[list[str], list[str]]:
    """(paths, paths whose new mode is a gitlink) of `git diff --raw -z --no-renames` output:
    `:<old mode> <new mode> <old id> <new id> <status>` NUL `<path>` NUL, per entry."""
    fields = text.split("\0")
    paths: list[str] = []
    links: list[str] = []
    i = 0
    while i < len(fields):
        meta = fields[i]
        if not meta:
            i += 1
            continue
        parts = meta.split()
        if not meta.startswith(":") or len(parts) != 5 or i + 1 >= len(fields) or not fields[i + 1]:
            raise DriftError(f"unexpected git diff --raw entry {meta[:60]!r}")
        paths.append(fields[i + 1])
        if parts[1] == GITLINK:
            links.append(fields[i + 1])
        i += 2
    return paths, links


def _head_facts(worktree: Path, base_commit: str, branch: str | None) -> tuple[str, str, str]:
    """(HEAD's tree id, the full id of `base_commit`, HEAD's commit id), with `worktree` proved
    the top of its work tree and, given `branch`, HEAD proved to be on it: one `rev-parse` for
    all of it (the facts come in argument order; `--` keeps a file named HEAD from making it
    ambiguous). When that call fails, the questions are asked one by one, so the error names
    the culprit. Raises GitMissing/DriftError."""
    asked = ["rev-parse", "--show-toplevel", "HEAD^{tree}", f"{base_commit}^{{commit}}", "HEAD^{commit}"]
    done = run_git(worktree, [*asked, "--symbolic-full-name", "HEAD", "--"] if branch else [*asked, "--"])
    if done.code == 127:
        raise GitMissing(f"git is not installed ({first_line(done.err)})")
    lines = done.out.split("\n")
    if done.code == 0 and len(lines) == (7 if branch else 6) and lines[-2] == "--" and lines[-1] == "":
        _require_top(worktree, lines[0].strip())
        if branch:
            _require_branch(worktree, branch, lines[4].strip())
        if lines[1] and lines[2] and lines[3]:
            return lines[1], lines[2], lines[3]
    if branch:
        _check_branch(worktree, branch)
    tree = _head_tree(worktree)
    return tree, require_commit(worktree, base_commit, "base_commit"), require_commit(worktree, "HEAD", "HEAD")


def _require_top(worktree: Path, top: str) -> None:
    if not top or os.path.realpath(top) != os.path.realpath(worktree):
        raise DriftError(f"{worktree} is not the top of a git worktree (git answers for {top or 'nothing'})")


def _require_branch(worktree: Path, branch: str, head: str) -> None:
    """DriftError unless `head` (HEAD's full ref name; "HEAD" when detached) is `branch`."""
    if head == "HEAD":
        raise DriftError(f"the worktree {worktree} is on a detached HEAD, not {branch.removeprefix('refs/heads/')}")
    if head != branch:
        raise DriftError(f"the worktree {worktree} is on {head.removeprefix('refs/heads/')},"
                         f" not {branch.removeprefix('refs/heads/')}")


def _check_branch(worktree: Path, branch: str) -> None:
    """`_require_branch` asked of `symbolic-ref` (the path where the one `rev-parse` failed)."""
    head = run_git(worktree, ["symbolic-ref", "-q", "HEAD"])
    if head.code == 127:
        raise GitMissing("git is not installed")
    if head.code == 0:
        _require_branch(worktree, branch, head.out.strip())
    elif run_git(worktree, ["rev-parse", "--verify", "--quiet", "HEAD"]).code == 0:
        _require_branch(worktree, branch, "HEAD")


def _head_tree(worktree: Path) -> str:
    """The tree id of HEAD, asked in the same call that proves `worktree` is the top of its git
    work tree (`rev-parse --show-toplevel`). Raises GitMissing/DriftError."""
    done = run_git(worktree, ["rev-parse", "--show-toplevel", "--verify", "--quiet", "HEAD^{tree}"])
    if done.code == 127:
        raise GitMissing(f"git is not installed ({first_line(done.err)})")
    lines = done.out.split("\n")
    _require_top(worktree, lines[0].strip())
    tree = lines[1].strip() if len(lines) > 1 else ""
    if done.code != 0 or not tree:
        raise DriftError(f"HEAD of {worktree} is not a commit: {first_line(done.err)}")
    return tree


def committed_paths(repo: Path, base_commit: str, commit: str) -> list[str]:
    """Sorted posix paths that differ between the trees of `base_commit` and `commit`
    (`git diff-tree -r --name-only -z --no-renames`): what a commit carries, whatever the worktree
    holds. Raises GitMissing, or DriftError when either is not a commit or git fails."""
    require_commit_id(base_commit, "base_commit")
    base = require_commit(repo, base_commit, "base_commit")
    tip = require_commit(repo, commit, "commit")
    return sorted(set(nul_fields(git_text(repo, ["diff-tree", "-r", "--name-only", "-z", "--no-renames",
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
