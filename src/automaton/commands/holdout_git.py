"""A loop's holdout tests and git (SECURITY.md S50): keep them out of it, and find them in it.

The sandbox hides `<loop folder>/<roles.verify.holdout>` from every role (runner/freeze.py), but
a file git tracks is in the trees of the commits that hold it: the loop's worktree, made from
the loop branch, then holds the holdout in plain sight, and any worktree of the repository can
`git show` it (they share one object store). Two parts:

- `exclude_holdout` names the holdout folder in the repository's `info/exclude` (the mechanism
  `commands.excludes` already uses for the loop runtime files) so that `git add .` or `git add
  -A` never picks it up. Not a `.gitignore` in the loop folder: loop.json and the prompts there
  are the project's to commit, and a committed `.gitignore` would be one more file the human
  has to keep; a holdout loop ticks on one machine (it may not use a state remote), so the
  checkout that holds the holdout is the one whose `info/exclude` counts. A convenience, not
  the brake: `git add -f` and `git commit -a` of an already tracked file pass it.
- `exposed` is the brake: the holdout files whose exact content a commit the agent can reach
  holds under the holdout folder (the base commit, the loop branch's tip, the main checkout's
  HEAD). It reads the commits' trees (`git ls-tree`), facts of the object store, not of any
  file the agent writes. The tick halts `human_intervention` (`holdout_committed: …`) before
  the worktree is made and before anything is charged; `--doctor` names it as a problem.

Content, not path: once a human rotated the tests (new content at the same path), the old
tracked version no longer gives the new tests away, and a recorded base commit (which cannot
be rewritten) stops halting the loop. The exact copy of a current test anywhere under the
holdout folder of those commits is what exposes it.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from automaton.commands.excludes import exclude
from automaton.core.loopconfig import LoopConfig
from automaton.core.loopstate import LoopState
from automaton.git import run_git
from automaton.store.frozen_tests import HOLDOUT_COMMITTED
from automaton.store.layout import Project
from automaton.store.loops import Loop

EXCLUDE_HEADER = "# automaton holdout tests: never committed (SECURITY.md S50)"
_GLOB = "\\*?[ "  # characters a gitignore pattern would read as glob or trim; escaped with a backslash
_SHOWN = 5

__all__ = ["HOLDOUT_COMMITTED", "Exposure", "detail", "exclude_holdout", "exposed", "holdout_pattern",
           "reachable_commits", "steps", "what"]


@dataclass(frozen=True)
class Exposure:
    """paths: repository-relative paths under the holdout folder whose content is that of a
    current holdout file, sorted; where: the commits that hold them, as `label abbrev`
    (`base commit 1a2b3c4d5e6f`, `loop/demo 1a2b…`, `HEAD 1a2b…`); error: why a commit's tree
    could not be read (then `paths` is empty and the caller fails closed), else None."""

    paths: tuple[str, ...] = ()
    where: tuple[str, ...] = ()
    error: str | None = None


def holdout_pattern(loop: Loop, holdout: str) -> str:
    """The info/exclude pattern (relative to the project root) of `holdout` (a loop.json
    `roles.verify.holdout`, validated: relative, no `..`), glob characters escaped."""
    rel = loop.dir.relative_to(loop.project.root).as_posix() + "/" + holdout.strip("/")
    return "".join(f"\\{c}" if c in _GLOB else c for c in rel) + "/"


def exclude_holdout(loop: Loop, config: LoopConfig) -> list[str]:
    """Name the loop's holdout folder in the repository's info/exclude; returns the patterns
    added ([] when the loop has no holdout, the pattern is there already, or the project is
    not in a git repository). Raises OSError when info/exclude cannot be written."""
    holdout = config.roles.verify.holdout
    if holdout is None:
        return []
    return exclude(loop.project, (holdout_pattern(loop, holdout),), EXCLUDE_HEADER)


def _commit(root: Path, ref: str) -> str | None:
    got = run_git(root, ["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"])
    return got.out.strip() if got.code == 0 and got.out.strip() else None


def reachable_commits(project: Project, config: LoopConfig, state: LoopState, loop_name: str) -> list[tuple[str, str]]:
    """(label, commit) of the commits whose trees a tick's agent reads first: the loop's base
    commit (the recorded one, else what the first tick would take: `blast_radius.base_branch`
    or HEAD), the loop branch's tip (`state.worktree_branch`, else `loop/<name>`) when it
    exists, and the main checkout's HEAD; de-duplicated, [] outside git or before a commit."""
    root = project.root
    base = state.base_commit or _commit(root, config.blast_radius.base_branch or "HEAD")
    branch = state.worktree_branch or f"loop/{loop_name}"
    found = [("base commit", base), (branch, _commit(root, f"refs/heads/{branch}")), ("HEAD", _commit(root, "HEAD"))]
    out: list[tuple[str, str]] = []
    for label, commit in found:
        if commit is not None and commit not in (c for _, c in out):
            out.append((label, commit))
    return out


def _object_ids(root: Path, files: list[Path]) -> dict[str, str] | str:
    """blob id -> the file's path, as git names each file's bytes (`hashlib` over git's
    `blob <size>\\0` header, in the repository's object format); a string: why not."""
    fmt = run_git(root, ["rev-parse", "--show-object-format"])
    algo = fmt.out.strip() if fmt.code == 0 and fmt.out.strip() else "sha1"
    if algo not in ("sha1", "sha256"):
        return f"unknown git object format {algo!r}"
    ids: dict[str, str] = {}
    for path in files:
        data = path.read_bytes()
        ids[hashlib.new(algo, b"blob %d\0" % len(data) + data).hexdigest()] = str(path)
    return ids


def _holdout_files(folder: Path) -> list[Path]:
    """Every regular file under `folder` (symlinks not followed), sorted; [] when absent."""
    if not folder.is_dir() or folder.is_symlink():
        return []
    out = [Path(top) / f for top, _, names in os.walk(folder) for f in names]
    return sorted(p for p in out if p.is_file() and not p.is_symlink())


def exposed(loop: Loop, config: LoopConfig, state: LoopState) -> Exposure:
    """The current holdout files that a reachable commit (`reachable_commits`) tracks, byte for
    byte, under the holdout folder. Empty without a holdout, outside git, or with no holdout
    files yet. OSError when a holdout file cannot be read."""
    holdout = config.roles.verify.holdout
    if holdout is None:
        return Exposure()
    root = loop.project.root
    ids = _object_ids(root, _holdout_files(loop.dir / holdout))
    if isinstance(ids, str):
        return Exposure(error=ids)
    if not ids:
        return Exposure()
    rel = (loop.dir / holdout).relative_to(root).as_posix()
    paths: set[str] = set()
    where: list[str] = []
    for label, commit in reachable_commits(loop.project, config, state, loop.name):
        got = run_git(root, ["--literal-pathspecs", "ls-tree", "-r", "-z", "--full-name", commit, "--", rel])
        if got.code != 0:
            return Exposure(error=f"git ls-tree {commit[:12]} failed: {got.err.strip() or got.code}")
        hits = [entry.partition("\t")[2] for entry in got.out.split("\0")
                if entry and entry.partition("\t")[0].split(" ")[-1] in ids]
        if hits:
            paths.update(hits)
            where.append(f"{label} {commit[:12]}")
    return Exposure(tuple(sorted(paths)), tuple(where))


def what(found: Exposure) -> str:
    """One clause: which holdout files git tracks, in which commits, and what that exposes."""
    more = len(found.paths) - _SHOWN
    shown = ", ".join(found.paths[:_SHOWN]) + (f" (+{more} more)" if more > 0 else "")
    return (f"git tracks the holdout tests {shown} ({'; '.join(found.where)}): an agent reads them there (a loop"
            " worktree is checked out from these commits, and every worktree shares the repository's objects)")


def steps(loop: Loop, config: LoopConfig) -> str:
    """The human's way out of a `holdout_committed` halt."""
    holdout = (loop.dir / str(config.roles.verify.holdout)).relative_to(loop.project.root).as_posix()
    return (f"git rm -r --cached {holdout} and commit, rewrite the history if it was pushed, write new holdout"
            f" tests (the agent may have read these), then automaton --approve --loop {loop.name}")


def detail(loop: Loop, config: LoopConfig, found: Exposure) -> str:
    """The `holdout_committed: …` halt detail: `what`, then `steps`."""
    return f"{HOLDOUT_COMMITTED}: {what(found)}. A human runs: {steps(loop, config)}"
