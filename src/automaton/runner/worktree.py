"""Step 3 of a tick: ensure the loop's worktree and record the result in `.state.loop`."""

from __future__ import annotations

from typing import Any

from automaton.core.loopconfig import LoopConfig
from automaton.git.worktree import WorktreeResult, ensure_worktree
from automaton.store import loops as store
from automaton.store.layout import Project


def ensure_for_tick(project: Project, name: str, cfg: LoopConfig, state: dict[str, Any]) -> WorktreeResult:
    """Ensure the worktree (seed 002 R1–R6) and record `worktree_path`, `worktree_branch`,
    `base_commit`, `worktree_fallback` when they change. A fallback is also logged as
    `WARNING reason=worktree_fallback` (seed 002 R2); a stale path is cleared (R5).
    use_worktree false: nothing is recorded (R1: no state mutation)."""
    loop_dir = project.loop_dir(store.require_tracked(project, name))
    result = ensure_worktree(
        project.root, loop_dir, name, use_worktree=cfg.blast_radius.use_worktree,
        base_branch=cfg.blast_radius.base_branch, recorded_path=state["worktree_path"],
        recorded_base=state["base_commit"],
    )
    if not cfg.blast_radius.use_worktree:
        return result
    if result.in_worktree:
        want = {"worktree_path": str(result.path), "worktree_branch": result.branch,
                "base_commit": result.base_commit, "worktree_fallback": None}
    else:
        want = {"worktree_path": None, "worktree_branch": None, "worktree_fallback": result.fallback}
    if all(state.get(k) == v for k, v in want.items()):
        return result  # reused as recorded: no state write (seed 002 R1)

    def record(s: dict[str, Any]) -> None:
        s.update(want)

    if result.in_worktree:
        fields: dict[str, object] = {"path": str(result.path), "branch": result.branch,
                                     "base": result.base_commit, "created": result.created}
        if result.cleared_stale:
            fields["cleared_stale"] = state["worktree_path"]
        store.update_state(project, name, "WORKTREE", fields, record)
    else:
        fields = {"reason": "worktree_fallback", "detail": result.fallback, "cwd": str(result.path)}
        store.update_state(project, name, "WARNING", fields, record)
    return result
