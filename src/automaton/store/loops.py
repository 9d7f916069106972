"""Loop folders on disk (seed 000 R1, R2). PLACEHOLDER until the loop store lands (issue 3)."""

from __future__ import annotations

from automaton.core.names import LoopName, TaskRef
from automaton.store.layout import Project


def halted_owners(project: Project, ref: TaskRef) -> list[tuple[LoopName, str]]:
    """Loops whose `current_task` is `ref` and whose status is `halted` with one of the five
    deaths: [(loop name, halt_reason)]. Used by seed 000 R8 to refuse task transitions."""
    return []
