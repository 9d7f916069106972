"""Read-only reports: `--validate-folder` and `--audit`. They write nothing."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from automaton.commands.doctor_checks import hook_findings
from automaton.commands.focus import read_focus
from automaton.core import phases as ph
from automaton.core.approvals import demotion
from automaton.core.errors import AutomatonError, BadInput, ExitCode
from automaton.core.names import TaskRef
from automaton.core.outcome import Outcome
from automaton.store import anchor, chainlog, tasks
from automaton.store import project_config as pc
from automaton.store.key import key_path, load_key
from automaton.store.layout import Project
from automaton.store.project_config import scope_overrides
from automaton.store.taskscan import scan

# A stable text (docs/architecture.md#stable-interfaces; its status.py is this CLI, and
# resources/scripts/status.py is a shim onto it), then the direct command.
MANUAL = (
    "Task '{task}' was created manually (no .state file)."
    " Use 'python ~/.automaton/scripts/status.py --create-task' to create tasks properly."
    " (automaton --create-task {name})"
)
STRAY = "folder {folder} is not a task: task names are kebab-case; rename it or move it out of tasks/"


def task_findings(ref: TaskRef, folder: Path) -> tuple[str | None, list[str]]:
    """(phase or None, violations) for one task folder, without writing anything
    (`record_findings` of what `load_dir` reads)."""
    try:
        rec: tasks.TaskRecord | BadInput = tasks.load_dir(ref, folder)
    except BadInput as exc:  # a corrupt `.state`, or a bad key file (store.key)
        rec = exc
    return record_findings(ref, rec)


def record_findings(ref: TaskRef, rec: tasks.TaskRecord | BadInput,
                    keyed: bool = False) -> tuple[str | None, list[str]]:
    """`task_findings` for a task already read: `rec` is its record, or the BadInput reading it raised."""
    if isinstance(rec, BadInput):
        return None, [rec.message]
    if rec.tamper:
        return rec.phase, [f"TAMPERED: {rec.tamper}"]
    if rec.phase is None:
        return None, [MANUAL.format(task=ref, name=ref.name)]
    found = []
    if keyed and rec.chain.legacy:
        found.append(unkeyed(rec.log_file, f"a human who has checked the task and its log re-keys it:"
                             f" automaton --approve --task {ref} --to {rec.phase}"))
    bad = ph.forbidden_present(rec.phase, rec.present)
    if bad:
        found.append(f"forbidden artifacts for phase {rec.phase!r}: {', '.join(bad)}")
    bound = rec.bound()  # only an artifact an approval binds can demote: hash those alone
    dem = demotion(rec.phase, bound, rec.current_hashes(bound)) if bound else None
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


def unkeyed(log: Path, fix: str) -> str:
    """The audit's finding for an intact log that has no keyed line, with its `fix`."""
    return (f"UNKEYED (legacy): {log} has no keyed line: written before automaton keyed its logs, or"
            f" wholly replaced by someone without the key (the two look the same); {fix}")


def _report(project: Project, targets: list[tuple[TaskRef, Path]], title: str, strays: bool = True) -> Outcome:
    found = [(ref, task_findings(ref, folder)) for ref, folder in targets]
    return _rows(project, found, tasks.stray_folders(project) if strays else [], title)


def _rows(project: Project, found: list[tuple[TaskRef, tuple[str | None, list[str]]]], strays: list[Path],
          title: str) -> Outcome:
    """The report of `found` (each task's `task_findings`) and of the `strays` (task folders
    with names that are not task names)."""
    out = Outcome()
    rows: list[dict[str, object]] = []
    for ref, (phase, violations) in found:
        name = str(ref)
        # Only a task without a phase can be a legacy folder: format that finding for it alone.
        if phase is None and violations[:1] == [MANUAL.format(task=name, name=ref.name)]:
            deleted = tasks.deleted_state(project, ref)
            if deleted:  # not a legacy folder: its state files were deleted (store.tasks.deleted_state)
                violations = [f"TAMPERED: {deleted}"]
        rows.append({"task": name, "phase": phase, "violations": violations})
        mark = "VIOLATION" if violations else "ok"
        out.lines.append(f"  {mark:9} {name}: {phase or '-'}")
        out.lines += [f"            - {v}" for v in violations]
    for folder in strays:
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
    found = [f"{path}: not a folder; automaton keeps its files in this folder: move the file away"
             for path in (project.tasks_dir, project.dot) if path.exists() and not path.is_dir()]
    if project.dot.is_dir():
        try:
            scope_overrides(project)
        except BadInput as exc:
            found.append(exc.message)
    return found


def key_findings(project: Project) -> tuple[str | None, list[str]]:
    """(the key file, or None when it does not exist yet; violations): a key file that cannot be
    used, and a focus log that is tampered or unkeyed. Reads only: never creates the key."""
    try:
        path = str(key_path()) if load_key(create=False) is not None else None
    except BadInput as exc:
        return str(key_path()), [exc.message]
    found: list[str] = []
    if not project.dot.is_dir():  # no focus can live there (`layout_findings` says why)
        return path, found
    try:
        read_focus(project)
    except BadInput as exc:
        found.append(f"TAMPERED: {exc.message}")
    else:
        if project.focus_log.is_file() and chainlog.read_chain(project.focus_log).legacy:
            found.append(unkeyed(project.focus_log, "a human re-keys it: automaton --focus TASK (or --focus --clear)"))
    return path, found


def anchor_findings(project: Project) -> tuple[list[str], int]:
    """(violations, logs anchored now): a task, loop or project log whose anchor exists but
    whose log (or folder) is gone (`missing: tasks/T (anchored at line N)`), and the anchoring of
    the loop, config and focus logs that have none yet (`store.chainlog.adopt`). Archived
    loops are history, not a brake: not reported. Inside an agent's sandbox (the anchors
    hidden) neither is done."""

    try:
        anchors = anchor.under(project.root)
    except (anchor.Hidden, OSError, BadInput):
        return [], 0
    root = Path(os.path.realpath(project.root))
    found: list[str] = []
    for each in anchors:
        parts = Path(each.path).relative_to(root).parts
        if os.path.lexists(each.path) or ".archive" in parts:
            continue
        found.append(f"missing: {'/'.join(parts[:-1]) or parts[-1]} (anchored at line {each.count}): it was"
                     f" deleted; restore it from a backup, or a human accepts the loss: {_accept_hint(parts)}")
    logs = [project.config_log, project.focus_log]
    if project.loops_dir.is_dir():
        logs += [d / ".state.log" for d in sorted(project.loops_dir.iterdir()) if not d.name.startswith(".")]
    return found, sum(chainlog.adopt(log) for log in logs if log.is_file())


def _accept_hint(parts: tuple[str, ...]) -> str:
    """The `--accept-rollback` command for a log at project-relative `parts`."""
    return anchor.accept_command(Path(*parts))


# The Loops section of --audit comes from the loop store; injected to keep
# this module free of loop imports. Signature: (project) -> (lines, rows, violations).
LoopSection = Callable[[Project], tuple[list[str], list[dict[str, object]], int]]


def _hook_findings(project: Project) -> list[str]:
    """`doctor_checks.hook_findings` (an agent hook removed or switched off), read only where
    an agent's folder exists: --audit runs from scripts and every tick."""
    if not any((project.root / d).is_dir() for d in (".claude", ".codex", ".gemini")):
        return []

    return hook_findings(project)


def _sessions_line(project: Project) -> str:
    """How agent sessions are held (`project_config.sessions_label`: hooks-only reads "best
    effort"), or why that cannot be read (the config finding of `layout_findings` flags it)."""
    try:
        return pc.sessions_label(pc.sessions(project))
    except AutomatonError as exc:
        return f"unknown ({exc.message})"


def audit(project: Project, loop_section: LoopSection | None = None) -> Outcome:
    """Every task, every loop and the focus; exit 1 when anything is flagged (an unkeyed log too).

    data: {"ok": bool, "key": str | None, "sessions": str, "project": [str], "tasks": [...], "loops": [...]};
    `sessions` is how agent sessions are held (`project_config.sessions_label`, one line);
    `key` is the key file (None while none exists); `project` lists `layout_findings`,
    `key_findings` and the agent hooks' liveness (`doctor_checks.hook_findings`; each also a
    VIOLATION line). Never creates the key.
    """
    strays: list[Path] = []
    # Each record is dropped once its findings are made (and its log anchored when it had no
    # anchor yet): an audit of thousands of tasks keeps their findings, not their parsed logs.
    found: list[tuple[TaskRef, tuple[str | None, list[str]]]] = []
    adopted = 0
    for ref, _, rec in scan(project, strays):
        found.append((ref, record_findings(ref, rec, keyed=True)))
        if isinstance(rec, tasks.TaskRecord):
            adopted += chainlog.adopt(rec.log_file, rec.chain)
    out = _rows(project, found, strays, "Tasks")
    task_bad = 0 if out.ok else 1
    key, key_found = key_findings(project)
    missing, more = anchor_findings(project)
    adopted += more
    broken = layout_findings(project) + key_found + _hook_findings(project) + missing
    sessions = _sessions_line(project)
    out.lines[:0] = [f"audit of {project.root}", f"  key: {key or 'none yet (made by the first write)'}",
                     f"  sessions: {sessions}"]
    if adopted:
        out.lines.insert(3, f"  anchored {adopted} keyed log(s) that had no anchor yet (the first use of anchors"
                            " here): an older copy restored over one now reads as TAMPERED")
    out.lines[3:3] = [f"  {'VIOLATION':9} {v}" for v in broken]
    loops_rows: list[dict[str, object]] = []
    loop_bad = 0
    if loop_section is not None:
        lines, loops_rows, loop_bad = loop_section(project)
        out.lines += lines
    assert out.data is not None
    out.data["project"] = broken
    out.data["key"] = key
    out.data["sessions"] = sessions
    out.data["loops"] = loops_rows
    out.data["ok"] = not (task_bad or loop_bad or broken)
    out.code = ExitCode.OK if out.data["ok"] else ExitCode.REFUSED
    return out
