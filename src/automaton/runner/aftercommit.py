"""Step 5 of a tick and the checks on its result: commit the agent's work, then judge the commit.

The commit is part of the tick's truth: work that could not be committed is not on
`loop/<name>`, so its verdict must not complete the loop. Every check here reads facts the
agent cannot shape from inside its sandbox: the runner's own commit (made with hardened git),
the tree comparison against `base_commit`, and the protected paths of the base commit.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from automaton.commands.halts import halt_now
from automaton.commands.loop_gate import drift_after_commit, read_before_commit
from automaton.core.loopconfig import LoopConfig
from automaton.core.loopstate import LoopState
from automaton.git import run_git
from automaton.git.commit import excludes_file
from automaton.git.drift import Reading
from automaton.git.errors import DriftError
from automaton.git.nested import nested_repositories, shown
from automaton.git.protect import protected_changes
from automaton.git.worktree import IN_PLACE_EXCLUDES, WorktreeResult, commit_all, pointer_problem
from automaton.harnesses import HarnessResult
from automaton.runner.verify import protected_patterns
from automaton.store.layout import Project
from automaton.store.loops import Loop

if TYPE_CHECKING:  # Death is a Literal core.loopstate defines for the type checker only
    from automaton.core.loopstate import Death

COMMIT_FAILED = "commit_failed"
HARNESS_UNAVAILABLE = "harness_unavailable"
PROTECTED = "protected"


@dataclass
class After:
    """sha: the commit this tick made (None: nothing to commit, or it failed); head: the commit
    the verifier exports (the branch tip after the commit); halt: the halt this step applied
    (`reason: detail`) or None; skip_verify: why the verdict must not be computed (a halted
    tick never completes the loop), None to verify; free: the agent never started, so the
    tick charges nothing; changed: the agent's work may have changed something (a commit was
    made, the worktree is gone, or no worktree could be compared): such a tick is never put
    off for free (`runner.deferral`); warnings/notes: for the outcome and the progress display."""

    sha: str | None = None
    head: str | None = None
    halt: str | None = None
    skip_verify: str | None = None
    free: bool = False
    changed: bool = True
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def settle(loop: Loop, cfg: LoopConfig, wt: WorktreeResult, n: int, impl: HarnessResult,
           state: LoopState | None = None) -> After:
    """Commit, then halt on the first of: a repository nested in the worktree (drift_detected,
    `nested repository: <paths>`, before anything is committed), the harness could not start (human_intervention,
    harness_unavailable, charged nothing), the commit failed (human_intervention,
    commit_failed with git's message and the fix), the commit drifts out of file_scope
    (drift_detected), the commit changed a protected path (drift_detected, protected).

    The worktree is read once before the commit (`loop_gate.read_before_commit`, the drift
    gate's reading): when it shows nothing for `git add -A` to stage, nothing is committed and
    the drift and protected-path checks judge that same reading; otherwise the commit is made
    and they read the worktree anew. `state`: the loop's state as this tick recorded its
    worktree (None: read here)."""
    out = After()
    # No worktree (`use_worktree` false): the tick commits in the main checkout, on its branch,
    # once its first tick recorded a base commit there (runner.worktree `_in_place`).
    in_place = not wt.in_worktree and not cfg.blast_radius.use_worktree and wt.base_commit is not None
    reading, failed = _commit_step(loop, wt, n, state, out, in_place)
    if failed is not None:
        return failed
    unavailable = impl.unavailable
    if unavailable:
        out.free = out.sha is None  # an agent that changed files did start: its tick is charged
        return _halt(out, loop, "human_intervention", f"{HARNESS_UNAVAILABLE}: {unavailable}")
    if not wt.in_worktree and not in_place:
        return out
    return _checks(loop, cfg, wt, reading, out)


def _commit_step(loop: Loop, wt: WorktreeResult, n: int, state: LoopState | None, out: After,
                 in_place: bool) -> tuple[Reading | None, After | None]:
    """The commit half of `settle`: (the reading the checks may judge, the halted `out` or None)."""
    project, name = loop.project, loop.name
    if wt.in_worktree and not wt.path.is_dir():
        # The agent removed or moved its own worktree: nothing is left to commit, the branch
        # keeps what earlier ticks committed, and the next tick re-creates the worktree (or
        # halts when something else sits at its path). The checks below read the branch.
        out.notes.append(f"the worktree {wt.path} is gone; loop/{name} is checked as committed")
        tip = run_git(project.root, ["rev-parse", "--verify", f"refs/heads/loop/{name}^{{commit}}"])
        out.head = tip.out.strip() if tip.code == 0 and tip.out.strip() else None
        return None, None
    if not (wt.in_worktree or in_place):
        return None, None
    tampered = pointer_problem(project.root, wt.path) if wt.in_worktree else None
    if tampered:  # never run git in a worktree whose .git the agent rewrote: it may be the user's branch
        return None, _halt(out, loop, "drift_detected", f"worktree_lost: {tampered}")
    nested = _nested(wt)
    if nested:  # before `git add`, which would record it as a gitlink and let git enter it
        return None, _halt(out, loop, "drift_detected", nested)
    return _commit(loop, wt, n, state or loop.read_state(), out)


def _checks(loop: Loop, cfg: LoopConfig, wt: WorktreeResult, reading: Reading | None, out: After) -> After:
    """The checks on the commit: drift out of file_scope, then protected paths (`settle`)."""
    project = loop.project
    drift = drift_after_commit(loop, cfg, reading)
    if drift.result is not None and drift.result.halt is not None:
        out.halt = f"{drift.result.halt}: {drift.result.detail}"
        out.skip_verify = f"halted after the commit: {out.halt}"
        out.notes.append(out.skip_verify)
        return out

    try:
        changed = _protected_changes(cfg, project, wt, out.head, drift.reading)
    except DriftError as exc:  # git failed: unknown is never "nothing protected changed"
        return _halt(out, loop, "drift_detected", f"{PROTECTED}: cannot compare with the base commit ({exc})")
    if changed:
        shown = ", ".join(changed[:10]) + (f" (+{len(changed) - 10} more)" if len(changed) > 10 else "")
        return _halt(out, loop, "drift_detected", f"{PROTECTED}: {shown}")
    return out


def _commit(loop: Loop, wt: WorktreeResult, n: int, state: LoopState, out: After) -> tuple[Reading | None,
                                                                                          After | None]:
    """The runner's commit of the tick's work into `out` (sha, head, changed): nothing when the
    reading made first shows nothing to stage (that reading is returned, for the checks after
    the commit), else `commit_all` (None is returned: the checks read the new commit anew).
    The second value is the halted `out` when the commit failed, else None."""
    with tempfile.TemporaryDirectory(prefix="automaton-commit-") as scratch:
        excludes = excludes_file(wt.path, Path(scratch), () if wt.in_worktree else IN_PLACE_EXCLUDES)
        reading = read_before_commit(loop, state, excludes)
        if reading is not None and reading.nothing_to_commit():
            out.changed, out.head = False, reading.head  # git would have seen no change
            return reading, None
        done = commit_all(wt.path, f"automaton: tick {n}", excludes=excludes)
    out.sha = done.sha
    # Nothing committed and no error: git saw no change. Anything else may be the agent's work.
    out.changed = done.sha is not None or done.error is not None
    if done.error:  # the work is not on loop/<name>: its verdict must not count
        fix = f"; fix: {done.fix}" if done.fix else ""
        return None, _halt(out, loop, "human_intervention", f"{COMMIT_FAILED}: {done.error}{fix}")
    # The commit just made is the branch tip; with nothing committed, the tip is what earlier
    # ticks left (commit_all read it before `git add`).
    out.head = done.sha if done.sha is not None else done.head
    return None, None


def _nested(wt: WorktreeResult) -> str | None:
    """`nested repository: <paths>` for the repositories the agent left in its worktree
    (`git.nested`, a directory walk: git is not asked), or why none can be ruled out; None."""
    try:
        found = nested_repositories(wt.path)
    except DriftError as exc:
        return f"nested repository: cannot be ruled out ({exc})"
    if not wt.in_worktree:  # in place: the loops' own worktrees live in .automaton/, which no tick commits
        found = [p for p in found if not p.startswith(".automaton/")]
    return f"nested repository: {shown(found)}" if found else None


def _protected_changes(cfg: LoopConfig, project: Project, wt: WorktreeResult, head: str | None,
                       reading: Reading | None) -> list[str]:
    """The protected paths `head` changed since the base commit (`git.protect`); the paths the
    two trees differ in come from `reading` (the drift gate's) when it compared the same two
    commits, else from git."""
    if head is None or wt.base_commit is None:
        return []
    patterns = protected_patterns(cfg, project.root)
    if reading is not None and reading.head == head and reading.base_commit == wt.base_commit:
        return protected_changes(project.root, wt.base_commit, head, patterns, changed=list(reading.committed))
    return protected_changes(project.root, wt.base_commit, head, patterns)


def _halt(out: After, loop: Loop, reason: Death, detail: str) -> After:
    halt_now(loop, reason, detail, "tick")
    out.halt = f"{reason}: {detail}"
    out.skip_verify = f"halted: {out.halt}"
    out.notes.append(out.skip_verify)
    out.warnings.append(f"loop {loop.name}: {out.skip_verify}; a human fixes it and runs automaton --approve"
                        f" --loop {loop.name}")
    return out
