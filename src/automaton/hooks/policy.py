"""The one decision every agent hook and the git pre-commit hook share.

Given the project, the directory the tool call runs in (`cwd`) and the paths it would write,
answer allowed or denied with one line. Three layers, all of which must allow:

1. Always denied: anything `commands.can_edit.protected` names (`.state*`, `.automaton/`,
   `.git`, and the agents' own hook configuration: an agent that could edit
   `.claude/settings.json` could switch its brake off), and anything outside the project.
2. The task phase scope (`commands.can_edit`). Outside a loop worktree: `$AUTOMATON_TASK`,
   else the project's focus, else none (only layer 1 applies).
3. Inside a loop worktree `<project>/.automaton/loops/<name>/worktree`: the path must stay in
   that worktree and `commands.loop_views.can_edit_loop(..., loop_worktree=True)` must allow it (the
   loop's `file_scope`). The task is the loop's own (loop.json `task`, else the loop state's
   `current_task`), never the human's focus: a loop's scope must not change when a human
   focuses another task in the main checkout. A task-less loop gets only its `file_scope`. The
   task scope is anchored at the worktree (the agent edits the worktree's copy of the tree)
   while the phase itself is read from the main checkout's `tasks/<task>/.state`, the only
   authoritative one: the worktree's copy may be absent (state files need not be committed)
   or stale.

A path that reaches a file only through `/proc` or `/dev` (`hooks.aliases`) is denied first:
it names whatever another process has open, not a file the rules can judge. A path in the
agent's own temp folder (`hooks.tempdirs`: the session's `$TMPDIR`, `/tmp`; never the project,
the home folder or automaton's own entries, symlinks resolved first) is allowed next, in and
out of a loop worktree: the kernel sandbox grants the same folder.

Errors (corrupt `.state`, unknown task, a loop store that cannot be read) propagate as
exceptions; the hook entry turns every exception into a denial (fail closed).

Of the use cases, the hooks import only the edit decisions: `commands.can_edit` and
`commands.loop_views` (`loop_facts`, `can_edit_loop`; an import-linter contract in
pyproject.toml says so).
"""

from __future__ import annotations

import os
from pathlib import Path

from automaton.commands import can_edit
from automaton.core.names import LoopName, TaskRef
from automaton.core.record import record  # not dataclasses: on the hook path
from automaton.resolve import posix, real, relative_parts
from automaton.store.layout import Project, is_loop_worktree, loop_worktree_of


@record(frozen=True)
class Verdict:
    """`allowed`, and a one-line `reason` (for a denial: the path, the rule, what to do)."""

    allowed: bool
    reason: str


@record(frozen=True)
class Worktree:
    """A loop worktree: the loop's `name` and the worktree's real `root`."""

    name: LoopName
    root: Path


def project_for(project_flag: str | None, cwd: Path) -> Project:
    """`--project DIR` when given, else the project found from the tool call's `cwd`
    (inside a loop worktree: the main checkout owning it, `store.layout.find_root`)."""
    return Project.at(project_flag, cwd)


def worktree_of(project: Project, path: Path, memo: can_edit.Memo | None = None) -> Worktree | None:
    """The loop worktree holding real `path`, or None. A malformed loop name raises BadInput."""
    memo = memo or can_edit.Memo()
    root = memo.root(project)
    parts = relative_parts(path, root)
    if parts is None or len(parts) < 4:
        return None
    if not is_loop_worktree(parts[:4]):
        return None
    return _worktree(project, parts[2], memo)


def _worktree(project: Project, name_text: str, memo: can_edit.Memo) -> Worktree:
    name = LoopName.of(name_text)
    return memo.get(("worktree", name), lambda: Worktree(name, real(project.worktree_dir(name), memo.root(project))))


def check(project: Project, cwd: Path, paths: list[str], memo: can_edit.Memo | None = None,
          no_temp: set[str] | None = None) -> Verdict:
    """Decide a tool call that writes every one of `paths` (relative ones against `cwd`).

    The first denial wins; an empty `paths` is allowed (the call writes nothing). The task,
    focus, loop state and config are read once for all paths (`memo`, one per call).
    `no_temp`: those of `paths` never judged as temp writes (`git worktree add`'s path).
    """
    memo = memo or can_edit.Memo()
    # The cwd as given first, as `store.layout.find_root` takes it (whatever links lead to the
    # project): a folder of the worktree that links out of it (to `/`, to the main checkout)
    # leaves the agent the loop's.
    given = loop_worktree_of(Path(os.path.abspath(cwd)))
    home = (_worktree(project, given[1], memo) if given is not None and given[0] == memo.root(project)
            else worktree_of(project, real(cwd, project.root), memo))
    for raw in paths:
        verdict = check_one(project, cwd, raw, home, memo, temp=not no_temp or raw not in no_temp)
        if not verdict.allowed:
            return verdict
    return Verdict(True, "every path is in scope")


def check_one(
    project: Project, cwd: Path, raw: str, home: Worktree | None, memo: can_edit.Memo | None = None,
    *, temp: bool = True,
) -> Verdict:
    """Decide one path. `home` is the loop worktree the call runs in, if any. `temp`: a path
    in the agent's temp folder is allowed (`hooks.tempdirs`)."""
    memo = memo or can_edit.Memo()
    from automaton.hooks.aliases import alias_reason
    from automaton.resolve import check_text

    why = alias_reason(check_text(raw), cwd)
    if why:
        return Verdict(False, why)
    path = real(raw, cwd)
    if temp:
        from automaton.hooks.tempdirs import judge

        found = judge(path, memo.root(project), memo)
        if found is not None:
            return Verdict(*found)
    tree = worktree_of(project, path, memo)
    if home is not None and (tree is None or tree.name != home.name):
        return Verdict(False, f"{path}: an agent in loop {home.name!r} writes only inside its worktree {home.root}")
    if tree is None:
        decision = can_edit.decide(project, str(path), cwd=cwd, memo=memo)
        return Verdict(decision.allowed, decision.reason)
    return _in_worktree(project, cwd, path, tree, memo)


def _in_worktree(project: Project, cwd: Path, path: Path, tree: Worktree, memo: can_edit.Memo) -> Verdict:
    parts = relative_parts(path, tree.root)
    if parts is None:  # pragma: no cover - worktree_of found it inside
        return Verdict(False, f"{path} is outside the worktree of loop {tree.name!r}")
    why = can_edit.protected(parts)
    if why:
        return Verdict(False, f"{posix(parts)} (loop {tree.name} worktree): {why}")
    from automaton.commands.loop_views import can_edit_loop, loop_facts  # reads the loop store; lazy: hook path

    # The loop (resolved, its state and log verified, loop.json validated) is read once per
    # call, for its tasks and for every path's file_scope decision.
    facts = memo.get(("loop", tree.name), lambda: loop_facts(project, tree.name))
    # The loop's tasks: loop.json `task` and the state's `current_task` (a path must be in the
    # scope of both when they differ); none for a task-less loop. Never `$AUTOMATON_TASK` nor
    # the project's focus: both belong to the human's session in the main checkout, and a
    # loop's scope must not move with them.
    refs = [TaskRef.parse(task) for task in facts.tasks]
    for ref in refs:
        verdict = _phase_scope(project, ref, parts, memo)
        if not verdict.allowed:
            return verdict
    decision = can_edit_loop(project, tree.name, str(path), loop_worktree=True,
                             task=str(refs[0]) if refs else None, cwd=cwd, facts=facts)
    return Verdict(decision.allowed, decision.reason)


def _phase_scope(project: Project, ref: TaskRef, parts: tuple[str, ...], memo: can_edit.Memo) -> Verdict:
    """The task phase scope of worktree-relative `parts`, phase read from the main checkout.

    The one phase-scope rule of `commands.can_edit` (tamper, pending demotion, case folding)."""
    decision = can_edit.phase_scope(project, ref, parts, memo=memo)
    return Verdict(decision.allowed, decision.reason)


# Paths standing for "anywhere in the project": at the root and in a folder of its own. Inline
# interpreter code may write any file, so it is allowed only where both are in scope.
INLINE_PROBES = ("automaton-inline-code-probe", "automaton-inline-code-probe.d/automaton-inline-code-probe")


def wrapped_reason(project: Project, cwd: Path, sandbox_tasks: list[str], inline_code: list[str]) -> str | None:
    """Why a shell line is denied for what it runs rather than what it names, or None.

    `sandbox_tasks`: the `--task` of each `automaton --sandbox` wrapper on the line; each must be
    the task this call is judged under (`commands.can_edit.which_task`): an agent may not move
    into another task's scope. `inline_code`: descriptions of inline interpreter code that is
    not provably read-only; allowed only where the scope lets the call write anywhere in the
    project (INLINE_PROBES), else denied with the sandboxed way to run the agent."""
    memo = can_edit.Memo()
    if sandbox_tasks:
        ref = can_edit.which_task(project, None)
        for task in sandbox_tasks:
            if ref is None or str(TaskRef.parse(task)) != str(ref):
                return (f"automaton --sandbox --task {task} would run in the scope of a task other than this"
                        f" session's ({ref or 'no task'}): an agent may not choose its own scope")
    if inline_code:
        root = memo.root(project)
        verdict = check(project, cwd, [os.path.join(root, p) for p in INLINE_PROBES], memo)
        if not verdict.allowed:
            return (f"{inline_code[0]} can write any file, and this scope does not allow writing the whole project:"
                    " write files with the edit tools, or have a human run the agent as"
                    " `automaton --sandbox -- <agent>`, where the kernel holds the scope")
    return None
