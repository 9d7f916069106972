"""`automaton --claim-loop-task NAME --task T`: loop NAME claims task T, so no other loop works it.

The claim, its lock and when it holds are `store.claims`'s (README.md#claiming-a-task-for-one-loop).
The task must exist; the loop must be tracked and not complete. A loop that is not bound to T
(loop.json `task`, or its state's `current_task`) may claim it all the same, which keeps other
loops off it; the output says that this loop's ticks do not work on it.
"""

from __future__ import annotations

from automaton.commands.excludes import exclude
from automaton.core.errors import BadInput, Refused
from automaton.core.names import TaskRef
from automaton.core.outcome import Outcome
from automaton.store import claims
from automaton.store.layout import Project
from automaton.store.loops import Loop


def claim_loop_task(project: Project, name: str, task: str) -> Outcome:
    """Claim `task` for loop `name`. data: {ok, loop, task, claimed_at, replaced (the stale
    holder's loop name or None), bound (whether the loop works on the task)}. Errors:
    BadInput (exit 2) for an unknown or untracked loop, an invalid or missing task;
    Refused (exit 1) for a complete loop; Busy (exit 1) when another loop's live claim holds
    the task or its tick works it now."""
    loop = Loop.resolve(project, name)
    ref = TaskRef.parse(task)
    if not project.task_dir(ref).is_dir():
        raise BadInput(f"unknown task {ref}: no folder {project.task_dir(ref)}; create it with automaton --create-task")
    state = loop.read_state()
    if state.status == "complete":
        raise Refused(f"loop {loop.name} is complete (terminal): it works no task; --rearm-loop {loop.name} first")
    made, stale = claims.claim(project, str(ref), str(loop.name))
    exclude(project, (f".automaton/{claims.CLAIMS_DIR}/",), "# automaton task claims of this checkout")
    out = Outcome()
    out.lines.append(f"loop {loop.name} claims task {ref} (since {made.claimed_at}): no other loop's tick works it"
                     f" until {loop.name} completes, halts or is removed")
    if stale is not None:
        out.lines.append(f"  replaced the claim of loop {stale.loop}, which no longer holds (halted, complete or gone)")
    if state.status not in claims.LIVE:
        out.warnings.append(f"loop {loop.name} is {state.status}: the claim holds once a human approves it, unless"
                            " another loop claims the task first")
    bound = str(ref) in loop.bound_tasks(state)
    if not bound:
        out.warnings.append(f"loop {loop.name} is not bound to task {ref} (loop.json task, current_task): its ticks"
                            " do not work on it; the claim only keeps other loops off it")
    out.data = {"ok": True, "loop": str(loop.name), "task": str(ref), "claimed_at": made.claimed_at,
                "replaced": stale.loop if stale else None, "bound": bound}
    return out
