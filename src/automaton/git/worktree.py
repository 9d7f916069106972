"""The per-loop git worktree (seed 002 R1–R6, DESIGN §6 step 3).

`ensure_worktree` returns where a tick runs: `<loop_dir>/worktree` on branch `loop/<name>`,
or the project root with the reason (the seed 002 R2 fallback: no git, not a repository,
worktree add failed, branch checked out elsewhere, a foreign directory in the way). It never
raises for git's failure and never writes automaton state: the runner records the result
(git must not import store, DESIGN §10).
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path

from automaton.git import run_git

LOOP_WORKTREE_DIR = "worktree"
BRANCH_PREFIX = "loop/"
# Why ensure_worktree fell back. "no_git" / "not_repo": no repository to make a worktree in;
# "occupied": something that is not our worktree sits at the path (a folder, a file, a symlink,
# a worktree on another branch or a detached HEAD); "elsewhere": loop/<name> is checked out at
# another path; "failed": git itself failed (worktree list/add, an unusable base).
FALLBACK_KINDS = ("no_git", "not_repo", "occupied", "elsewhere", "failed")


@dataclass(frozen=True)
class WorktreeResult:
    """path: cwd of the tick (absolute); branch: `loop/<name>` or None in the main checkout;
    base_commit: the commit the worktree's changes are measured from (40 hex) or None;
    fallback: why the tick runs in the main checkout (None when it does not, and None when
    `use_worktree` is false: that is configuration, not a fallback); created: a
    `git worktree add` ran; cleared_stale: a recorded path no longer existed (seed 002 R5);
    kind: what kind of fallback, one of FALLBACK_KINDS (None without a fallback)."""

    path: Path
    branch: str | None
    base_commit: str | None
    fallback: str | None = None
    created: bool = False
    cleared_stale: bool = False
    kind: str | None = None

    @property
    def in_worktree(self) -> bool:
        return self.branch is not None


def worktree_path(loop_dir: Path) -> Path:
    """`<loop_dir>/worktree`, built with pathlib (seed 002 R6)."""
    return loop_dir / LOOP_WORKTREE_DIR


def branch_name(name: str) -> str:
    return f"{BRANCH_PREFIX}{name}"


def list_worktrees(repo: Path) -> list[dict[str, str]] | None:
    """`git worktree list --porcelain` as [{worktree, HEAD, branch, prunable?}], None on error."""
    out = run_git(repo, ["worktree", "list", "--porcelain"])
    if out.code != 0:
        return None
    entries: list[dict[str, str]] = []
    for line in out.out.splitlines():
        key, _, value = line.partition(" ")
        if key == "worktree":
            entries.append({"worktree": value})
        elif entries and key:
            entries[-1][key] = value
    return entries


def _same(a: str | Path, b: Path) -> bool:
    try:
        return Path(a).resolve() == b.resolve()
    except OSError:
        return False


def _commit(repo: Path, ref: str) -> str | None:
    out = run_git(repo, ["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"])
    return out.out.strip() if out.code == 0 and out.out.strip() else None


def _fallback(root: Path, reason: str, cleared: bool, kind: str) -> WorktreeResult:
    return WorktreeResult(root, None, None, fallback=reason, cleared_stale=cleared, kind=kind)


def ensure_worktree(
    project_root: Path,
    loop_dir: Path,
    name: str,
    *,
    use_worktree: bool = True,
    base_branch: str | None = None,
    recorded_path: str | None = None,
    recorded_base: str | None = None,
) -> WorktreeResult:
    """Make sure the loop's worktree exists and return where the tick runs.

    use_worktree false -> the project root, no git call (seed 002 R1). A recorded path that
    exists and is registered with git on `loop/<name>` is reused without `worktree add`.
    Otherwise: `git rev-parse --is-inside-work-tree`, `git worktree prune` (forget
    registered-but-missing worktrees), then `git worktree add <path> loop/<name>` when the
    branch exists or `git worktree add -b loop/<name> <path> <base>` when not, where base is
    `base_branch` if set else the project's HEAD (never a hard-coded `main`). A branch
    checked out elsewhere is reported with that path from `git worktree list --porcelain`; a
    non-empty directory at the worktree path that git does not know is never deleted.
    """
    root = project_root
    if not use_worktree:
        return WorktreeResult(root, None, None)
    path = worktree_path(loop_dir)
    branch = branch_name(name)
    cleared = recorded_path is not None and not Path(recorded_path).exists()

    probe = run_git(root, ["rev-parse", "--is-inside-work-tree"])
    if probe.code == 127:
        return _fallback(root, "git not found on PATH", cleared, "no_git")
    if probe.code != 0 or probe.out.strip() != "true":
        return _fallback(root, f"{root} is not a git repository", cleared, "not_repo")
    if path.is_symlink():  # never followed: it could point at the project itself or anywhere
        return _fallback(root, f"{path} is a symlink (to {os.readlink(path)}), not the loop's worktree",
                         cleared, "occupied")
    run_git(root, ["worktree", "prune"])  # registered-but-missing entries are repaired, not trusted
    entries = list_worktrees(root)
    if entries is None:
        return _fallback(root, "git worktree list failed", cleared, "failed")
    ref = f"refs/heads/{branch}"
    mine = next((e for e in entries if _same(e["worktree"], path)), None)
    elsewhere = next((e for e in entries if e.get("branch") == ref and not _same(e["worktree"], path)), None)
    if mine is not None and path.is_dir() and mine.get("branch") == ref:
        base = recorded_base or _merge_base(root, base_branch, branch)
        return WorktreeResult(path, branch, base, cleared_stale=cleared)
    if mine is not None:  # registered at our path but on another branch/detached: not ours to reuse
        return _fallback(root, f"{path} is a worktree on {mine.get('branch', 'a detached HEAD')}, not {branch}",
                         cleared, "occupied")
    if elsewhere is not None:
        return _fallback(root, f"branch {branch} is checked out at {elsewhere['worktree']}", cleared, "elsewhere")
    if path.exists():
        if path.is_dir() and not any(path.iterdir()):
            with contextlib.suppress(OSError):
                path.rmdir()  # an empty directory holds nothing to lose
        if path.exists():
            return _fallback(root, f"{path} exists and is not a git worktree; move it away", cleared, "occupied")

    if _commit(root, f"refs/heads/{branch}") is not None:
        added = run_git(root, ["worktree", "add", str(path), branch])
        base = recorded_base or _merge_base(root, base_branch, branch)
    else:
        start = base_branch or "HEAD"
        base = _commit(root, start)
        if base is None:
            return _fallback(root, f"base {start!r} is not a commit (set blast_radius.base_branch)", cleared, "failed")
        added = run_git(root, ["worktree", "add", "-b", branch, str(path), base])
        if added.code != 0 and _commit(root, f"refs/heads/{branch}") is not None:
            # seed 002 R4: the branch appeared meanwhile; check it out without -b
            added = run_git(root, ["worktree", "add", str(path), branch])
    if added.code != 0:
        detail = (added.err.strip().splitlines() or [f"exit {added.code}"])[-1]
        return _fallback(root, f"git worktree add failed: {detail}", cleared, "failed")
    return WorktreeResult(path, branch, base, created=True, cleared_stale=cleared)


def _merge_base(root: Path, base_branch: str | None, branch: str) -> str | None:
    """The commit an existing `loop/<name>` branched from `base_branch` (or HEAD)."""
    out = run_git(root, ["merge-base", base_branch or "HEAD", branch])
    return out.out.strip() if out.code == 0 and out.out.strip() else None


# Used only when the repository has no identity configured, so a tick's work is never lost
# to "Please tell me who you are".
FALLBACK_IDENTITY = ("-c", "user.name=automaton", "-c", "user.email=automaton@localhost")


def commit_all(worktree: Path, message: str) -> tuple[str | None, str | None]:
    """Stage everything in `worktree` and commit it as `message` (hooks skipped: the work
    must not be lost to a failing pre-commit hook). Returns (commit sha or None when there
    was nothing to commit, error line or None)."""
    added = run_git(worktree, ["add", "-A"])
    if added.code != 0:
        return None, f"git add failed: {added.err.strip()[-200:]}"
    if run_git(worktree, ["diff", "--cached", "--quiet"]).code == 0:
        return None, None
    ident: tuple[str, ...] = ()
    if run_git(worktree, ["config", "user.email"]).code != 0:
        ident = FALLBACK_IDENTITY
    done = run_git(worktree, [*ident, "commit", "-q", "--no-verify", "-m", message])
    if done.code != 0:
        return None, f"git commit failed: {(done.err or done.out).strip()[-200:]}"
    sha = run_git(worktree, ["rev-parse", "HEAD"])
    return (sha.out.strip() or None), None
