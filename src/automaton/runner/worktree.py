"""Step 3 of a tick: ensure the loop's worktree and record the result in `.state.loop`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from automaton.core.errors import Refused
from automaton.core.loopconfig import LoopConfig
from automaton.git.worktree import WorktreeResult, branch_name, ensure_worktree, list_worktrees
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
    if result.fallback is not None and _lost(project, name, state["worktree_path"]):
        _halt_lost_worktree(project, name, str(state["worktree_path"]), result.fallback)
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


def _lost(project: Project, name: str, recorded: str | None) -> bool:
    """The last tick ran in a worktree that is still there (its branch switched, or replaced),
    or `loop/<name>` is now checked out somewhere else (the worktree was moved). A recorded
    worktree that is simply gone keeps seed 002 R5's fallback (cleared, tick in the checkout)."""
    if recorded is None:
        return False
    if Path(recorded).exists():
        return True
    ref = f"refs/heads/{branch_name(name)}"
    return any(entry.get("branch") == ref for entry in list_worktrees(project.root) or [])


def _halt_lost_worktree(project: Project, name: str, recorded: str, why: str) -> None:
    """The last tick ran in the worktree and this one cannot (an agent switched its branch,
    moved or replaced the worktree): falling back to the main checkout would lift the blast
    radius and skip the drift gate, so the loop halts with drift_detected instead and keeps the
    recorded worktree; a human repairs it and approves. Raises Refused (exit 1)."""
    detail = f"worktree_lost: {why}"

    def halt(s: dict[str, Any]) -> None:
        s.update(status="halted", halt_reason="drift_detected", halt_detail=detail)

    store.update_state(project, name, "HALT", {"reason": "drift_detected", "detail": detail, "gate": "worktree",
                                               "recorded": recorded}, halt)
    from automaton.commands.schedule import disable_best_effort  # best effort, never raises

    disable_best_effort(project, store.require_tracked(project, name))
    raise Refused(f"loop {name} halted (drift_detected): {detail}; the tick did not run in the main checkout."
                  f" Repair the worktree, then a human runs: automaton --approve --loop {name}")
