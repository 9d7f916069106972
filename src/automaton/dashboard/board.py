"""The task board: every task of every project by phase, the sign-offs waiting, and what
`--audit` flags (read-only: the audit writes nothing, and neither does this)."""

from __future__ import annotations

from typing import Any

from automaton.commands.loop_views import audit_section
from automaton.commands.reports import audit
from automaton.core import phases as ph
from automaton.core.errors import AutomatonError
from automaton.core.names import TaskRef
from automaton.dashboard.views import gone
from automaton.store import tasks
from automaton.store.layout import Project

UNREADABLE = "unreadable"  # the column of a task whose phase cannot be read (tampered, legacy, corrupt)


def signoff_of(project: Project, task: str) -> dict[str, str] | None:
    """{task, phase, artifact, sha256 (hex, or MISSING/UNREADABLE)} of a task waiting for a
    sign-off (`X:awaiting_approval`), None for any other task (or one that cannot be read)."""
    try:
        rec = tasks.load(project, TaskRef.parse(task))
    except AutomatonError:
        return None
    if rec.tamper or rec.phase is None or not ph.is_awaiting(rec.phase):
        return None
    art = ph.ARTIFACT[ph.base(rec.phase)]
    return {"task": str(rec.ref), "phase": rec.phase, "artifact": art, "sha256": tasks.sha256_file(rec.dir / art)}


def task_board(projects: list[Project]) -> dict[str, Any]:
    """{columns: [{phase, tasks: [{project, task, phase, violations}]}] (one per phase of
    core.phases.PHASES, then UNREADABLE), signoffs: [{project, task, phase, artifact, sha256}],
    violations: [{project, where, text}] (every line `--audit` flags, per project), sessions:
    [{project, project_name, text}] (how agent sessions are held, `--audit`'s `sessions` line:
    "sandboxed: …" or "hooks-only (best effort …)")}."""
    columns: dict[str, list[dict[str, Any]]] = {p: [] for p in (*ph.PHASES, UNREADABLE)}
    signoffs: list[dict[str, Any]] = []
    violations: list[dict[str, Any]] = []
    sessions: list[dict[str, Any]] = []
    for i, project in enumerate(projects):
        why = gone(project)
        if why is not None:
            violations.append({"project": i, "project_name": project.root.name, "where": "project", "text": why})
            continue
        try:
            report = audit(project, audit_section)
        except AutomatonError as exc:
            violations.append({"project": i, "project_name": project.root.name, "where": "audit", "text": exc.message})
            continue
        data = report.data or {}
        if data.get("sessions"):
            sessions.append({"project": i, "project_name": project.root.name, "text": data["sessions"]})
        for text in data.get("project", []):
            violations.append({"project": i, "project_name": project.root.name, "where": "project", "text": text})
        for row in data.get("tasks", []):
            card = {"project": i, "project_name": project.root.name, "task": row["task"],
                    "phase": row["phase"] or "-", "violations": row["violations"]}
            columns[row["phase"] if row["phase"] in columns else UNREADABLE].append(card)
            for text in row["violations"]:
                violations.append({"project": i, "project_name": project.root.name, "where": row["task"],
                                   "text": text})
            if row["phase"] and ph.is_phase(row["phase"]) and ph.is_awaiting(row["phase"]) and not row["violations"]:
                found = signoff_of(project, row["task"])
                if found is not None:
                    signoffs.append({"project": i, "project_name": project.root.name, **found})
        for row in data.get("loops", []):
            if row.get("flag"):
                violations.append({"project": i, "project_name": project.root.name, "where": f"loop {row['name']}",
                                   "text": row["flag"]})
    return {"columns": [{"phase": p, "tasks": t} for p, t in columns.items()], "signoffs": signoffs,
            "violations": violations, "sessions": sessions}
