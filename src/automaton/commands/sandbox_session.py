"""`automaton --sandbox [--task T] -- CMD ARGS…`: an interactive agent under the kernel sandbox.

The writable set is the task's phase scope made coarse enough for the kernel
(`commands.writable`, which has the table per phase). Project overrides in
`.automaton/config.json` are enforced by the hook only. Always added: the agent CLI's own
state folders, a private temp dir (which holds gemini's and opencode's private folders:
`sandbox.private_home`); always hidden: the record key's folder; masked (and hidden where no
mount namespace is in force): the user's credential stores (`writable.secret_stores`).
The phase's artifact is created empty when missing, so that the kernel can grant that file
(not its folder).
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from automaton.commands.focus import read_focus
from automaton.commands.writable import agent_policy, artifact_of, grants, secret_stores
from automaton.core.errors import BadInput
from automaton.core.names import TaskRef
from automaton.core.sandbox import Policy
from automaton.harnesses._cli import has_flag
from automaton.harnesses.codex import OWN_SANDBOX_FLAGS
from automaton.sandbox import agent_state_dirs, private_home, session_env
from automaton.store import project_config, tasks
from automaton.store.layout import Project

# Harness names by executable basename, for the agent's own state folders.
AGENTS = {"claude": "claude", "codex": "codex", "gemini": "gemini", "aider": "aider", "opencode": "opencode"}


@dataclass(frozen=True)
class SessionPlan:
    """policy: what the kernel enforces; task/phase: whose scope it is (None: no task);
    lines: what to tell the human before the agent starts; env: variables set on the agent
    (`sandbox.session_env`: where its state goes inside the granted folders;
    `sandbox.private_home`: a private copy of its home for an agent that must create files
    beside its settings, gemini)."""

    policy: Policy
    task: str | None
    phase: str | None
    lines: list[str]
    env: dict[str, str] = field(default_factory=dict)


def plan(project: Project, task: str | None, argv: list[str], *, home: Path | None = None,
         own: tuple[str, ...] | None = None) -> SessionPlan:
    """The sandbox for running `argv` on `project` with `task`'s scope (default: the focus).

    Raises BadInput (exit 2) for an empty argv, an unknown task, a task whose state is
    tampered (its scope cannot be trusted), or an invalid or unsealed `.automaton/config.json`
    (its credential store lists). The temp dir is created here (mode 0700). `own`: the real
    paths of automaton's install never granted (default: this process's,
    `install_paths.own_roots`)."""
    if not argv:
        raise BadInput("--sandbox needs a command after --, e.g. automaton --sandbox -- claude")
    ref: TaskRef | None = TaskRef.parse(task) if task else _focus(project)
    phase, task_dir = _task_of(project, ref)

    home = home or Path.home()
    agent = AGENTS.get(Path(argv[0]).name, "command")
    stores = secret_stores(project.root, agent, home)
    notes: list[str] = []
    artifact = artifact_of(phase)
    unfit: str | None = None
    if artifact is not None and task_dir is not None:
        unfit = tasks.ensure_artifact(task_dir, artifact)
        if unfit is not None:  # never grant another inode under the artifact's name
            notes.append(f"automaton --sandbox: {artifact} is not writable: {unfit}; a human replaces it"
                         " with a plain file and starts the session again")
    tmp = Path(tempfile.mkdtemp(prefix="automaton-session-"))
    granted = grants(project.root, phase, task_dir, own=own)
    in_project = [p for p in granted.paths if unfit is None or task_dir is None or p != task_dir / str(artifact)]
    writable = [*in_project, tmp, *agent_state_dirs(agent, home)]
    label = f"session {ref} ({phase})" if ref else "session (no task)"
    policy = agent_policy(project.root, writable, tmp, label, agent=agent, cwd=Path.cwd(), argv=argv,
                          isolation=isolation(project), home=home, stores=stores)
    scope = ", ".join(str(p.relative_to(project.root)) for p in in_project) or "nothing in the project"
    lines = [f"automaton --sandbox: {label}; writable: {scope}; everything else is read-only", *notes,
             *(f"automaton --sandbox: {line}" for line in stores.notes())]
    note = granted.note(project.root)
    if note is not None:
        lines.append(f"automaton --sandbox: {note}")
    if artifact is not None and task_dir is not None and unfit is None:
        lines.append(f"automaton --sandbox: {artifact} is granted as a file: save it in place (an editor's"
                     " write-to-temp-and-rename save is refused in the task folder)")
    lines += _codex_note(agent, argv)
    env, problems = _agent_env(agent, home, tmp)
    return SessionPlan(policy, str(ref) if ref else None, phase, [*lines, *problems], env)


def _agent_env(agent: str, home: Path, tmp: Path) -> tuple[dict[str, str], list[str]]:
    """(the variables set on the agent: `sandbox.session_env` and `sandbox.private_home`, made
    in `tmp`; the lines naming user files that could not be copied into a private home)."""
    own_home, problems = private_home(agent, home, tmp, os.environ)
    return {**session_env(agent, home, os.environ), **own_home}, [f"automaton --sandbox: {p}" for p in problems]


def _codex_note(agent: str, argv: list[str]) -> list[str]:
    """The line for a codex session started without its own sandbox turned off (none otherwise)."""
    if agent == "codex" and not has_flag(tuple(argv[1:]), *OWN_SANDBOX_FLAGS):
        return ["automaton --sandbox: codex's own sandbox cannot start inside this one (its bubblewrap"
                " cannot mount here): start it with --sandbox danger-full-access; the kernel sandbox holds"]
    return []


def _task_of(project: Project, ref: TaskRef | None) -> tuple[str | None, Path | None]:
    """(phase, folder) of the session's task, (None, None) without one. BadInput for a tampered
    task (its scope cannot be trusted) or one without `.state`."""
    if ref is None:
        return None, None
    rec = tasks.load(project, ref)
    if rec.tamper:
        raise BadInput(f"task {ref} is tampered ({rec.tamper}): a human re-seals it before a session")
    if rec.phase is None:
        raise BadInput(f"task {ref} has no .state (created by hand): run automaton --phase --task {ref} first")
    return rec.phase, rec.dir


def isolation(project: Project) -> str:
    """The project's sealed "isolation" (`store.project_config.isolation`)."""
    return project_config.isolation(project)


def _focus(project: Project) -> TaskRef | None:
    return read_focus(project)
