"""`automaton --sandbox [--task T] -- CMD ARGS…`: an interactive agent under the kernel sandbox.

The writable set is the task's phase scope made coarse enough for the kernel, which grants
rights per directory or per existing file (Landlock and Seatbelt alike):

| phase | writable in the project |
|---|---|
| research … referee (one artifact each) | the task's folder |
| implement | every top-level entry except `tasks/`, `.automaton/`, `.git`, agent settings |
|           | folders; and the task's folder |
| doc_review | the task's folder, `docs/`, every existing `*.md` outside `tasks/`, `.automaton/`, `.git` |
| `:awaiting_approval`, `:approved`, new, complete, human_intervention | nothing |
| no task (no `--task`, no focus) | as implement, without a task folder |

Inside the task's folder the kernel cannot tell SPEC.md from `.state`: there the keyed state
log holds (a `.state` written by anything but automaton is tamper), and the transition rules
hold against artifacts of later phases. Project overrides in `.automaton/config.json` are
enforced by the hook only. Always added: the agent CLI's own state folders, a private temp
dir; always hidden: the record key's folder.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from automaton.core import phases as ph
from automaton.core.errors import BadInput
from automaton.core.names import TaskRef
from automaton.core.sandbox import Policy
from automaton.store import tasks
from automaton.store.layout import DOT, TASKS, Project

# Top-level entries never writable in a session: brake state, git internals, agent settings.
NEVER = frozenset({TASKS, DOT, ".git", ".claude", ".codex", ".gemini"})
# Harness names by executable basename, for the agent's own state folders.
AGENTS = {"claude": "claude", "codex": "codex", "gemini": "gemini", "aider": "aider", "opencode": "opencode"}
KEY_DIR = (".config", "automaton")


@dataclass(frozen=True)
class SessionPlan:
    """policy: what the kernel enforces; task/phase: whose scope it is (None: no task);
    lines: what to tell the human before the agent starts."""

    policy: Policy
    task: str | None
    phase: str | None
    lines: list[str]


def key_dir(home: Path | None = None) -> Path:
    """The folder of the per-user record key (`~/.config/automaton`), hidden from every agent."""
    return (home or Path.home()).joinpath(*KEY_DIR)


def _project_entries(root: Path) -> list[Path]:
    try:
        return sorted(p for p in root.iterdir() if p.name not in NEVER and not p.name.lower().startswith(".state"))
    except OSError as exc:
        raise BadInput(f"cannot list the project {root}: {exc.strerror}") from None


def _markdown(root: Path) -> list[Path]:
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        if Path(dirpath) == root:
            dirnames[:] = [d for d in dirnames if d not in NEVER]
        dirnames[:] = [d for d in dirnames if d != ".git"]
        found += [Path(dirpath) / f for f in filenames if f.lower().endswith(".md")]
    return sorted(found)


def project_writable(root: Path, phase: str | None, task_dir: Path | None) -> list[Path]:
    """The project paths the kernel lets a session at `phase` write (see the module table).
    `phase` None: no task is in force."""
    if phase is None:
        return _project_entries(root)
    base = phase.partition(":")[0]
    if ":" in phase or base not in ph.ARTIFACT or task_dir is None:
        return []
    if base == "implement":
        return [*_project_entries(root), task_dir]
    if base == "doc_review":
        docs = root / "docs"
        return [task_dir, *([docs] if docs.is_dir() else []), *_markdown(root)]
    return [task_dir]


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
    writable = [*in_project, tmp, *agent_state_dirs(agent, home)]
    label = f"session {ref} ({phase})" if ref else "session (no task)"
    policy = Policy(tuple(writable), (key_dir(home),), tmp, label)
    scope = ", ".join(str(p.relative_to(project.root)) for p in in_project) or "nothing in the project"
    lines = [f"automaton --sandbox: {label}; writable: {scope}; everything else is read-only"]
    return SessionPlan(policy, str(ref) if ref else None, phase, lines)


def _focus(project: Project) -> TaskRef | None:
    from automaton.commands.focus import read_focus

    return read_focus(project)
