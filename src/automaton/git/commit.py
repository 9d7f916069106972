"""The runner's own commit of a tick's work: everything in the worktree but build and test
artefacts, no hook, a known identity, and a one-line fix for the human when it cannot be made."""

from __future__ import annotations

import contextlib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from automaton.git import GIT_TIMEOUT_S, run_git
from automaton.git.errors import FULL_COMMIT_ID, first_line
from automaton.git.harden import UnsafeConfig, git_env, repo_config
from automaton.git.ignore import DEFAULT_EXCLUDES
from automaton.git.locks import clear_stale_lock

# Used for author and committer alike unless both name and email are known for both roles,
# so a tick's work is never lost to "Please tell me who you are".
FALLBACK_NAME, FALLBACK_EMAIL = "automaton", "automaton@localhost"
_ROLES = ("AUTHOR", "COMMITTER")


@dataclass(frozen=True)
class CommitResult:
    """sha: the new commit (40 hex) or None; error: one line saying what failed, or None; fix:
    one line telling the human what to do about it, or None; cleared_lock: the stale
    `index.lock` this call removed, or None; head: HEAD's commit id as read before `git add`
    (so a caller that committed nothing knows the tip without asking git again), None when
    HEAD is unborn or git could not say. Nothing to commit = (None, None, None, ..., head)."""

    sha: str | None
    error: str | None
    fix: str | None
    cleared_lock: str | None = None
    head: str | None = None  # HEAD's commit id (hex) before the commit, None when unborn or not asked yet


def commit_identity(worktree: Path) -> dict[str, str]:
    """GIT_AUTHOR_NAME/EMAIL and GIT_COMMITTER_NAME/EMAIL for the commit: the user's, when
    name and email are both known for both roles (from those variables, else `user.name` /
    `user.email` read with the user's own system and global config); else automaton's for
    all four, never a mix."""
    config = {"user.name": "", "user.email": ""}
    # One process for both keys: `key NL value NUL` per value, in config order, so the last one
    # wins as with `git config --get` (exit 1: neither is set).
    got = run_git(worktree, ["config", "--null", "--get-regexp", r"^user\.(name|email)$"], user_config=True)
    if got.code == 0:
        for entry in got.out.split("\0"):
            key, _, value = entry.partition("\n")
            if key in config:
                config[key] = value.strip()
    ident = {}
    for role in _ROLES:
        ident[f"GIT_{role}_NAME"] = os.environ.get(f"GIT_{role}_NAME", "").strip() or config["user.name"]
        ident[f"GIT_{role}_EMAIL"] = os.environ.get(f"GIT_{role}_EMAIL", "").strip() or config["user.email"]
    if all(ident.values()):
        return ident
    return {f"GIT_{role}_{field}": value for role in _ROLES
            for field, value in (("NAME", FALLBACK_NAME), ("EMAIL", FALLBACK_EMAIL))}


def _git_dirs(worktree: Path) -> tuple[list[Path], str | None] | None:
    """([git dir, common dir, worktree top] as absolute paths, HEAD's commit id or None when
    HEAD is unborn); None when git cannot say. One git process (two for an unborn HEAD)."""
    asked = ["rev-parse", "--path-format=absolute", "--git-dir", "--git-common-dir", "--show-toplevel"]
    out = run_git(worktree, [*asked, "HEAD^{commit}"])
    lines = out.out.splitlines()
    if out.code == 0 and len(lines) == 4 and FULL_COMMIT_ID.match(lines[3]):
        return [Path(line) for line in lines[:3]], lines[3]
    out = run_git(worktree, asked)  # an unborn HEAD fails the whole call: ask for the folders alone
    lines = out.out.splitlines()
    return ([Path(line) for line in lines], None) if out.code == 0 and len(lines) == 3 else None


def _fix_for(err: str, lock: Path | None, worktree: Path, kept: str | None) -> str:
    if "index.lock" in err and lock is not None:
        why = f" (not removed automatically: {kept})" if kept else ""
        return f"remove {lock} after checking that no git runs in {worktree}{why}"
    if "email" in err.lower() and ("ident" in err.lower() or "tell me who you are" in err.lower()):
        return f"set user.email in the repository: git -C {worktree} config user.email you@example.com"
    if "ident" in err.lower() or "tell me who you are" in err.lower() or "disallowed characters" in err:
        return f"set user.name and user.email in the repository: git -C {worktree} config user.name 'Your Name'"
    return f"run git status in {worktree} and fix what it reports, then the next tick commits"


def excludes_file(worktree: Path, folder: Path, last: tuple[str, ...] = ()) -> Path:
    """A `core.excludesFile` for the runner's `git add -A`: DEFAULT_EXCLUDES, then the patterns
    of the repository's own `core.excludesFile` when it names a readable file (later lines win,
    so the repository's negations still apply), then `last` (which no negation undoes). Written
    into `folder` (as `excludes`); returns its path.

    The repository's setting comes from the config read that also finds its filter drivers
    (`harden.repo_config`: one process per `probe_once` window); a value that needs git's own
    path expansion (`~`, `%(prefix)`) is asked of `git config --path` as well."""
    lines = list(DEFAULT_EXCLUDES)
    own = _own_excludes(worktree)
    if own:
        with contextlib.suppress(OSError):  # unreadable: git would not read it either
            lines += (worktree / own).read_text(encoding="utf-8", errors="surrogateescape").splitlines()
    lines += last
    path = folder / "excludes"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8", errors="surrogateescape")
    return path


def _own_excludes(worktree: Path) -> str | None:
    """The repository's `core.excludesFile`, expanded as `git config --path` would; None: unset."""
    try:
        value = repo_config(str(worktree), git_env(), GIT_TIMEOUT_S).excludes_file
    except UnsafeConfig:  # the add refuses for the same reason: ask git directly all the same
        value = "~"
    if value is None:
        return None
    if not value.startswith(("~", "%(")):
        return value.strip() or None
    own = run_git(worktree, ["config", "--path", "--get", "core.excludesFile"])
    return (own.out.strip() or None) if own.code == 0 else None


def commit_all(worktree: Path, message: str, *, also_exclude: tuple[str, ...] = (),
               excludes: Path | None = None) -> CommitResult:
    """Stage everything in `worktree` (`git add -A`) but build and test artefacts, and commit it
    as `message`. `also_exclude`: gitignore patterns of untracked files left out as well (a
    loop ticking in the main checkout leaves out `/.automaton/`). `excludes`: the excludes
    file `excludes_file` wrote for this worktree already (then `also_exclude` is in it and is
    not used here); None: one is written for this call.

    Left out: untracked files matching `automaton.git.ignore.DEFAULT_EXCLUDES` (bytecode, tool
    caches, build output, `node_modules/` …) that the project's `.gitignore` misses, given to
    `git add` as its `core.excludesFile`: like every ignore rule it never hides a change to a
    tracked file, and the project's `.gitignore` (negations included) and `info/exclude` rank
    above it. The drift check ignores the same patterns, so what is left out is never drift.

    No hook runs (the hardening in `automaton.git.harden`: the work is never lost to a failing
    or hostile hook, and a post-commit hook cannot act after the commit). A stale
    `index.lock` is cleared first when `automaton.git.locks` proves it stale; otherwise git's
    own "File exists" message is returned with the fix. Never raises for git's failure.
    """
    dirs = _git_dirs(worktree)
    if dirs is None:
        return CommitResult(None, f"git cannot find the repository of {worktree}",
                            f"check that {worktree} is the loop's git worktree (git -C {worktree} status)")
    (git_dir, common, top), head = dirs
    lock = git_dir / "index.lock"
    roots = [top, git_dir, common] + ([common.parent] if common.name == ".git" else [])
    check = clear_stale_lock(lock, roots)
    cleared = str(lock) if check.cleared else None

    def failed(step: str, err: str) -> CommitResult:
        return CommitResult(None, f"git {step} failed: {first_line(err)}", _fix_for(err, lock, worktree, check.why),
                            cleared, head)

    with tempfile.TemporaryDirectory(prefix="automaton-commit-") as scratch:
        excluded = excludes or excludes_file(worktree, Path(scratch), also_exclude)
        added = run_git(worktree, ["-c", f"core.excludesFile={excluded}", "add", "-A"])
    if added.code != 0:
        return failed("add", added.err or added.out)
    staged = run_git(worktree, ["diff", "--cached", "--quiet"])
    if staged.code == 0:
        return CommitResult(None, None, None, cleared, head)
    if staged.code != 1:
        return failed("diff --cached", staged.err)
    done = run_git(worktree, ["commit", "-q", "--no-verify", "-m", message], env=commit_identity(worktree))
    if done.code != 0:
        return failed("commit", done.err or done.out)
    sha = run_git(worktree, ["rev-parse", "--verify", "HEAD"])
    if sha.code != 0 or not sha.out.strip():
        return failed("rev-parse HEAD", sha.err)
    return CommitResult(sha.out.strip(), None, None, cleared, head)
