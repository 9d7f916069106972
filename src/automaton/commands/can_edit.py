"""`--can-edit`: may the agent write this file now? (the per-phase scopes: README.md#tasks-phases-and-sign-offs).

This module sits on the hook path, which runs before every agent edit: keep imports light.
"""

from __future__ import annotations

import os
from pathlib import Path

from automaton import install_paths
from automaton.core import phases as ph
from automaton.core.errors import BadInput
from automaton.core.names import TaskRef
from automaton.core.record import record
from automaton.resolve import case_insensitive, posix, real, relative_parts
from automaton.store.layout import DOT, TASKS, Project

TASK_ENV = "AUTOMATON_TASK"
FOCUS_LOCK = "focus.lock"  # taken by every `--focus`, and left behind (commands.focus.set_focus)

# typing, collections.abc and dataclasses stay off the hook path (core/record.py says why).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Hashable
    from typing import TypeVar

    _T = TypeVar("_T")


class Memo:
    """Values computed once per decision call (one hook call, one --can-edit), never across
    calls: the project's real root, the task in force, its `.state`/log/artifact hashes and the
    config overrides are read once however many paths a MultiEdit/apply_patch/commit names.
    A `make` that raises stores nothing (the caller denies on the first error anyway)."""

    def __init__(self) -> None:
        self._values: dict[Hashable, object] = {}

    def get(self, key: Hashable, make: Callable[[], _T]) -> _T:
        """The value under `key`, computed by `make()` on first use."""
        if key not in self._values:
            self._values[key] = make()
        return self._values[key]  # type: ignore[return-value]  # stored by make() under this key

    def root(self, project: Project) -> Path:
        """The project's real root."""
        return self.get(("root", project.root), lambda: real(project.root, project.root))

# Agent hook configuration files (project-relative, lowercased): an edit there could remove
# the hook itself, so no phase ever allows it. Humans edit them (or run --install-hooks).
HOOK_CONFIG: frozenset[tuple[str, ...]] = frozenset({
    (".claude", "settings.json"),
    (".claude", "settings.local.json"),
    (".codex", "hooks.json"),
    (".codex", "config.toml"),
    (".gemini", "settings.json"),
    ("opencode.json",),
    ("opencode.jsonc",),
})
# OpenCode loads everything in a `.opencode/` folder as configuration or code (plugins such as
# automaton's own hook, custom tools, `package.json` dependencies it installs, agents, commands)
# and an `opencode.json` at any depth from where it starts up to the git worktree's top
# (opencode-ai 1.18.33 walks up from its directory): both are denied at any depth.
OPENCODE_TREE = ".opencode"
OPENCODE_CONFIGS = ("opencode.json", "opencode.jsonc")
HOOK_CONFIG_WHY = "agent hook configuration is changed only by a human"


@record(frozen=True)
class Decision:
    """The answer: `allowed`, a one-line `reason`, and the resolved real `path`."""

    allowed: bool
    reason: str
    path: str


def is_hook_config(parts: tuple[str, ...]) -> bool:
    """A hook settings file, or a folder holding one (`rm -rf .claude` and `mv .codex x` remove
    the hook as surely as editing the file does). Case-insensitive, like `protected`."""
    lowered = tuple(p.lower() for p in parts)
    if OPENCODE_TREE in lowered or (lowered and lowered[-1] in OPENCODE_CONFIGS):
        return True
    return bool(lowered) and any(entry[:len(lowered)] == lowered for entry in HOOK_CONFIG)


def protected(parts: tuple[str, ...]) -> str | None:
    """Why a project-relative path is always denied, or None: `.automaton/`, `.git`, `.state*`
    and the agents' hook settings (`HOOK_CONFIG` and their folders). The one rule shared by
    --can-edit, the agent hooks, the loop can-edit and the git pre-commit hook.
    Case-insensitive on purpose: `.STATE` or `.Claude/Settings.json` must not slip past on any volume."""
    lowered = [p.lower() for p in parts]
    if not parts:
        return "the project root itself is not a file"
    if lowered[0] == DOT:
        return f"{DOT}/ is written only by automaton itself"
    if ".git" in lowered:
        return ".git internals are never edited by an agent"
    if lowered[-1].startswith(".state"):
        return ".state files are written only by the automaton CLI"
    if is_hook_config(parts):
        return HOOK_CONFIG_WHY
    return None


def own_install(path: Path, memo: Memo | None = None) -> str | None:
    """Why real `path` is always denied as part of the running automaton's install (it lies
    in `install_paths.own_roots()` or holds one: the hook and the schedule run those files),
    or None. `memo`: the roots are found once per call."""
    roots = (memo or Memo()).get(("own install",), install_paths.own_roots)
    hit = install_paths.clash(str(path), roots)
    if hit is None:
        return None
    return f"{path}: automaton itself runs from {hit}, which no agent edits; {install_paths.FIX}"


def task_scope_allows(
    phase: str, parts: tuple[str, ...], task_parts: tuple[str, ...], *, fold: bool = False,
    override: list[str] | None = None,
) -> bool:
    """Whether `phase` lets the agent write the project-relative `parts` (the README's "What a phase may edit").

    `fold=True` compares letter case-insensitively (a case-insensitive volume, where
    `Tasks/T/spec.md` is `tasks/T/SPEC.md`). "Outside tasks/ and .automaton/" is always
    tested case-insensitively: denying `Tasks/` on a case-sensitive volume errs on the safe side.
    `override`: the project's patterns for this phase (`.automaton/config.json`); they replace
    the built-in rule beyond the phase's own artifact, and never reach into tasks/ or .automaton/.
    """
    if not parts:
        return False

    def norm(s: str) -> str:
        return s.lower() if fold else s

    in_task = tuple(map(norm, parts[:-1])) == tuple(map(norm, task_parts))
    name = parts[-1]
    if phase in ph.ARTIFACT and in_task and norm(name) == norm(ph.ARTIFACT[phase]):
        return True
    outside = parts[0].lower() not in (TASKS, DOT)
    if override is not None:
        return outside and _matches(override, parts, fold)
    if phase == "implement":
        return outside
    if phase == "doc_review":
        return outside and (name.lower().endswith(".md") or parts[0].lower() == "docs")
    return False


def _matches(patterns: list[str], parts: tuple[str, ...], fold: bool) -> bool:
    """gitignore-style match of project-relative `parts` (`core.scope`: pathspec's answer,
    imported only for patterns that are not plain; the hook path stays light)."""
    from automaton.core.scope import Scope

    rel = posix(parts)
    if fold:
        return Scope([p.lower() for p in patterns]).match_file(rel.lower())
    return Scope(patterns).match_file(rel)


def which_task(project: Project, explicit: str | None) -> TaskRef | None:
    """--task, else $AUTOMATON_TASK, else the project's focus, else None.

    BadInput (a hook denies) when the focus and its log are both gone but `focus.lock` shows a
    human set a focus here once: deleting or emptying them must not widen the scope to "no
    task" (`commands.focus.read_focus` already refuses a focus file or log missing alone)."""
    value = explicit or os.environ.get(TASK_ENV) or None
    if value:
        return TaskRef.parse(value)
    from automaton.commands.focus import RESET, read_focus

    ref = read_focus(project)
    if ref is None and not os.path.lexists(project.focus_file) and os.path.lexists(project.dot / FOCUS_LOCK):
        raise BadInput(f"{project.focus_file} and its log are gone but {FOCUS_LOCK} shows a focus was set:"
                       f" they were removed outside automaton; {RESET}")
    return ref


@record(frozen=True)
class _TaskScope:
    """What one task's phase scope needs, read once per call. `denial` non-empty: every path
    is denied with it (tampered, legacy, pending demotion)."""

    denial: str
    phase: str = ""
    task_parts: tuple[str, ...] = ()
    override: list[str] | None = None
    fold: bool = False


def _task_scope(project: Project, ref: TaskRef, root: Path) -> _TaskScope:
    from automaton.core.approvals import demotion
    from automaton.store import tasks

    rec = tasks.load(project, ref)
    if rec.tamper:
        return _TaskScope(f"task {ref} is tampered ({rec.tamper}); nothing may be edited")
    if rec.phase is None:
        return _TaskScope(f"task {ref} has no .state: run automaton --phase --task {ref} first")
    bound = rec.bound()
    dem = demotion(rec.phase, bound, rec.current_hashes(bound))
    if dem is not None:
        return _TaskScope(
            f"task {ref}: approved {dem.artifact} changed after sign-off (demotion to {dem.to_phase}"
            f" pending); nothing may be edited until automaton --phase --task {ref} applies it"
        )
    task_parts = relative_parts(real(rec.dir, root), root)
    if task_parts is None:
        raise BadInput(f"task folder {rec.dir} lies outside the project {root}")
    from automaton.store.project_config import scope_overrides

    return _TaskScope("", rec.phase, task_parts, scope_overrides(project).get(rec.phase),
                      case_insensitive(root))


def phase_scope(
    project: Project, ref: TaskRef, parts: tuple[str, ...], path: str = "", memo: Memo | None = None,
) -> Decision:
    """The decision of task `ref`'s phase on project-relative `parts` (already past `protected`).

    Denies everything while the task is tampered, legacy (no `.state`), or has a pending
    demotion (an approved artifact changed: the task is effectively back at a sign-off).
    Raises BadInput (exit 2) for an unknown task or a corrupt `.state`. `memo`: share the
    task's reads between the paths of one call.
    """
    memo = memo or Memo()
    root = memo.root(project)
    scope = memo.get(("scope", ref), lambda: _task_scope(project, ref, root))
    if scope.denial:
        return Decision(False, scope.denial, path)
    where = posix(parts)
    if task_scope_allows(scope.phase, parts, scope.task_parts, fold=scope.fold, override=scope.override):
        return Decision(True, f"{where} is in scope of {ref} at {scope.phase}", path)
    return Decision(False, f"{where} is outside the scope of task {ref} at phase {scope.phase!r}"
                    f"{why_nothing(ref, scope.phase)}", path)


def why_nothing(ref: TaskRef, phase: str) -> str:
    """The tail of a denial at a phase that lets the agent edit nothing until a human acts
    (a pending sign-off, `complete`, `human_intervention`): who acts, and the exact command;
    "" at any other phase."""
    if ph.is_awaiting(phase):
        return (f": it waits for a sign-off, which only a human gives — a human reviews"
                f" {ph.ARTIFACT[ph.base(phase)]} and runs: automaton --approve --task {ref}")
    if phase == ph.COMPLETE:
        return (": the task is complete and nothing is in its scope — a human runs"
                " automaton --focus --clear (or --focus NEXT_TASK)")
    if phase == ph.HUMAN:
        return (f": the task waits for a human, who decides with: automaton --approve --task {ref}"
                " --to PHASE")
    return ""


def decide(
    project: Project,
    file: str,
    *,
    cwd: Path | None = None,
    task: str | None = None,
    memo: Memo | None = None,
) -> Decision:
    """Decide one write by the task phase scope. Relative `file` is resolved against `cwd`
    (default: the project root). Raises BadInput for an unknown task or corrupt `.state`.
    `memo`: share the task, focus and config reads between the paths of one call."""
    memo = memo or Memo()
    root = memo.root(project)
    path = real(file, cwd or root)
    parts = relative_parts(path, root)
    if parts is None:
        return Decision(False, f"{path} is outside the project {root}", str(path))
    why = protected(parts)
    if why:
        return Decision(False, f"{posix(parts)}: {why}", str(path))
    why = own_install(path, memo)
    if why:
        return Decision(False, why, str(path))
    ref = memo.get(("task", task), lambda: which_task(project, task))
    if ref is None:
        return Decision(True, "no task in focus: only the always-denied paths apply", str(path))
    return phase_scope(project, ref, parts, str(path), memo)
