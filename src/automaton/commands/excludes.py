"""Keep automaton's runtime files out of git (docs/architecture.md#what-git-sees) via the repo's `info/exclude`.

Only files that must never be committed: locks, temp files, the per-checkout focus and the
loop runtime. `loop.json` and the task `.state`/`.state.log` stay trackable (the project
decides). Best effort: a project that is not a git repo gets nothing.
"""

from __future__ import annotations

from pathlib import Path

from automaton.git import run_git
from automaton.resolve import real, relative_parts
from automaton.store.layout import Project
from automaton.store.loops import add_excludes

TASK_RUNTIME = ("tasks/.state.lock-*", "tasks/**/.state.tmp", "tasks/**/.state.lock")
FOCUS_RUNTIME = (".automaton/focus", ".automaton/focus.log", ".automaton/focus.lock", ".automaton/focus.tmp")


def exclude(project: Project, rel_patterns: tuple[str, ...], header: str) -> list[str]:
    """Append project-relative `rel_patterns` (anchored at the project root inside the repo)
    to the repo's info/exclude; returns the patterns added ([] outside a git repo)."""
    top = run_git(project.root, ["rev-parse", "--show-toplevel"])
    path = run_git(project.root, ["rev-parse", "--path-format=absolute", "--git-path", "info/exclude"])
    if top.code != 0 or path.code != 0:
        return []
    parts = relative_parts(real(project.root, project.root), real(top.out.strip(), project.root))
    if parts is None:
        return []
    prefix = "/" + "".join(f"{p}/" for p in parts)
    return add_excludes(Path(path.out.strip()), [prefix + p for p in rel_patterns], header)
