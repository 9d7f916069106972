"""Loop folders on disk (seed 000 R1, R2). PLACEHOLDER until the loop store lands (issue 3)."""

from __future__ import annotations

from automaton.core.names import LoopName, TaskRef
from automaton.store.layout import Project


def halted_owners(project: Project, ref: TaskRef) -> list[tuple[LoopName, str]]:
    """Loops whose `current_task` is `ref` and whose status is `halted` with one of the five
    deaths: [(loop name, halt_reason)]. Used by seed 000 R8 to refuse task transitions."""
    return []


def require_tracked(project: Project, name: str) -> LoopName:
    """The validated name of a tracked loop (one with `.state.loop`); BadInput otherwise (R1)."""
    from automaton.core.errors import BadInput

    loop = LoopName.of(name)
    folder = project.loop_dir(loop)
    if not folder.is_dir():
        raise BadInput(f"unknown loop {loop!r}: no folder {folder}; create it with automaton --create-loop")
    if not (folder / ".state.loop").is_file():
        raise BadInput(f"loop {loop!r} is UNTRACKED (no .state.loop): Run --upgrade-loops to bootstrap")
    return loop
