"""`--gc-worktrees [--yes]`: list, then remove, loop worktrees nothing will tick in again.

A loop's worktree is `.automaton/loops/<name>/worktree` on branch `loop/<name>`
(`git.worktree`). One can go when its loop is gone (no folder, or a folder without state) or
complete; its commits stay on the branch, and a re-armed loop's next tick re-creates the
worktree from it (`runner.worktree.ensure_for_tick`). One is always kept when it has
uncommitted work (`git status --porcelain`: changed, staged or untracked files), is locked
(`git worktree lock`), or belongs to a loop that is running, halted or paused, or whose state
cannot be read. Worktrees anywhere else (a human's own, on any branch) are never listed.

Removing is a human act (`commands.human.require_human`), confirmed after the list, and uses
`git worktree remove` without `--force`, so git itself refuses a worktree that became dirty
since it was listed. A registration whose folder is gone is pruned (`git worktree prune`).
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path

from automaton.commands.loops import held_between_ticks
from automaton.core.errors import AutomatonError, BadInput
from automaton.core.loopstate import Event, LogEvent
from automaton.core.names import LoopName
from automaton.core.outcome import Outcome
from automaton.git import run_git
from automaton.git.worktree import LOOP_WORKTREE_DIR, branch_name, list_worktrees
from automaton.store.layout import Project
from automaton.store.loops import Loop, state_files

ACTION = "--gc-worktrees"


@dataclass(frozen=True)
class Found:
    """One loop worktree: `path` (as git lists it), its loop `name`, whether it `goes`, and
    `why` (one line: why it goes or why it is kept); `complete`: its loop exists and is
    complete (the removal is logged in that loop's log); `missing`: its folder is gone."""

    path: str
    name: LoopName
    goes: bool
    why: str
    complete: bool = False
    missing: bool = False


def survey(project: Project) -> list[Found]:
    """Every loop worktree git has registered in this repository, classified (read-only).
    BadInput (exit 2) when git cannot list the worktrees."""
    entries = list_worktrees(project.root)
    if entries is None:
        raise BadInput(f"git worktree list failed in {project.root}: is it a git repository with git on PATH?")
    loops_dir = os.path.realpath(project.loops_dir)
    out = []
    for entry in entries[1:]:  # the first is the main checkout
        path = entry.get("worktree", "")
        parent = os.path.dirname(os.path.realpath(path))
        if os.path.basename(path) != LOOP_WORKTREE_DIR or os.path.dirname(parent) != loops_dir:
            continue  # not a loop's worktree: never touched
        try:
            name = LoopName.of(os.path.basename(parent))
        except BadInput:
            continue
        out.append(_classify(project, name, path, entry))
    return out


def _classify(project: Project, name: LoopName, path: str, entry: dict[str, str]) -> Found:
    if "locked" in entry:
        return Found(path, name, False, "locked (git worktree unlock it first)")
    if not os.path.isdir(path):
        return Found(path, name, True, "its folder is gone: the registration is pruned", missing=True)
    goes, why, complete = _loop_verdict(project, name)
    if not goes:
        return Found(path, name, False, why)
    dirty = _dirty(path)
    if dirty is not None:
        return Found(path, name, False, dirty)
    return Found(path, name, True, f"{why}; its commits stay on branch {branch_name(name)}", complete=complete)


def _loop_verdict(project: Project, name: LoopName) -> tuple[bool, str, bool]:
    """(whether the loop no longer needs its worktree, why, whether it is complete). Gone: no
    folder, or a folder with neither `.state.loop` nor `.state.log` (UNTRACKED). A state that
    cannot be read keeps the worktree (fail closed)."""
    folder = project.loop_dir(name)
    if not os.path.isdir(folder) or not state_files(folder):
        return True, f"loop {name} is gone", False  # a log without its state is tampering, never "gone"
    try:
        status = Loop.resolve(project, name).read_state().status
    except AutomatonError as exc:
        return False, f"loop {name}'s state cannot be read ({exc.message})", False
    if status == "complete":
        return True, f"loop {name} is complete", True
    return False, f"loop {name} is {status} and still needs it", False


def _dirty(path: str) -> str | None:
    """Why the worktree at `path` must be kept for its uncommitted work, None when it is clean."""
    got = run_git(Path(path), ["status", "--porcelain", "--untracked-files=all"])
    if got.code != 0:
        return f"its status cannot be read (git exit {got.code}): kept"
    entries = len(got.out.splitlines())
    return f"uncommitted work ({entries} changed or untracked file(s)): kept" if entries else None


def survey_lines(found: list[Found]) -> list[str]:
    """One line per worktree: `remove <path>: <why>` or `keep <path>: <why>`."""
    return [f"{'remove' if f.goes else 'keep'}   {f.path}: {f.why}" for f in found]


def gc_worktrees(project: Project, shown: list[Found], who: str) -> Outcome:
    """Remove the worktrees of `shown` that go (the survey the human confirmed, by `who`):
    `git worktree remove` (no `--force`), or `git worktree prune` for a missing folder; a
    complete loop's worktree only between ticks and while the loop is still complete, its
    removal logged in its log (`WARNING reason=worktree_removed by=…`). A worktree that cannot
    go now (dirty since the survey, git refuses, the loop was re-armed) is kept and said so.
    data: {removed: [paths], kept: [{path, why}], by}."""
    out = Outcome()
    removed: list[str] = []
    kept = [{"path": f.path, "why": f.why} for f in shown if not f.goes]
    for f in shown:
        if not f.goes:
            continue
        why = _remove(project, f, who)
        if why is None:
            removed.append(f.path)
            out.lines.append(f"removed worktree {f.path} ({f.why})")
        else:
            kept.append({"path": f.path, "why": why})
            out.warnings.append(f"kept worktree {f.path}: {why}")
    out.lines += [f"kept worktree {f.path}: {f.why}" for f in shown if not f.goes]
    if not shown:
        out.lines.append("no loop worktrees")
    out.data = {"removed": removed, "kept": kept, "by": who}
    return out


def _remove(project: Project, f: Found, who: str) -> str | None:
    """Remove one worktree; None when done, else why it was kept."""
    if f.missing:
        got = run_git(project.root, ["worktree", "prune"])
        return None if got.code == 0 else f"git worktree prune failed (exit {got.code}): {got.err.strip()}"
    if not f.complete:
        why = _remove_clean(project, f.path)
        if why is None:
            with contextlib.suppress(OSError):  # the folder of a gone loop, now empty
                os.rmdir(os.path.dirname(f.path))
        return why

    try:
        loop = Loop.resolve(project, f.name)
        with held_between_ticks(loop, ACTION):
            status = loop.read_state().status
            if status != "complete":
                return f"loop {f.name} is {status} now"
            why = _remove_clean(project, f.path)
            if why is None:
                loop.log_event(LogEvent(Event.WARNING, {"reason": "worktree_removed", "path": f.path, "by": who}))
            return why
    except AutomatonError as exc:
        return exc.message


def _remove_clean(project: Project, path: str) -> str | None:
    again = _dirty(path)  # the survey was shown a while ago
    if again is not None:
        return again
    got = run_git(project.root, ["worktree", "remove", path])
    return None if got.code == 0 else f"git worktree remove refused (exit {got.code}): {got.err.strip()}"
