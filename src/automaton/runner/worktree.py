"""Step 3 of a tick: ensure the loop's worktree and record the result in `.state.loop`."""

from __future__ import annotations

import os
from dataclasses import replace
from functools import partial
from pathlib import Path

from automaton.commands.halts import stop_schedule
from automaton.core import loopstate
from automaton.core.errors import BadInput, EnvironmentFailure, Refused, environment_said
from automaton.core.loopconfig import LoopConfig
from automaton.core.loopstate import Event, LogEvent, LoopState
from automaton.git import run_git
from automaton.git.worktree import WorktreeResult, ensure_worktree, worktree_path
from automaton.store.loops import Loop

# Fallbacks to the main checkout that lift no brake for a loop that never had a worktree:
# there is no repository to make one in.
_HARMLESS = ("no_git", "not_repo")


def ensure_for_tick(loop: Loop, cfg: LoopConfig, state: LoopState) -> WorktreeResult:
    """Ensure the worktree (tick step 6 in docs/architecture.md) and record `worktree_path`,
    `worktree_branch`, `base_commit`, `worktree_fallback` when they change. use_worktree false:
    the main checkout, with the `base_commit` its first tick recorded (`_in_place`).

    Only one case may run the tick in the main checkout (logged `WARNING
    reason=worktree_fallback`): a project without git / outside a repository. A repository in
    which no worktree can be made (no commit, a bad base_branch, git failing) refuses the tick
    with BadInput (exit 2) before anything is charged. Everything else halts the loop
    (`drift_detected`, halt_detail `worktree_lost: …`, Refused exit 1): something that is not
    this repository's worktree on `loop/<name>` at the worktree path (a plain folder, a file, a
    symlink, another branch, a detached HEAD), the branch checked out elsewhere, or a worktree
    the loop had that cannot be re-created. A worktree that is simply gone is re-created from
    its branch. `worktree_fallback`, once set, stays set until a human approves
    (commands.loops.approve_loop), so a fallback is never forgotten by the next good tick.
    """
    project, name, loop_dir = loop.project, loop.name, loop.dir
    result = ensure_worktree(
        project.root, loop_dir, name, use_worktree=cfg.blast_radius.use_worktree,
        base_branch=cfg.blast_radius.base_branch, recorded_path=state.worktree_path,
        recorded_base=state.base_commit,
    )
    if not cfg.blast_radius.use_worktree:
        return _in_place(loop, state, result)
    if result.fallback is not None and _must_halt(result, state, loop_dir):
        _halt_lost_worktree(loop, str(state.worktree_path or worktree_path(loop_dir)), result.fallback)
    if result.kind == "failed":
        # A repository is there but no worktree can be made (no commit yet, a base_branch that
        # names no commit, git failing): running in the main checkout would drop the drift and
        # protected-path checks, so the tick refuses (exit 2, before anything is charged).
        full = environment_said(result.fallback or "", str(worktree_path(loop_dir)))
        if full is not None:  # a full disk is no missing commit: say what it is (exit 1)
            raise EnvironmentFailure(f"loop {name}: the worktree could not be made: {full.message}")
        if "is not a commit" in (result.fallback or ""):
            raise BadInput(f"loop {name}: {result.fallback}; the tick did not run. Fix it (make a first commit,"
                           f" or correct blast_radius.base_branch and approve loop.json), then tick again")
        raise BadInput(f"loop {name}: {result.fallback}; the tick did not run. Fix what git said, then tick again")
    want: tuple[str | None, str | None, str | None, str | None]  # path, branch, base_commit, fallback
    if result.in_worktree:
        want = (str(result.path), result.branch, result.base_commit, state.worktree_fallback)
        fields: dict[str, object] = {"path": str(result.path), "branch": result.branch,
                                     "base": result.base_commit, "created": result.created}
        if result.cleared_stale:
            fields["cleared_stale"] = state.worktree_path
        event = LogEvent(Event.WORKTREE, fields)
    else:
        # the main checkout: base_commit stays as recorded (it says the loop had a worktree)
        want = (None, None, state.base_commit, result.fallback)
        event = LogEvent(Event.WARNING, {"reason": "worktree_fallback", "detail": result.fallback,
                                         "cwd": str(result.path)})
    if (state.worktree_path, state.worktree_branch, state.base_commit, state.worktree_fallback) == want:
        return result  # reused as recorded: no state write
    loop.update_state(partial(loopstate.record_worktree, path=want[0], branch=want[1], base_commit=want[2],
                              fallback=want[3], event=event))
    return result


def _in_place(loop: Loop, state: LoopState, result: WorktreeResult) -> WorktreeResult:
    """A loop without a worktree ticks in the main checkout: its first tick records the
    checkout's HEAD as `base_commit` (logged `WORKTREE … in_place=True`), from which the drift
    gate and the checks after the tick's commit measure; later ticks reuse it. Outside git, or
    before a first commit, nothing is recorded and nothing is committed (the result as given)."""
    base = state.base_commit
    if base is None:
        head = run_git(loop.project.root, ["rev-parse", "--verify", "--quiet", "HEAD^{commit}"])
        if head.code != 0 or not head.out.strip():
            return result
        base = head.out.strip()
        event = LogEvent(Event.WORKTREE, {"path": str(loop.project.root), "branch": None, "base": base,
                                          "in_place": True})
        loop.update_state(partial(loopstate.record_worktree, path=None, branch=None, base_commit=base,
                                  fallback=state.worktree_fallback, event=event))
    return replace(result, base_commit=base)


def _must_halt(result: WorktreeResult, state: LoopState, loop_dir: Path) -> bool:
    """A fallback that would lift the blast radius (see ensure_for_tick)."""
    if result.kind in ("occupied", "elsewhere"):
        return True
    # No git, not a repository, or a failed add: harmless only for a loop that never had a
    # worktree. A loop that had one and now finds no repository (a broken or
    # moved .git, git gone from PATH) would otherwise run in the main checkout, unwatched.
    had = state.worktree_path is not None or state.base_commit is not None
    if result.kind in _HARMLESS:
        return had
    return had or os.path.lexists(worktree_path(loop_dir))


def _halt_lost_worktree(loop: Loop, recorded: str, why: str) -> None:
    """The tick cannot run in the loop's worktree (an agent switched its branch, moved,
    replaced or symlinked it): falling back to the main checkout would lift the blast radius
    and skip the drift gate, so the loop halts with drift_detected instead and keeps the
    recorded worktree; a human repairs it and approves. Raises Refused (exit 1)."""
    detail = f"worktree_lost: {why}"

    loop.update_state(partial(loopstate.halt, reason="drift_detected", detail=detail,
                              fields={"reason": "drift_detected", "detail": detail, "gate": "worktree",
                                      "recorded": recorded}))
    stop_schedule(loop)  # best effort, never raises
    raise Refused(f"loop {loop.name} halted (drift_detected): {detail}; the tick did not run in the main checkout."
                  f" Repair the worktree, then a human runs: automaton --approve --loop {loop.name}")
