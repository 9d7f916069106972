"""git.worktree beyond seed 002: prune/repair, foreign directories, base branch, commits."""

from __future__ import annotations

import shutil
from pathlib import Path

from automaton.git.worktree import commit_all, ensure_worktree, list_worktrees
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
    assert commit_all(res.path, "automaton: tick 1") == (None, None)  # nothing to commit
    (res.path / "new.py").write_text("x = 1\n")
    sha, err = commit_all(res.path, "automaton: tick 1")
    assert err is None and sha == git(project, "rev-parse", "loop/demo").strip()
    assert git(project, "log", "-1", "--format=%s", "loop/demo").strip() == "automaton: tick 1"
    assert git(project, "rev-parse", "main").strip() == res.base_commit  # main untouched
