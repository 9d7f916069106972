"""`automaton --sandbox [--task T] -- CMD ARGS…`: an interactive agent under the kernel sandbox.

The writable set is the task's phase scope made coarse enough for the kernel
(`commands.writable`, which has the table per phase). Project overrides in
`.automaton/config.json` are enforced by the hook only. Always added: the agent CLI's own
state folders, a private temp dir; always hidden: the record key's folder. The phase's
artifact is created empty when missing, so that the kernel can grant that file (not its folder).
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

from automaton.commands.writable import artifact_of, hidden_paths, project_writable
from automaton.core.errors import BadInput
from automaton.core.names import TaskRef
from automaton.core.sandbox import Policy
from automaton.store import tasks
from automaton.store.layout import Project

# Harness names by executable basename, for the agent's own state folders.
AGENTS = {"claude": "claude", "codex": "codex", "gemini": "gemini", "aider": "aider", "opencode": "opencode"}


@dataclass(frozen=True)
class SessionPlan:
    """policy: what the kernel enforces; task/phase: whose scope it is (None: no task);
    lines: what to tell the human before the agent starts."""

    policy: Policy
    task: str | None
    phase: str | None
    lines: list[str]


def plan(project: Project, task: str | None, argv: list[str], *, home: Path | None = None) -> SessionPlan:
    """The sandbox for running `argv` on `project` with `task`'s scope (default: the focus).

    Raises BadInput (exit 2) for an empty argv, an unknown task, or a task whose state is
    tampered (its scope cannot be trusted). The temp dir is created here (mode 0700)."""
    if not argv:
        raise BadInput("--sandbox needs a command after --, e.g. automaton --sandbox -- claude")
    ref: TaskRef | None = TaskRef.parse(task) if task else _focus(project)
    phase: str | None = None
    task_dir: Path | None = None
    if ref is not None:
        rec = tasks.load(project, ref)
        if rec.tamper:
            raise BadInput(f"task {ref} is tampered ({rec.tamper}): a human re-seals it before a session")
        if rec.phase is None:
            raise BadInput(f"task {ref} has no .state (created by hand): run automaton --phase --task {ref} first")
        phase, task_dir = rec.phase, rec.dir
    from automaton.sandbox import agent_state_dirs

    home = home or Path.home()
    tmp = Path(tempfile.mkdtemp(prefix="automaton-session-"))
    agent = AGENTS.get(Path(argv[0]).name, "command")
    in_project = project_writable(project.root, phase, task_dir)
    notes: list[str] = []
    artifact = artifact_of(phase)
    if artifact is not None and task_dir is not None:
        why = tasks.ensure_artifact(task_dir, artifact)
        if why is not None:  # never grant another inode under the artifact's name
            in_project.remove(task_dir / artifact)
            notes.append(f"automaton --sandbox: {artifact} is not writable: {why}; a human replaces it"
                         " with a plain file and starts the session again")
    writable = [*in_project, tmp, *agent_state_dirs(agent, home)]
    label = f"session {ref} ({phase})" if ref else "session (no task)"
    policy = Policy(tuple(writable), hidden_paths(home), tmp, label)
    scope = ", ".join(str(p.relative_to(project.root)) for p in in_project) or "nothing in the project"
    lines = [f"automaton --sandbox: {label}; writable: {scope}; everything else is read-only", *notes]
    if artifact is not None and task_dir is not None:
        lines.append(f"automaton --sandbox: {artifact} is granted as a file: save it in place (an editor's"
                     " write-to-temp-and-rename save is refused in the task folder)")
    return SessionPlan(policy, str(ref) if ref else None, phase, lines)


def _focus(project: Project) -> TaskRef | None:
    from automaton.commands.focus import read_focus

    return read_focus(project)
