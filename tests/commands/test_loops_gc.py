"""--gc-worktrees: lists loop worktrees, then removes (human act, confirmed) those whose loop is
gone or complete, never one with uncommitted work."""

from __future__ import annotations

from pathlib import Path

from automaton.store import loops
from automaton.store.layout import Project
from tests.commands.loopkit import add_worktree, loop_with, tick
from tests.helpers import Result, git, run_cli


def cli(project: Path, *args: str, tty: bool = False, stdin: str = "") -> Result:
    return run_cli(*args, "--project", str(project), tty=tty, stdin=stdin)


def _three_loops(project: Path) -> tuple[Project, Path, Path, Path]:
    """done (complete, clean), dirty (complete, an untracked file), busy (running)."""
    p = loop_with(project, "done")
    for name in ("dirty", "busy"):
        loop_with(project, name)
    wts = [add_worktree(p, name) for name in ("done", "dirty", "busy")]
    for name in ("done", "dirty"):
        tick(p, 1.0, {"implement": 0.1}, name=name, complete=True)
    (wts[1] / "notes.txt").write_text("work in progress\n")
    return p, wts[0], wts[1], wts[2]


def test_removes_complete_and_gone_loops_worktrees_and_keeps_dirty_and_running_ones(
        project: Path, approver: str) -> None:
    p, done, dirty, busy = _three_loops(project)
    loop_with(project, "gone")
    gone = add_worktree(p, "gone")
    (gone / "kept.txt").write_text("x\n")
    git(gone, "add", "kept.txt")
    git(gone, "commit", "-q", "-m", "the gone loop's work")
    (p.loop_dir(loops.LoopName("gone")) / ".state.loop").unlink()  # the loop folder emptied by hand
    (p.loop_dir(loops.LoopName("gone")) / ".state.log").unlink()
    own = project.parent / "mine"
    git(project, "worktree", "add", "-q", "-b", "mine", str(own))  # a human's worktree: never listed
    res = cli(project, "--gc-worktrees", "--yes", "--json")
    assert res.code == 0, res.err
    assert sorted(res.json["removed"]) == sorted([str(done), str(gone)])
    kept = {k["path"]: k["why"] for k in res.json["kept"]}
    assert set(kept) == {str(dirty), str(busy)}
    assert "uncommitted work (1 changed or untracked file(s))" in kept[str(dirty)]
    assert kept[str(busy)] == "loop busy is running and still needs it"
    assert f"remove   {done}: loop done is complete; its commits stay on branch loop/done" in res.err
    assert not done.exists() and not gone.exists() and dirty.is_dir() and busy.is_dir() and own.is_dir()
    assert (dirty / "notes.txt").read_text() == "work in progress\n"
    assert git(project, "log", "-1", "--format=%s", "loop/gone").strip() == "the gone loop's work"  # branch kept
    assert "reason=worktree_removed" in (p.loop_dir(loops.LoopName("done")) / ".state.log").read_text()
    assert str(own) not in res.err + res.out


def test_it_lists_then_asks_and_a_no_changes_nothing(project: Path) -> None:
    _, done, _, _ = _three_loops(project)
    res = cli(project, "--gc-worktrees", tty=True, stdin="n\n")
    assert res.code == 1 and "Remove 1 worktree(s)? [y/N]" in res.out and done.is_dir()
    assert "keep   " in res.out and "remove   " in res.out
    scripted = run_cli("--gc-worktrees", "--project", str(project), human=False)
    assert scripted.code == 1 and done.is_dir()  # no terminal, no approver: not a human
    yes = cli(project, "--gc-worktrees", tty=True, stdin="y\n")
    assert yes.code == 0 and not done.exists()


def test_a_rearmed_loop_recreates_its_worktree_from_the_branch(project: Path, approver: str) -> None:
    _, done, _, _ = _three_loops(project)
    (done / "src").mkdir(exist_ok=True)
    (done / "src" / "result.py").write_text("done = True\n")
    git(done, "add", "src/result.py")
    git(done, "commit", "-q", "-m", "result")
    assert cli(project, "--gc-worktrees", "--yes").code == 0 and not done.exists()
    assert cli(project, "--rearm-loop", "done").code == 0
    assert cli(project, "--check-gate", "done").code == 0  # nothing lost: the branch has the commit
    git(project, "worktree", "add", "-q", str(done), "loop/done")
    assert (done / "src" / "result.py").read_text() == "done = True\n"


def test_nothing_to_remove_asks_nothing(project: Path, approver: str) -> None:
    res = cli(project, "--gc-worktrees")
    assert res.code == 0 and "no loop worktrees" in res.out


def test_a_loop_whose_state_was_deleted_is_not_gone_and_keeps_its_worktree(project: Path, approver: str) -> None:
    p = loop_with(project, "tampered")
    wt = add_worktree(p, "tampered")
    (p.loop_dir(loops.LoopName("tampered")) / ".state.loop").unlink()  # its log remains: tampering, not gone
    res = cli(project, "--gc-worktrees", "--json")
    assert res.code == 0 and res.json["removed"] == [] and wt.is_dir()
    [kept] = res.json["kept"]
    assert kept["path"] == str(wt) and kept["why"].startswith("loop tampered's state cannot be read")
