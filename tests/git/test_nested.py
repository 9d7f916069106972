"""Repositories nested in a worktree: found by a directory walk before the runner's `git add`,
named by the drift check, and never entered by a hardened git call (no filter of theirs runs)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from automaton.git import run_git
from automaton.git.drift import changed_paths
from automaton.git.errors import DriftError
from automaton.git.nested import NestedRepository, nested_repositories
from tests.git.test_drift import repo_with_worktree
from tests.helpers import git, init_repo


def evil_repo(path: Path, marker: Path) -> Path:
    """A repository at `path` with one commit, whose own config defines a clean filter that
    writes `marker`, asked for every file by its `.gitattributes`, and a dirty file: any git
    that runs `git status` inside it runs the filter."""
    init_repo(path)
    (path / ".gitattributes").write_text("* filter=evil\n")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "attributes")
    clean = f"{sys.executable} -c \"import pathlib,sys; pathlib.Path({str(marker)!r}).write_text('ran');" \
            " sys.stdout.write(sys.stdin.read())\""
    git(path, "config", "filter.evil.clean", clean)
    (path / "README.md").write_text("dirty\n")
    return path


def test_the_walk_names_every_nested_git_entry_and_never_follows_links(tmp_path: Path) -> None:
    top = tmp_path / "wt"
    (top / "src" / "a" / ".git").mkdir(parents=True)  # a folder
    (top / "src" / "a" / ".git" / "x").mkdir()  # never read: the folder is named, not entered
    (top / "b").mkdir()
    (top / "b" / ".git").write_text("gitdir: /elsewhere\n")  # a worktree-style pointer file
    (top / "c" / "d").mkdir(parents=True)
    (top / "c" / "d" / ".GIT").mkdir()  # case-insensitive volumes treat it as .git
    (top / ".git").write_text("gitdir: /the/worktree's/own\n")  # the top's own: not nested
    outside = init_repo(tmp_path / "outside")
    os.symlink(outside, top / "link")  # a link to a repository is a symlink to git, never followed
    (top / "src" / "plain.py").write_text("x\n")
    assert nested_repositories(top) == ["b", "c/d", "src/a"]
    assert nested_repositories(top / "src") == ["a"]


def test_the_walk_is_bounded(tmp_path: Path) -> None:
    for i in range(30):
        (tmp_path / f"f{i}").write_text("")
    with pytest.raises(DriftError, match="more than 10 entries"):
        nested_repositories(tmp_path, max_entries=10)
    assert nested_repositories(tmp_path, max_entries=100) == []


def test_an_entry_the_walk_cannot_tell_apart_fails_closed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "vendor").mkdir()
    real = os.scandir

    class Opaque:
        """A directory entry whose type cannot be read (an lstat refused)."""

        def __init__(self, entry: os.DirEntry[str]) -> None:
            self.name, self.path = entry.name, entry.path

        def is_dir(self, *, follow_symlinks: bool = True) -> bool:
            raise PermissionError(13, "Permission denied")

    def scandir(path: str | Path) -> list[object]:
        return [Opaque(e) if e.name == "vendor" else e for e in real(path)]

    monkeypatch.setattr(os, "scandir", scandir)
    with pytest.raises(DriftError, match="cannot tell what vendor is"):
        nested_repositories(tmp_path)


def test_a_nested_repository_fails_the_drift_check_and_its_filter_never_runs(tmp_path: Path) -> None:
    _, wt, base = repo_with_worktree(tmp_path)
    marker = tmp_path / "filter-ran"
    evil_repo(wt / "src" / "vendor", marker)
    with pytest.raises(NestedRepository) as err:
        changed_paths(wt, base)
    assert err.value.paths == ["src/vendor"] and str(err.value) == "nested repository: src/vendor"
    assert not marker.exists()


def test_a_committed_gitlink_fails_the_drift_check_without_entering_it(tmp_path: Path) -> None:
    """An agent without the sandbox commits its nested repository as a gitlink: the old drift
    check's status (`--ignore-submodules=none`) started git inside it, which ran its filter."""
    _, wt, base = repo_with_worktree(tmp_path)
    marker = tmp_path / "filter-ran"
    evil_repo(wt / "src" / "vendor", marker)
    git(wt, "add", "src/vendor")
    git(wt, "commit", "-q", "-m", "agent's gitlink")
    assert "160000" in git(wt, "ls-tree", "HEAD", "src/vendor")
    with pytest.raises(NestedRepository) as err:
        changed_paths(wt, base)
    assert err.value.paths == ["src/vendor"]
    assert not marker.exists()


def test_a_staged_gitlink_is_named_too(tmp_path: Path) -> None:
    _, wt, base = repo_with_worktree(tmp_path)
    marker = tmp_path / "filter-ran"
    evil_repo(wt / "src" / "vendor", marker)
    git(wt, "add", "src/vendor")
    with pytest.raises(NestedRepository, match="nested repository: src/vendor"):
        changed_paths(wt, base)
    assert not marker.exists()


@pytest.mark.parametrize("args", [
    ["status", "--porcelain", "--ignore-submodules=none"],
    ["diff-index", "--name-only", "--ignore-submodules=none", "HEAD"],
    ["diff-files", "--name-only"],
    ["diff", "HEAD"],
    ["commit", "-q", "--allow-empty", "-m", "x"],
])
def test_hardened_git_never_enters_a_submodule(tmp_path: Path, args: list[str]) -> None:
    repo = init_repo(tmp_path / "repo")
    marker = tmp_path / "filter-ran"
    evil_repo(repo / "vendor", marker)
    git(repo, "add", "vendor")
    git(repo, "commit", "-q", "-m", "gitlink")
    assert not marker.exists()
    assert run_git(repo, args, env={"GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@b", "GIT_COMMITTER_NAME": "a",
                                    "GIT_COMMITTER_EMAIL": "a@b"}).code in (0, 1)
    assert not marker.exists()
