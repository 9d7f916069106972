"""changed_paths with real git: committed + staged + unstaged + untracked, renames, `master`, failures."""

from __future__ import annotations

from pathlib import Path

import pytest

from automaton.git.drift import DriftError, GitMissing, changed_paths, parse_status_z
from tests.helpers import git, init_repo


def repo_with_worktree(tmp_path: Path, branch: str = "main") -> tuple[Path, Path, str]:
    """(repo, worktree on loop/demo, base commit) with src/, tests/ and docs/ committed."""
    repo = init_repo(tmp_path / "repo", branch=branch)
    for rel in ("src/app.py", "tests/test_app.py", "docs/guide.md"):
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(f"# {rel}\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "layout")
    base = git(repo, "rev-parse", "HEAD").strip()
    wt = repo / ".automaton" / "loops" / "demo" / "worktree"
    git(repo, "worktree", "add", "-q", "-b", "loop/demo", str(wt), base)
    return repo, wt, base


def test_clean_worktree_has_no_changes(tmp_path: Path) -> None:
    _, wt, base = repo_with_worktree(tmp_path)
    assert changed_paths(wt, base) == []


def test_committed_staged_unstaged_and_untracked_all_count(tmp_path: Path) -> None:
    _, wt, base = repo_with_worktree(tmp_path)
    (wt / "README.md").write_text("committed\n")
    git(wt, "commit", "-q", "-am", "agent commit")
    (wt / "src/app.py").write_text("staged\n")
    git(wt, "add", "src/app.py")
    (wt / "docs/guide.md").write_text("unstaged\n")
    (wt / "new dir").mkdir()
    (wt / "new dir" / "untracked file.txt").write_text("x\n")
    assert changed_paths(wt, base) == ["README.md", "docs/guide.md", "new dir/untracked file.txt", "src/app.py"]


def test_only_branch_master_works_and_never_names_main(tmp_path: Path) -> None:
    repo, wt, base = repo_with_worktree(tmp_path, branch="master")
    assert "main" not in git(repo, "branch", "--list")
    (wt / "README.md").write_text("drift\n")
    git(wt, "commit", "-q", "-am", "c")
    assert changed_paths(wt, base) == ["README.md"]


def test_staged_rename_from_outside_scope_counts_both_sides(tmp_path: Path) -> None:
    _, wt, base = repo_with_worktree(tmp_path)
    git(wt, "mv", "docs/guide.md", "src/guide.md")
    assert changed_paths(wt, base) == ["docs/guide.md", "src/guide.md"]


def test_committed_rename_counts_both_sides(tmp_path: Path) -> None:
    _, wt, base = repo_with_worktree(tmp_path)
    git(wt, "mv", "docs/guide.md", "src/guide.md")
    git(wt, "commit", "-q", "-m", "move")
    assert changed_paths(wt, base) == ["docs/guide.md", "src/guide.md"]


def test_bad_base_commit_is_an_error_not_zero_files(tmp_path: Path) -> None:
    _, wt, _ = repo_with_worktree(tmp_path)
    with pytest.raises(DriftError, match="not a commit"):
        changed_paths(wt, "0123456789abcdef0123456789abcdef01234567")
    with pytest.raises(DriftError, match="not a commit id"):
        changed_paths(wt, "main")  # a bare branch name is never accepted as the base


def test_worktree_without_its_git_file_is_an_error_not_the_parent_repo(tmp_path: Path) -> None:
    _, wt, base = repo_with_worktree(tmp_path)
    (wt / "README.md").write_text("drift\n")
    (wt / ".git").unlink()  # git would now answer for the enclosing checkout
    with pytest.raises(DriftError, match="not the top of a git worktree"):
        changed_paths(wt, base)


def test_missing_worktree_is_an_error(tmp_path: Path) -> None:
    _, _, base = repo_with_worktree(tmp_path)
    with pytest.raises(DriftError, match="does not exist"):
        changed_paths(tmp_path / "nowhere", base)


def test_no_git_is_reported_distinctly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _, wt, base = repo_with_worktree(tmp_path)
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    with pytest.raises(GitMissing):
        changed_paths(wt, base)


def test_parse_status_z_takes_both_sides_of_renames_and_copies() -> None:
    text = "R  new.py\0old.py\0 M a b.py\0?? dir/x\0C  c2\0c1\0"
    assert parse_status_z(text) == ["new.py", "old.py", "a b.py", "dir/x", "c2", "c1"]
    with pytest.raises(DriftError):
        parse_status_z("R  only-one\0")
    with pytest.raises(DriftError):
        parse_status_z("garbage\0")


def test_excludes_outside_the_project_gitignore_do_not_hide_drift(tmp_path: Path) -> None:
    repo, wt, base = repo_with_worktree(tmp_path)
    common = Path(git(wt, "rev-parse", "--git-common-dir").strip())
    common = common if common.is_absolute() else wt / common
    with (common / "info" / "exclude").open("a") as f:
        f.write("/EVIL*\n")
    (wt / "EVIL.sh").write_text("rm -rf ~\n")
    global_ignore = tmp_path / "global-ignore"
    global_ignore.write_text("*.secret\n")
    git(repo, "config", "core.excludesFile", str(global_ignore))
    (wt / "src" / "x.secret").write_text("x\n")
    assert "EVIL.sh" not in git(wt, "status", "--porcelain")  # git itself hides them
    assert changed_paths(wt, base) == ["EVIL.sh", "src/x.secret"]


def test_the_project_gitignore_still_hides_files(tmp_path: Path) -> None:
    _, wt, base = repo_with_worktree(tmp_path)
    (wt / "src" / ".gitignore").write_text("*.log\n")
    (wt / "src" / "run.log").write_text("x\n")
    assert changed_paths(wt, base) == ["src/.gitignore"]


def test_blob_ids_match_git(tmp_path: Path) -> None:
    from automaton.git.drift import branch_blobs, worktree_blobs

    repo, wt, _ = repo_with_worktree(tmp_path)
    (wt / "src/app.py").write_text("changed\n")
    (wt / "docs/guide.md").unlink()
    (wt / "link").symlink_to("src/app.py")
    found = worktree_blobs(wt, ["src/app.py", "docs/guide.md", "link", "src"])
    assert found["src/app.py"] == git(wt, "hash-object", "src/app.py").strip()
    assert found["docs/guide.md"] == "deleted" and found["src"].startswith("unreadable")
    git(wt, "add", "-A")
    git(wt, "commit", "-q", "-m", "c")
    assert found["link"] == git(wt, "rev-parse", "HEAD:link").strip()
    tips = branch_blobs(repo, "loop/demo", ["src/app.py", "docs/guide.md"])
    assert tips == {"src/app.py": found["src/app.py"], "docs/guide.md": "deleted"}
