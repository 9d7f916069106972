"""`automaton --hook git`: the pre-commit check installed by `--install-hooks git`.

git runs `.git/hooks/pre-commit` (or `core.hooksPath`) in the top of the work tree and aborts
the commit on any non-zero exit (githooks(5)). Refused: a staged path (added, changed,
deleted or renamed) outside the current task phase scope (the same policy as the agent hooks,
`hooks.policy`), and a staged task `.state` that its `.state.log` does not explain (tampered
task, or a staged phase different from the log's last line). The task's `.state.log` may be
committed; `.automaton/` holds runtime files, but a loop's `loop.json` and role prompts are
trackable (docs/architecture.md#what-git-sees) and pass. The agents' hook settings (`commands.can_edit.HOOK_CONFIG`) are
refused like every always-denied path: this hook cannot tell a human committer from an agent,
so the message tells a human to commit them with `git commit --no-verify`, which skips any
pre-commit hook and which the agent hooks deny to agents; for humans this is a guard rail, not a wall.
"""

from __future__ import annotations

from pathlib import Path

from automaton.commands.can_edit import Memo, is_hook_config
from automaton.hooks import ALLOW_CODE, DENY_CODE, Answer, deny
from automaton.proc import run_capture
from automaton.store.layout import Project

_RUNTIME = ("worktree", "runs", ".lock")


def check(project_flag: str | None, cwd: Path) -> Answer:
    """Check the staged paths of the repository at `cwd`; exit 2 with one line per refusal set."""
    from automaton.hooks import policy
    from automaton.resolve import real, relative_parts

    top_run = run_capture(["git", "rev-parse", "--show-toplevel"], cwd=cwd)
    staged = run_capture(["git", "diff", "--cached", "--name-only", "-z", "--no-renames"], cwd=cwd)
    if top_run.code != 0 or staged.code != 0:
        return deny(f"git failed: {(top_run.err or staged.err).strip()}")
    top = Path(top_run.out.strip())
    project = policy.project_for(project_flag, top)
    root = real(project.root, project.root)
    refused: list[str] = []
    memo = Memo()  # the task, focus and config are read once for all staged paths
    for name in (n for n in staged.out.split("\0") if n):
        path = real(name, top)
        parts = relative_parts(path, root) or ()
        why = _special(project, top, name, parts)
        if why is None:
            verdict = policy.check(project, top, [str(path)], memo)
            why = "" if verdict.allowed else verdict.reason
        if why:
            refused.append(why)
    if refused:
        more = f" (+{len(refused) - 3} more)" if len(refused) > 3 else ""
        return Answer(DENY_CODE, f"automaton: commit refused: {'; '.join(refused[:3])}{more}."
                                 " Unstage those paths (git restore --staged PATH) or ask a human")
    return Answer(ALLOW_CODE)


def _special(project: Project, top: Path, name: str, parts: tuple[str, ...]) -> str | None:
    """A verdict for state and loop files ('' = allowed), or None for the ordinary policy."""
    lowered = [p.lower() for p in parts]
    if is_hook_config(parts):  # this hook cannot tell a human committer from an agent
        return f"{name}: agent hook settings; a human commits them with git commit --no-verify"
    if lowered[:1] == ["tasks"] and (".lock" in parts[-1] or parts[-1].endswith(".tmp")):
        return f"{name}: a runtime lock/temp file; never commit it (add it to .gitignore)"
    if lowered[:2] == [".automaton", "loops"] and len(parts) >= 4:
        if parts[-1].startswith(".state") or lowered[3] in _RUNTIME:
            return f"{name}: loop runtime files are never committed"
        return ""
    if lowered[:1] == ["tasks"] and parts[-1] == ".state.log":
        return ""
    if lowered[:1] == ["tasks"] and parts[-1] == ".state":
        return _state_explained(project, top, name, parts)
    return None


def _state_explained(project: Project, top: Path, name: str, parts: tuple[str, ...]) -> str:
    """'' when the staged `.state` is the phase its log's last line names; else the reason."""
    from automaton.core.names import TaskRef
    from automaton.store import tasks

    inner = parts[1:-1]
    if inner[:1] == ("complete",):
        inner = inner[1:]
    if len(inner) not in (1, 2):
        return f"{name}: not a task .state"
    rec = tasks.load_dir(TaskRef.parse("/".join(inner)), project.root.joinpath(*parts[:-1]))
    blob = run_capture(["git", "show", f":{name}"], cwd=top)
    phase = tasks.phase_token(blob.out.encode("utf-8")) if blob.code == 0 else None
    if rec.tamper:
        return f"{name}: {rec.tamper}"
    if phase is None or phase != rec.chain.last_state:
        return f"{name}: staged phase {phase!r} is not what its .state.log says ({rec.chain.last_state!r})"
    return ""
