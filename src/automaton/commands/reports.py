"""Read-only reports: `--validate-folder` and `--audit` (seed 003 §4, §6; seed 000 R9). They write nothing."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from automaton.core import phases as ph
from automaton.core.approvals import demotion
from automaton.core.errors import BadInput, CorruptState, ExitCode
from automaton.core.names import TaskRef
from automaton.core.outcome import Outcome
from automaton.store import tasks
from automaton.store.layout import Project

# Seed 003 §6, verbatim (its status.py is this CLI; DESIGN §3 ships scripts/status.py as a
# shim onto it), then the direct command.
MANUAL = (
    "Task '{task}' was created manually (no .state file)."
    " Use 'python ~/.automaton/scripts/status.py --create-task' to create tasks properly."
    " (automaton --create-task {name})"
)
STRAY = "folder {folder} is not a task: task names are kebab-case; rename it or move it out of tasks/"


def task_findings(ref: TaskRef, folder: Path) -> tuple[str | None, list[str]]:
    """(phase or None, violations) for one task folder, without writing anything."""
    try:
        rec = tasks.load_dir(ref, folder)
    except CorruptState as exc:
        return None, [exc.message]
    if rec.tamper:
        return rec.phase, [f"TAMPERED: {rec.tamper}"]
    if rec.phase is None:
        return None, [MANUAL.format(task=ref, name=ref.name)]
    found = []
    bad = ph.forbidden_present(rec.phase, rec.present)
    if bad:
        found.append(f"forbidden artifacts for phase {rec.phase!r}: {', '.join(bad)}")
    dem = demotion(rec.phase, rec.bound(), rec.current_hashes())
    if dem is not None:
        found.append(
            f"approved {dem.artifact} changed after sign-off: next command demotes"
            f" {dem.from_phase} -> {dem.to_phase}"
        )
    return rec.phase, found


def validate_folder(project: Project, task: str | None = None) -> Outcome:
    """Check task folders (one, or all): `.state` present and valid, no forbidden artifacts.

    Read-only. Exit 1 when any violation is found (a corrupt `.state` is a violation here, so
    one bad task never hides the others); exit 2 for an unknown --task.
    data: {"ok": bool, "tasks": [{"task", "phase", "violations": [str]}]}.
    """
    if task is not None:
        ref = TaskRef.parse(task)
        folder = project.task_dir(ref)
        if not folder.is_dir():
            raise BadInput(f"unknown task {task!r}: no folder {folder}; create it with automaton --create-task")
        return _report(project, [(ref, folder)], "validate-folder", strays=False)
    return _report(project, list(tasks.iter_tasks(project)), "validate-folder")


def _report(project: Project, targets: list[tuple[TaskRef, Path]], title: str, strays: bool = True) -> Outcome:
    out = Outcome()
    rows: list[dict[str, object]] = []
    for ref, folder in targets:
        phase, found = task_findings(ref, folder)
        deleted = tasks.deleted_state(project, ref) if found[:1] == [MANUAL.format(task=ref, name=ref.name)] else ""
        if deleted:  # not a legacy folder: its state files were deleted (store.tasks.deleted_state)
            found = [f"TAMPERED: {deleted}"]
        rows.append({"task": str(ref), "phase": phase, "violations": found})
        mark = "VIOLATION" if found else "ok"
        out.lines.append(f"  {mark:9} {ref}: {phase or '-'}")
        out.lines += [f"            - {v}" for v in found]
    for folder in tasks.stray_folders(project) if strays else []:
        rel = folder.relative_to(project.root).as_posix()
        rows.append({"task": rel, "phase": None, "violations": [STRAY.format(folder=rel)]})
        out.lines.append(f"  {'VIOLATION':9} {rel}: -")
        out.lines.append(f"            - {STRAY.format(folder=rel)}")
    bad = sum(1 for r in rows if r["violations"])
    out.lines.insert(0, f"{title}: {len(rows)} task(s), {bad} with violations")
    out.code = ExitCode.REFUSED if bad else ExitCode.OK
    out.data = {"ok": not bad, "tasks": rows}
    return out


def layout_findings(project: Project) -> list[str]:
    """Violations of the project layout itself, each naming the path: `tasks` or `.automaton`
    that is not a folder (every task or loop there would be silently invisible), and an
    unreadable or invalid `.automaton/config.json` (the error of `scope_overrides`)."""
    from automaton.store.project_config import scope_overrides

    found = [f"{path}: not a folder; automaton keeps its files in this folder: move the file away"
             for path in (project.tasks_dir, project.dot) if path.exists() and not path.is_dir()]
    if project.dot.is_dir():
        try:
            scope_overrides(project)
        except BadInput as exc:
            found.append(exc.message)
    return found


# The Loops section of --audit comes from the loop store (seed 000 R9); injected to keep
# this module free of loop imports. Signature: (project) -> (lines, rows, violations).
LoopSection = Callable[[Project], tuple[list[str], list[dict[str, object]], int]]


def audit(project: Project, loop_section: LoopSection | None = None) -> Outcome:
    """Every task and every loop; exit 1 when anything is flagged.

    data: {"ok": bool, "project": [str], "tasks": [...], "loops": [...]}; `project` lists
    `layout_findings` (each also a VIOLATION line).
    """
    out = _report(project, list(tasks.iter_tasks(project)), "Tasks")
    task_bad = 0 if out.ok else 1
    broken = layout_findings(project)
    out.lines[:0] = [f"audit of {project.root}"] + [f"  {'VIOLATION':9} {v}" for v in broken]
    loops_rows: list[dict[str, object]] = []
    loop_bad = 0
    if loop_section is not None:
        lines, loops_rows, loop_bad = loop_section(project)
        out.lines += lines
    assert out.data is not None
    out.data["project"] = broken
    out.data["loops"] = loops_rows
    out.data["ok"] = not (task_bad or loop_bad or broken)
    out.code = ExitCode.OK if out.data["ok"] else ExitCode.REFUSED
    return out
