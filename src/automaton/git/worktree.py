"""The per-loop git worktree.

`ensure_worktree` returns where a tick runs: `<loop_dir>/worktree` on branch `loop/<name>`,
or the project root with the reason (no git, not a repository, worktree add failed, branch
checked out elsewhere, a foreign directory in the way, a locked registration). It never
raises for git's failure, never writes automaton state (the runner records the result; git
must not import store) and never touches a worktree that is not the loop's own.
`commit_all` (the tick's commit) lives in `automaton.git.commit` and is re-exported here.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path

from automaton.git import run_git
from automaton.git.commit import CommitResult, commit_all
from automaton.git.errors import DriftError
from automaton.git.tree import GITLINK, list_tree

__all__ = ["BRANCH_PREFIX", "FALLBACK_KINDS", "IN_PLACE_EXCLUDES", "LOOP_WORKTREE_DIR", "CommitResult",
           "WorktreeResult", "branch_name",
           "commit_all", "ensure_worktree", "list_worktrees", "worktree_path"]

LOOP_WORKTREE_DIR = "worktree"
# A loop without a worktree (`blast_radius.use_worktree` false) ticks in the main checkout,
# where automaton's own folder holds the loop's files: never committed by a tick, never drift.
IN_PLACE_EXCLUDES = ("/.automaton/",)
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
    `git worktree add` ran; cleared_stale: a recorded path no longer existed;
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
    """`<loop_dir>/worktree`, built with pathlib."""
    return loop_dir / LOOP_WORKTREE_DIR


def branch_name(name: str) -> str:
    return f"{BRANCH_PREFIX}{name}"


def list_worktrees(repo: Path) -> list[dict[str, str]] | None:
    """`git worktree list --porcelain` as [{worktree, HEAD, branch, locked?, prunable?}] (the
    main checkout first; `locked` holds the reason, "" when none was given), None on error."""
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


def _missing(entry: dict[str, str]) -> bool:
    return "prunable" in entry or not os.path.lexists(entry["worktree"])


def _lock_note(entry: dict[str, str]) -> str:
    """' (locked: <reason>)' for a locked entry, '' otherwise."""
    if "locked" not in entry:
        return ""
    return f" (locked: {entry['locked'] or 'no reason given'})"


def _where(entry: dict[str, str], main: dict[str, str]) -> str:
    """Where a branch is checked out ("at <path>" or "in the main checkout at <path>"), with
    what a human can do when that worktree's folder is gone."""
    path = entry["worktree"]
    if entry is main:
        return f"in the main checkout at {path}"
    if not _missing(entry):
        return f"at {path}{_lock_note(entry)}"
    steps = (f"git worktree unlock {path} && " if "locked" in entry else "") + f"git worktree remove --force {path}"
    return f"at {path}{_lock_note(entry)}, whose folder is missing; if it is gone for good, run: {steps}"


def _forget_missing(root: Path, entry: dict[str, str]) -> str | None:
    """Drop the registration of the loop's own worktree whose folder is gone; the reason it
    cannot be dropped, or None. Only this one entry: `git worktree remove --force <its path>`
    (git finds it by its exact registered path and, the folder being gone, deletes nothing but
    its `$GIT_COMMON_DIR/worktrees/<id>` record). Never `git worktree prune`, which would also
    forget every other worktree whose folder is away for a while (on a drive not mounted)."""
    path = entry["worktree"]
    if "locked" in entry:
        return (f"{path} is registered with git but its folder is missing, and the entry is locked"
                f" ({entry['locked'] or 'no reason given'}); if it is gone for good, run: git worktree unlock {path}")
    if os.path.lexists(path):  # it came back: never let `remove --force` delete a folder
        return f"{path} reappeared while automaton repaired its registration; run the tick again"
    done = run_git(root, ["worktree", "remove", "--force", path])
    if done.code != 0:
        return f"cannot forget the missing worktree {path}: {(done.err.strip().splitlines() or ['?'])[-1]}"
    return None


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

    use_worktree false -> the project root, no git call. A recorded path that exists and is
    registered with git on `loop/<name>` is reused without `worktree add`. Otherwise:
    `git rev-parse --is-inside-work-tree`; when git still registers the loop's own worktree
    path but its folder is gone, that one entry is dropped (`_forget_missing`; a locked one is
    refused naming `git worktree unlock <path>`), no other worktree is ever touched; then
    `git worktree add --no-checkout <path> loop/<name>` when the branch exists or
    `git worktree add --no-checkout -b loop/<name> <path> <base>` when not, where base is
    `base_branch` if set else the project's HEAD (never a hard-coded `main`), and a checkout
    inside the new worktree (`git reset --hard`, hardened there: its own config decides which
    filter drivers to switch off). A branch checked out elsewhere is reported with where
    (a worktree path, or the main checkout); a non-empty directory at the worktree path that
    git does not know is never deleted.
    """
    root = project_root
    if not use_worktree:
        return WorktreeResult(root, None, None)
    path = worktree_path(loop_dir)
    branch = branch_name(name)
    cleared = recorded_path is not None and not Path(recorded_path).exists()

    refused = _unusable(root, path, cleared)
    if refused is not None:
        return refused
    entries = list_worktrees(root)
    if not entries:
        return _fallback(root, "git worktree list failed", cleared, "failed")
    mine = next((e for e in entries if _same(e["worktree"], path)), None)
    if mine is not None and mine is not entries[0] and not os.path.lexists(path):
        why = _forget_missing(root, mine)
        if why is not None:
            return _fallback(root, why, cleared, "occupied" if "locked" in mine else "failed")
        entries, mine = [e for e in entries if e is not mine], None
    known = _registered(root, path, branch, entries, mine, cleared, base_branch, recorded_base)
    if known is not None:
        return known
    if path.exists():
        if path.is_dir() and not any(path.iterdir()):
            with contextlib.suppress(OSError):
                path.rmdir()  # an empty directory holds nothing to lose
        if path.exists():
            return _fallback(root, f"{path} exists and is not a git worktree; move it away", cleared, "occupied")
    return _add(root, path, branch, base_branch, recorded_base, cleared)


def _unusable(root: Path, path: Path, cleared: bool) -> WorktreeResult | None:
    """The fallback when git is missing, `root` is no repository, or the worktree path is a
    symlink (never followed: it could point at the project itself or anywhere); else None."""
    probe = run_git(root, ["rev-parse", "--is-inside-work-tree"])
    if probe.code == 127:
        return _fallback(root, "git not found on PATH", cleared, "no_git")
    if probe.code != 0 or probe.out.strip() != "true":
        return _fallback(root, f"{root} is not a git repository", cleared, "not_repo")
    if path.is_symlink():
        return _fallback(root, f"{path} is a symlink (to {os.readlink(path)}), not the loop's worktree",
                         cleared, "occupied")
    return None


def _registered(root: Path, path: Path, branch: str, entries: list[dict[str, str]], mine: dict[str, str] | None,
                cleared: bool, base_branch: str | None, recorded_base: str | None) -> WorktreeResult | None:
    """What git's registered worktrees decide: our own worktree reused, or the fallback when our
    path holds another branch or the loop's branch is checked out elsewhere; None: add one."""
    ref = f"refs/heads/{branch}"
    if mine is not None and path.is_dir() and mine.get("branch") == ref:
        base = recorded_base or _merge_base(root, base_branch, branch)
        return WorktreeResult(path, branch, base, cleared_stale=cleared)
    if mine is not None:  # registered at our path but on another branch/detached: not ours to reuse
        return _fallback(root, f"{path} is a worktree on {mine.get('branch', 'a detached HEAD')}, not {branch}",
                         cleared, "occupied")
    elsewhere = next((e for e in entries if e.get("branch") == ref and not _same(e["worktree"], path)), None)
    if elsewhere is not None:
        return _fallback(root, f"branch {branch} is checked out {_where(elsewhere, entries[0])}", cleared,
                         "elsewhere")
    return None


def _add(root: Path, path: Path, branch: str, base_branch: str | None, recorded_base: str | None,
         cleared: bool) -> WorktreeResult:
    """`git worktree add --no-checkout`, then the checkout inside the new worktree."""
    if _commit(root, f"refs/heads/{branch}") is not None:
        added = run_git(root, ["worktree", "add", "--no-checkout", str(path), branch])
        base = recorded_base or _merge_base(root, base_branch, branch)
    else:
        start = base_branch or "HEAD"
        base = _commit(root, start)
        if base is None:
            return _fallback(root, f"base {start!r} is not a commit (set blast_radius.base_branch)", cleared, "failed")
        added = run_git(root, ["worktree", "add", "--no-checkout", "-b", branch, str(path), base])
        if added.code != 0 and _commit(root, f"refs/heads/{branch}") is not None:
            # the branch appeared meanwhile; check it out without -b
            added = run_git(root, ["worktree", "add", "--no-checkout", str(path), branch])
    if added.code != 0:
        detail = (added.err.strip().splitlines() or [f"exit {added.code}"])[-1]
        return _fallback(root, f"git worktree add failed: {detail}", cleared, "failed")
    filled = run_git(path, ["reset", "--hard", "--quiet", "--no-recurse-submodules"])
    if filled.code != 0:
        # the folder is the one git just made: remove it, so no half-filled worktree is reused
        run_git(root, ["worktree", "remove", "--force", str(path)])
        detail = (filled.err.strip().splitlines() or [f"exit {filled.code}"])[-1]
        return _fallback(root, f"checking out {branch} in {path} failed: {detail}", cleared, "failed")
    _fill_submodules(root, path)
    return WorktreeResult(path, branch, base, created=True, cleared_stale=cleared)


def _fill_submodules(root: Path, path: Path) -> None:
    """The new worktree's submodule folders get their commits' files from the project's own
    objects (git/submodules.py): git leaves them empty, and an agent cannot build or test what
    is not there. Best effort: a submodule that cannot be filled stays empty, as before."""
    # lazy: --check-gate loads this module; git.export brings pathspec, which a gate loads only
    # for a worktree with untracked files (git/ignore.py)
    from automaton.git.export import fill_submodules

    head = _commit(path, "HEAD")
    if head is None:
        return
    try:
        links = [e for e in list_tree(root, head).values() if e.mode == GITLINK]
        fill_submodules(root, head, path, links)
    except (DriftError, OSError):
        return


def _merge_base(root: Path, base_branch: str | None, branch: str) -> str | None:
    """The commit an existing `loop/<name>` branched from `base_branch` (or HEAD)."""
    out = run_git(root, ["merge-base", base_branch or "HEAD", branch])
    return out.out.strip() if out.code == 0 and out.out.strip() else None


def _common_dir(repo_root: Path) -> Path | None:
    """The common git folder of the repository at `repo_root`; None when it cannot be read.
    A main checkout's `.git` that is a real folder without a `commondir` file is its own
    common folder (gitrepository-layout(5)): no git process for that (every tick asks).
    Otherwise `git rev-parse --git-common-dir`."""
    dotgit = repo_root / ".git"
    if dotgit.is_dir() and not dotgit.is_symlink() and not os.path.lexists(dotgit / "commondir"):
        return Path(os.path.realpath(dotgit))
    common = run_git(repo_root, ["rev-parse", "--path-format=absolute", "--git-common-dir"])
    return Path(common.out.strip()) if common.code == 0 and common.out.strip() else None


def _entry_of(common: Path, dotgit: Path) -> Path | None:
    """The worktree entry (`<common>/worktrees/<id>`) whose `gitdir` names `dotgit`, or None."""
    for entry in sorted((common / "worktrees").glob("*/gitdir")):
        with contextlib.suppress(OSError):
            if _same(entry.read_text(encoding="utf-8").strip(), dotgit):
                return entry.parent
    return None


def registered(repo_root: Path, worktree: Path) -> bool:
    """Whether the repository at `repo_root` has a worktree entry for the folder `worktree`
    (read from the repository's own `.git`, never from the folder: its `.git` may be missing
    or rewritten). False for a folder of another repository: a loop whose state was recorded
    on another machine names that machine's worktree path."""
    common = _common_dir(repo_root)
    return common is not None and _entry_of(common, worktree / ".git") is not None


def pointer_problem(repo_root: Path, worktree: Path) -> str | None:
    """Why `<worktree>/.git` is not git's own pointer to this worktree's entry in `repo_root`,
    or None when it is. The `.git` file sits inside the worktree, which the agent may write: a
    `.git` rewritten to point at the main repository (or deleted, so that git finds the main
    checkout above it) would make the runner's `git add -A` / `git commit` act on the user's
    branch. The entry itself (`<common dir>/worktrees/<id>/gitdir`) lives in the repository's
    `.git`, which the agent cannot write, so it is the fact this check trusts."""
    dotgit = worktree / ".git"
    if dotgit.is_symlink() or not dotgit.is_file():
        return f"{dotgit} is no longer the file git wrote (removed, a folder or a link)"
    common = _common_dir(repo_root)
    if common is None:
        return f"the repository at {repo_root} cannot be read"
    admin = _entry_of(common, dotgit)
    if admin is None:
        return f"no worktree entry of {repo_root} points at {worktree}"
    try:
        text = dotgit.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return f"{dotgit} cannot be read"
    target = text.removeprefix("gitdir:").strip()
    if not text.startswith("gitdir:") or not _same(target, admin):
        return f"{dotgit} points at {target[:200]!r}, not at its entry {admin}"
    return None
