"""git.worktree: repairing only the loop's own entry, locks, foreign directories, base branch, commits."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from automaton.git.worktree import CommitResult, commit_all, ensure_worktree, list_worktrees
from tests.helpers import git, init_repo


def test_registered_but_missing_is_pruned_and_recreated(project: Path, tmp_path: Path) -> None:
    loop = tmp_path / "loop"
    first = ensure_worktree(project, loop, "demo")
    shutil.rmtree(first.path)
    again = ensure_worktree(project, loop, "demo", recorded_path=str(first.path))
    assert again.created and again.fallback is None and again.path.is_dir()
    entries = list_worktrees(project) or []
    assert sum(1 for e in entries if e.get("branch") == "refs/heads/loop/demo") == 1


def test_missing_registration_with_an_existing_directory_is_not_trusted(project: Path, tmp_path: Path) -> None:
    loop = tmp_path / "loop"
    wt = loop / "worktree"
    wt.mkdir(parents=True)
    (wt / "user-data.txt").write_text("precious")
    res = ensure_worktree(project, loop, "demo", recorded_path=str(wt))
    assert res.path == project and res.fallback is not None and "not a git worktree" in res.fallback
    assert (wt / "user-data.txt").read_text() == "precious"


def test_an_empty_directory_in_the_way_is_replaced(project: Path, tmp_path: Path) -> None:
    loop = tmp_path / "loop"
    (loop / "worktree").mkdir(parents=True)
    res = ensure_worktree(project, loop, "demo")
    assert res.created and (res.path / "README.md").is_file()


def test_base_branch_is_used_never_a_hardcoded_main(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r", branch="trunk")
    git(repo, "checkout", "-q", "-b", "develop")
    (repo / "dev.txt").write_text("d")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "dev")
    dev = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "checkout", "-q", "trunk")
    trunk = git(repo, "rev-parse", "HEAD").strip()
    assert ensure_worktree(repo, tmp_path / "a", "a").base_commit == trunk  # the current HEAD
    b = ensure_worktree(repo, tmp_path / "b", "b", base_branch="develop")
    assert b.base_commit == dev and (b.path / "dev.txt").is_file()
    bad = ensure_worktree(repo, tmp_path / "c", "c", base_branch="nope")
    assert bad.fallback is not None and "'nope' is not a commit" in bad.fallback


def test_commit_all_commits_everything_on_the_loop_branch(project: Path, tmp_path: Path) -> None:
    res = ensure_worktree(project, tmp_path / "loop", "demo")
    nothing = CommitResult(None, None, None, head=git(res.path, "rev-parse", "HEAD").strip())
    assert commit_all(res.path, "automaton: tick 1") == nothing  # nothing to commit
    (res.path / "new.py").write_text("x = 1\n")
    done = commit_all(res.path, "automaton: tick 1")
    assert done.error is None and done.sha == git(project, "rev-parse", "loop/demo").strip()
    assert git(project, "log", "-1", "--format=%s", "loop/demo").strip() == "automaton: tick 1"
    assert git(project, "rev-parse", "main").strip() == res.base_commit  # main untouched


def test_a_bystander_worktree_whose_folder_is_away_stays_registered(project: Path, tmp_path: Path) -> None:
    bystander = tmp_path / "usb" / "feature"
    git(project, "worktree", "add", "-q", "-b", "feature", str(bystander))
    (bystander / "wip.txt").write_text("unfinished\n")
    away = tmp_path / "away"
    bystander.parent.rename(away)  # the drive is unmounted for a while
    loop = tmp_path / "loop"
    first = ensure_worktree(project, loop, "demo")
    for i in range(10):
        if i == 5:
            shutil.rmtree(first.path)  # the loop's own worktree vanishes: only its entry is repaired
        res = ensure_worktree(project, loop, "demo", recorded_path=str(first.path))
        assert res.fallback is None and res.path == first.path
        assert str(bystander) in git(project, "worktree", "list", "--porcelain")
    away.rename(bystander.parent)
    assert git(bystander, "status", "--porcelain") == "?? wip.txt\n"
    assert git(bystander, "rev-parse", "--abbrev-ref", "HEAD").strip() == "feature"


def test_a_locked_missing_own_entry_is_refused_with_the_unlock_command(project: Path, tmp_path: Path) -> None:
    loop = tmp_path / "loop"
    first = ensure_worktree(project, loop, "demo")
    git(project, "worktree", "lock", "--reason", "on a slow disk", str(first.path))
    shutil.rmtree(first.path)
    res = ensure_worktree(project, loop, "demo", recorded_path=str(first.path))
    assert res.path == project and res.kind == "occupied" and res.fallback is not None
    assert "on a slow disk" in res.fallback and f"git worktree unlock {first.path}" in res.fallback
    git(project, "worktree", "unlock", str(first.path))
    again = ensure_worktree(project, loop, "demo", recorded_path=str(first.path))
    assert again.created and again.fallback is None


def test_a_branch_checked_out_in_the_main_checkout_names_it(project: Path, tmp_path: Path) -> None:
    git(project, "checkout", "-q", "-b", "loop/demo")
    res = ensure_worktree(project, tmp_path / "loop", "demo")
    assert res.kind == "elsewhere"
    assert res.fallback == f"branch loop/demo is checked out in the main checkout at {project}"


def test_a_branch_checked_out_in_a_missing_locked_worktree_says_how_to_free_it(project: Path, tmp_path: Path) -> None:
    other = tmp_path / "old" / "wt"
    git(project, "worktree", "add", "-q", "-b", "loop/demo", str(other))
    git(project, "worktree", "lock", "--reason", "usb stick", str(other))
    shutil.rmtree(tmp_path / "old")
    res = ensure_worktree(project, tmp_path / "loop", "demo")
    assert res.kind == "elsewhere" and res.fallback is not None
    assert str(other) in res.fallback and "usb stick" in res.fallback
    assert f"git worktree unlock {other} && git worktree remove --force {other}" in res.fallback
    assert str(other) in git(project, "worktree", "list")  # never pruned by automaton


def test_the_pointer_check_reads_a_main_checkouts_layout_without_git(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from automaton.git import worktree as wt_mod
    from automaton.git.worktree import pointer_problem

    repo = init_repo(tmp_path / "repo")
    wt = ensure_worktree(repo, tmp_path / "loop", "demo").path
    asked: list[list[str]] = []
    real = wt_mod.run_git
    monkeypatch.setattr(wt_mod, "run_git", lambda root, args, **kw: (asked.append(args), real(root, args, **kw))[1])
    assert pointer_problem(repo, wt) is None and asked == []
    (wt / ".git").write_text(f"gitdir: {repo / '.git'}\n")  # rewritten to lead to the main checkout
    assert "not at its entry" in (pointer_problem(repo, wt) or "")


def test_registered_reads_the_repositorys_own_entries_never_the_folder(tmp_path: Path) -> None:
    """A loop's state recorded on another machine (or clone) names that one's worktree path:
    not this repository's, so the gate reads the loop's branch instead of running git there."""
    from automaton.git.worktree import registered

    repo, other = init_repo(tmp_path / "repo"), init_repo(tmp_path / "other")
    ours = ensure_worktree(repo, tmp_path / "loop", "demo").path
    theirs = ensure_worktree(other, tmp_path / "other-loop", "demo").path
    assert registered(repo, ours) and not registered(repo, theirs) and registered(other, theirs)
    (ours / ".git").unlink()  # the entry, in the repository's .git, still names the folder
    assert registered(repo, ours)
    assert not registered(repo, tmp_path / "nowhere")
