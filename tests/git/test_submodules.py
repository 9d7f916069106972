"""git/submodules.py: submodule folders filled from the project's own objects in the verifier's
export and in a new loop worktree (they were empty: an honest fix scored 0; pingdotgg/t3code
#7672, rjwalters/loom #828). No network, no nested `.git`, nothing of the submodule's config run."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from automaton.git.export import export_tree, refresh_export
from automaton.git.nested import nested_repositories
from automaton.git.worktree import ensure_worktree
from tests.helpers import GIT_ENV, git, init_repo


def _git_file(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "protocol.file.allow=always", *args], cwd=repo, check=True, capture_output=True,
                   env={**os.environ, **GIT_ENV})


@pytest.fixture
def superproject(tmp_path: Path) -> Path:
    """`sup` with submodule `vendor/lib` (a local repository, cloned into `.git/modules`), committed."""
    lib = init_repo(tmp_path / "lib")
    (lib / "score.txt").write_text("1 passed\n")
    (lib / "deep").mkdir()
    (lib / "deep" / "code.py").write_text("X = 1\n")
    git(lib, "add", ".")
    git(lib, "commit", "-qm", "lib")
    sup = init_repo(tmp_path / "sup")
    (sup / "README").write_text("x\n")
    git(sup, "add", "README")
    _git_file(sup, "submodule", "add", "-q", str(lib), "vendor/lib")
    git(sup, "commit", "-qm", "with a submodule")
    return sup


def head(repo: Path) -> str:
    return git(repo, "rev-parse", "HEAD").strip()


def test_the_export_holds_the_submodules_files_and_no_git(superproject: Path, tmp_path: Path) -> None:
    dest = tmp_path / "export"
    done = export_tree(superproject, "HEAD", dest, protected=[], base_commit=head(superproject))
    assert (dest / "vendor/lib/score.txt").read_text() == "1 passed\n"
    assert (dest / "vendor/lib/deep/code.py").read_text() == "X = 1\n"
    assert not (dest / "vendor/lib/.git").exists() and done.empty_submodules == ()


def test_a_kept_export_is_refreshed_with_the_submodule_and_loses_what_was_planted(superproject: Path,
                                                                                  tmp_path: Path) -> None:
    dest = tmp_path / "kept"
    refresh_export(superproject, "HEAD", dest, protected=[], base_commit=head(superproject))
    (dest / "vendor/lib/score.txt").write_text("99 passed\n")
    (dest / "vendor/lib/conftest.py").write_text("planted\n")
    refresh_export(superproject, "HEAD", dest, protected=[], base_commit=head(superproject))
    assert (dest / "vendor/lib/score.txt").read_text() == "1 passed\n"
    assert not (dest / "vendor/lib/conftest.py").exists()


def test_a_submodule_never_initialised_stays_empty_and_is_named(superproject: Path, tmp_path: Path) -> None:
    fresh = tmp_path / "fresh"
    subprocess.run(["git", "clone", "-q", str(superproject), str(fresh)], check=True, capture_output=True)
    dest = tmp_path / "export"
    done = export_tree(fresh, "HEAD", dest, protected=[], base_commit=head(fresh))
    assert done.empty_submodules == ("vendor/lib",) and list((dest / "vendor/lib").iterdir()) == []


def test_a_new_loop_worktree_has_the_submodules_files_and_git_sees_nothing(superproject: Path) -> None:
    loop_dir = superproject / ".automaton" / "loops" / "demo"
    loop_dir.mkdir(parents=True)
    res = ensure_worktree(superproject, loop_dir, "demo")
    assert res.in_worktree, res.fallback
    assert (res.path / "vendor/lib/score.txt").read_text() == "1 passed\n"
    assert nested_repositories(res.path) == []  # the runner's nested-repository walk finds nothing
    assert git(res.path, "status", "--porcelain") == ""
    git(res.path, "add", "-A")
    assert git(res.path, "diff", "--cached", "--name-only") == ""  # never added as files
