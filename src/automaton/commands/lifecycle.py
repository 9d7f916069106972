"""The end of a loop's life, as human acts: re-arm a complete loop, or remove a loop for good.

Both are refused without a human (`commands.human.require_human`, as `--approve --loop`) and
while a tick holds the loop's lock (`commands.loops.held_between_ticks`).
"""

from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path

from automaton.commands import remote_state, schedule
from automaton.commands.excludes import exclude
from automaton.commands.human import Human, acting, require_human
from automaton.commands.loops import free_branch, held_between_ticks
from automaton.commands.loops_common import optional
from automaton.commands.schedule_info import TICK_FILES
from automaton.core import loopstate
from automaton.core.errors import BadInput, Refused
from automaton.core.names import LoopName
from automaton.core.outcome import Outcome
from automaton.git import run_git
from automaton.git.export import remove_tree
from automaton.git.worktree import branch_name, list_worktrees
from automaton.store import anchor, chainlog, claims, loops
from automaton.store.layout import Project, kept_export_marks, kept_export_of, kept_export_stats
from automaton.store.locks import locked

# Files that only exist to be locked: never archived, and removed last (Windows cannot delete
# a file this process still holds open).
_LOCKS = (loops.TICK_LOCK, loops.STATE_LOCK)


def rearm_loop(project: Project, name: str, *, human: Human | None = None) -> Outcome:
    """`--rearm-loop NAME`: a `complete` loop goes back to `running` with a fresh allowance:
    iterations_at_approval = iteration_count, spent_usd_at_approval = spent_usd (USD),
    score_history = [] (the plateau window starts over); logged `REARMED by=…`; the schedule is
    re-enabled best-effort. data: {loop, status, by, iterations_at_approval,
    spent_usd_at_approval}. Refused (exit 1) on any other status (one line naming the command
    that fits), on a tampered state, without a human, or while a tick runs; exit 2 for an
    unknown or untracked loop. `human`: a human the caller established (the dashboard), logged
    as `by=` and `via=` instead of the terminal check."""
    handle = loops.Loop.resolve(project, name)  # a misspelt name is named (did you mean …) before the human check
    who, via = acting("--rearm-loop", human)
    loop = handle.name
    with held_between_ticks(handle, "--rearm-loop"), handle.session() as s:
        if s.rec.tamper:
            raise loops.StateTampered(f"{s.rec.tamper}; a human clears it with: automaton --approve --loop {loop}")
        old = s.rec.state
        if old.status != "complete":
            fit = {"halted": f"automaton --approve --loop {loop} clears a halt",
                   "paused": f"automaton --resume-loop {loop} resumes a paused loop",
                   "running": "it is running already"}[old.status]
            raise Refused(f"loop {loop} is {old.status}: --rearm-loop only re-arms a complete loop ({fit})")
        new = s.commit(*loopstate.rearm(old, {"loop": loop, "by": who, **via}))
    out = Outcome(lines=[f"{loop}: complete -> running (re-armed by {who}; a fresh allowance from iteration"
                         f" {new.iteration_count} and ${new.spent_usd:.4f})"],
                  data={"loop": loop, "status": "running", "by": who,
                        "iterations_at_approval": new.iterations_at_approval,
                        "spent_usd_at_approval": new.spent_usd_at_approval})
    out.lines.append(f"  a tick that reaches target_score completes it again; to move the goal, edit loop.json"
                     f" and run automaton --approve --loop {loop} (it shows the diff and re-seals)")
    warning = optional("automaton.commands.schedule", "enable_best_effort", project, loop)
    if warning:
        out.warnings.append(warning)
    return out


def archive_dir(project: Project, loop: LoopName) -> Path:
    """A new `.automaton/loops/.archive/<name>-<UTC yyyymmddThhmmssZ>[-n]/` (not created)."""
    stamp = chainlog.utc_now().replace("-", "").replace(":", "")
    base = project.loops_dir / loops.ARCHIVE_DIR / f"{loop}-{stamp}"
    found, n = base, 1
    while os.path.lexists(found):
        n += 1
        found = base.with_name(f"{base.name}-{n}")
    return found


def remove_loop(project: Project, name: str, *, delete_branch: bool = False) -> Outcome:
    """`--remove-loop NAME [--delete-branch]`, in this order: uninstall the schedule (when one
    was installed), `git worktree remove --force` the loop's own worktree path (nothing else),
    delete branch `loop/NAME` only with `delete_branch`, move everything of the loop folder but
    its worktree and lock files into `archive_dir` (log, state, loop.json, runs/ …), append
    `REMOVED by=…` to the archived log as its last line, then delete `.automaton/loops/NAME/`.

    A kept branch still holds the loop's commits, and `--create-loop NAME` refuses while it
    exists (the output says so). data: {loop, by, archive (path), worktree_removed (bool),
    discarded_changes (int: uncommitted entries the worktree had), branch: "kept"|"deleted"|
    "none", schedule_removed (bool)}. Refused (exit 1) without a human, while a tick runs, or
    when git cannot remove the worktree (nothing is archived then); exit 2 for an unknown loop.
    """
    handle = loops.Loop.resolve(project, name)  # a misspelt name is named (did you mean …) before the human check
    who = require_human("--remove-loop")
    loop, folder = handle.name, handle.dir
    seen = remote_state.seen_commit(folder)
    if seen is not None:  # removing this copy stops nothing: every runner fetches the loop again
        raise Refused(f"loop {loop} lives in a state remote (this checkout saw its state commit {seen[:12]}):"
                      f" removing it here stops no runner. Pause it there (automaton --pause-loop {loop}"
                      " --state-remote REMOTE) and remove its workflow or CronJob; nothing was removed")
    out = Outcome()
    with held_between_ticks(handle, "--remove-loop"):
        scheduled = _unschedule(handle, out)
        removed, dirty = _remove_worktree(project, loop, out)
        branch = _branch(project, loop, delete_branch, out)
        dest = archive_dir(project, loop)
        with locked(handle.state_lock):
            chain = chainlog.read_chain(handle.log_file)
            dest.mkdir(parents=True)
            for entry in sorted(folder.iterdir()):
                if entry.name not in (*_LOCKS, "worktree"):
                    os.replace(entry, dest / entry.name)
            fields: dict[str, object] = {"loop": loop, "by": who, "branch": branch,
                                         "archive": dest.relative_to(project.root).as_posix()}
            chainlog.append_event(dest / loops.LOG_FILE, "REMOVED", fields, chain.last_state or "none", chain)
            anchor.forget(handle.log_file)  # removed by a human: no longer missing (the archive is anchored)
            _drop(folder / "worktree")
        _drop_kept_export(project, loop, out)
    for lock in _LOCKS:  # only now, once released: Windows cannot delete a file still held open
        with contextlib.suppress(FileNotFoundError):
            (folder / lock).unlink()
    folder.rmdir()
    _exclude_archive(project)
    # After the folder is gone: a claim of a loop that no longer exists holds nothing already,
    # and deleting it keeps a later loop of the same name from inheriting it.
    released = claims.release_all(project, loop)
    out.lines += [f"  released the claim of task {task}" for task in released]
    rel = dest.relative_to(project.root).as_posix()
    out.lines.insert(0, f"removed loop {loop} (by {who}); its log, state and runs are kept in {rel}/")
    if branch == "kept":
        kept = branch_name(loop)  # the same step as --create-loop's refusal names: it loses no commit
        out.lines.append(f"  kept branch {kept} with the loop's commits; automaton --create-loop {loop} is refused"
                         f" while it exists: git branch -m {kept} {free_branch(project, kept)} (keeps its commits"
                         f" under that name), then automaton --create-loop {loop}")
    out.data = {"loop": loop, "by": who, "archive": str(dest), "worktree_removed": removed,
                "discarded_changes": dirty, "branch": branch, "schedule_removed": scheduled,
                "claims_released": released}
    return out


def _drop_kept_export(project: Project, loop: LoopName, out: Outcome) -> None:
    """Delete the verifier's kept export of the loop (`runner/verify.py` `kept_export`), its
    idle mark and its stat record; a symlink in their place is removed itself, never followed. A failure is a
    warning: the folder only costs disk."""
    folder = kept_export_of(project.root, loop)
    idle, size = kept_export_marks(folder)
    # the mark first (never a mark without its folder), its recorded size last (runner.exportcache)
    for path in (idle, kept_export_stats(folder), folder, size):
        try:
            remove_tree(path)
        except OSError as exc:
            out.warnings.append(f"could not delete the verifier's kept export {path}: {exc.strerror};"
                                " delete it by hand")


def _unschedule(loop: loops.Loop, out: Outcome) -> bool:
    """Uninstall the unit when `--install-schedule` left a record or a tick script."""
    folder = loop.dir
    if not (folder / schedule.RECORD_FILE).exists() and not any((folder / f).exists() for f in TICK_FILES):
        return False
    done = schedule.uninstall(loop)
    out.lines += [f"  {line}" for line in done.lines]
    out.warnings += done.warnings
    return True


def _remove_worktree(project: Project, loop: LoopName, out: Outcome) -> tuple[bool, int]:
    """`git worktree remove --force` of the loop's own worktree path when git has it
    registered: (removed, uncommitted entries it had). Refused when git fails."""
    path = project.worktree_dir(loop)
    mine = [e for e in list_worktrees(project.root) or []
            if os.path.realpath(e.get("worktree", "")) == os.path.realpath(path)]
    if not mine:
        return False, 0
    status = run_git(path, ["status", "--porcelain"]) if path.is_dir() else None
    dirty = len(status.out.splitlines()) if status is not None and status.code == 0 else 0
    got = run_git(project.root, ["worktree", "remove", "--force", str(path)])
    if got.code != 0:
        raise Refused(f"git worktree remove --force {path} failed (exit {got.code}): {got.err.strip()}; nothing"
                      f" was archived: fix it (git worktree unlock {path}?), then automaton --remove-loop {loop} again")
    out.lines.append(f"  removed worktree {path}" + (f" ({dirty} uncommitted change(s) discarded)" if dirty else ""))
    return True, dirty


def _branch(project: Project, loop: LoopName, delete: bool, out: Outcome) -> str:
    branch = branch_name(loop)
    if run_git(project.root, ["rev-parse", "--verify", "--quiet", f"refs/heads/{branch}"]).code != 0:
        return "none"
    if not delete:
        return "kept"
    got = run_git(project.root, ["branch", "-D", branch])
    if got.code != 0:
        out.warnings.append(f"git branch -D {branch} failed (exit {got.code}): {got.err.strip()}; the branch is"
                            " kept: delete it by hand")
        return "kept"
    out.lines.append(f"  deleted branch {branch}")
    return "deleted"


def _drop(path: Path) -> None:
    """Remove what is left at the worktree path (an unregistered folder): a symlink itself, never its target."""
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.is_dir():
        shutil.rmtree(path)


def _exclude_archive(project: Project) -> None:
    with contextlib.suppress(BadInput, OSError):  # best effort, as for the other runtime files
        exclude(project, (f".automaton/loops/{loops.ARCHIVE_DIR}/",), "# automaton archived loops")
