"""BaseIgnore: gitignore semantics read from a commit, checked against git's own answer."""

from __future__ import annotations

from pathlib import Path

import pytest

from automaton.git.ignore import BaseIgnore
from tests.helpers import git, init_repo

GITIGNORES = {
    ".gitignore": "*.log\n!keep.log\n/top-only/\nout/\nweird/**\n!weird/kept.txt\nlogs/\n!logs/important.log\n",
    "pkg/.gitignore": "!*.log\n*.tmp\nsub/\n",
}
PATHS = ["a.log", "keep.log", "dir/a.log", "pkg/a.log", "pkg/x.tmp", "pkg/sub/y.py", "top-only/x",
         "dir/top-only/x", "out/x", "deep/out/x", "weird/x", "weird/kept.txt", "logs/important.log",
         "src/app.py", "deep/logs/x.log"]


@pytest.fixture
def repo(tmp_path: Path) -> tuple[Path, str]:
    repo = init_repo(tmp_path / "repo")
    for rel, text in GITIGNORES.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "ignores")
    return repo, git(repo, "rev-parse", "HEAD").strip()


def test_ignored_agrees_with_git_check_ignore(repo: tuple[Path, str]) -> None:
    root, base = repo
    rules = BaseIgnore.from_commit(root, base, defaults=())
    for rel in PATHS:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        if not (root / rel).exists():
            (root / rel).write_text("x\n")
    untracked = set(git(root, "ls-files", "--others", "--exclude-per-directory=.gitignore").split("\n")) - {""}
    for rel in PATHS:
        assert rules.ignored(rel) == (rel not in untracked), rel


def test_defaults_rank_below_the_bases_gitignore(repo: tuple[Path, str]) -> None:
    root, base = repo
    (root / ".gitignore").write_text("!build/\n")
    git(root, "commit", "-q", "-am", "keep build")
    rules = BaseIgnore.from_commit(root, git(root, "rev-parse", "HEAD").strip())
    assert not rules.ignored("build/x.py") and rules.ignored("dist/x.whl") and rules.ignored("a/__pycache__/b.pyc")
    assert BaseIgnore.from_commit(root, base).ignored("build/x.py")


def test_a_nested_repository_folder(repo: tuple[Path, str]) -> None:
    root, base = repo
    rules = BaseIgnore.from_commit(root, base)
    assert rules.ignored("out/") and not rules.ignored("vendor/lib/")
