"""changed_paths with real git: committed + staged + unstaged + untracked, renames, `master`, failures."""

from __future__ import annotations

import hashlib
import hmac
import os
import time
from pathlib import Path

import pytest

from automaton.git.drift import DriftError, GitMissing, PrivateIndex, changed_paths, parse_status_z
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


def test_the_base_commits_gitignore_still_hides_files(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    (repo / "src").mkdir()
    (repo / "src" / ".gitignore").write_text("*.log\n!keep.log\n")
    (repo / ".gitignore").write_text("/cache/\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "ignores")
    base = git(repo, "rev-parse", "HEAD").strip()
    wt = repo / "wt"
    git(repo, "worktree", "add", "-q", "-b", "loop/demo", str(wt), base)
    (wt / "src" / "run.log").write_text("x\n")
    (wt / "src" / "keep.log").write_text("x\n")
    (wt / "cache").mkdir()
    (wt / "cache" / "blob").write_text("x\n")
    assert changed_paths(wt, base) == ["src/keep.log"]


def agent_hides(wt: Path, how: str) -> None:
    """The agent plants EVIL.sh at the top and src/evil.py, then hides them from git one way."""
    (wt / "EVIL.sh").write_text("rm -rf ~\n")
    (wt / "src" / "evil.py").write_text("import os\n")
    if how == "new_subdir_gitignore":
        (wt / "src" / ".gitignore").write_text("evil.py\n")
        (wt / ".gitignore").write_text("EVIL.sh\n")
    elif how == "modified_root_gitignore":
        with (wt / ".gitignore").open("a") as f:
            f.write("EVIL.sh\nsrc/evil.py\n")
    elif how == "info_exclude":
        common = Path(git(wt, "rev-parse", "--path-format=absolute", "--git-common-dir").strip())
        (common / "info").mkdir(exist_ok=True)
        (common / "info" / "exclude").write_text("EVIL.sh\nevil.py\n")
    elif how == "self_ignoring_gitignore":
        (wt / "src" / ".gitignore").write_text(".gitignore\nevil.py\n")
        (wt / "sub").mkdir()
        (wt / "sub" / ".gitignore").write_text("*\n")  # ignores itself and everything beside it
        (wt / "sub" / "x.txt").write_text("x\n")
        with (wt / ".gitignore").open("a") as f:
            f.write("EVIL.sh\n")
    else:
        raise AssertionError(how)


@pytest.mark.parametrize("how", ["new_subdir_gitignore", "modified_root_gitignore", "info_exclude",
                                 "self_ignoring_gitignore"])
def test_files_the_agent_hid_from_git_are_still_drift(tmp_path: Path, how: str) -> None:
    repo = init_repo(tmp_path / "repo")
    (repo / "src").mkdir()
    (repo / "src" / "app.py").write_text("app\n")
    (repo / ".gitignore").write_text("*.tmp\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "layout")
    base = git(repo, "rev-parse", "HEAD").strip()
    wt = repo / ".automaton" / "loops" / "demo" / "worktree"
    git(repo, "worktree", "add", "-q", "-b", "loop/demo", str(wt), base)
    agent_hides(wt, how)
    seen_by_git = git(wt, "status", "--porcelain", "--untracked-files=all")
    assert "EVIL.sh" not in seen_by_git and "evil.py" not in seen_by_git  # git itself is fooled
    found = changed_paths(wt, base)
    assert {"EVIL.sh", "src/evil.py"} <= set(found)
    if how == "self_ignoring_gitignore":
        assert {"src/.gitignore", "sub/.gitignore", "sub/x.txt", ".gitignore"} <= set(found)


def test_test_artefacts_are_not_drift_but_their_lookalikes_elsewhere_are(tmp_path: Path) -> None:
    _, wt, base = repo_with_worktree(tmp_path)
    for rel in ("src/__pycache__/app.cpython-311.pyc", "tests/x.pyc", ".pytest_cache/v/cache", ".mypy_cache/x",
                ".ruff_cache/x", "pkg.egg-info/PKG-INFO", "build/lib/x.py", "dist/x.whl", "node_modules/a/b.js",
                ".tox/py/x", ".coverage", "htmlcov/index.html", "src/pkg/build/gen.py"):
        (wt / rel).parent.mkdir(parents=True, exist_ok=True)
        (wt / rel).write_text("x\n")
    (wt / "src" / "pycache.py").write_text("x\n")
    (wt / "coverage").write_text("x\n")
    assert changed_paths(wt, base) == ["coverage", "src/pycache.py"]
    assert changed_paths(wt, base, excludes=()) != ["coverage", "src/pycache.py"]


def test_the_default_excludes_are_one_exported_constant() -> None:
    from automaton.git.drift import DEFAULT_EXCLUDES

    assert {"__pycache__/", "*.pyc", ".pytest_cache/", ".mypy_cache/", ".ruff_cache/", "*.egg-info/", "build/",
            "dist/", "node_modules/", ".tox/", ".coverage", "htmlcov/"} == set(DEFAULT_EXCLUDES)


def test_a_tracked_file_changes_even_when_git_is_told_not_to_look(tmp_path: Path) -> None:
    _, wt, base = repo_with_worktree(tmp_path)
    git(wt, "update-index", "--assume-unchanged", "docs/guide.md")
    (wt / "docs/guide.md").write_text("rewritten\n")
    git(wt, "update-index", "--skip-worktree", "tests/test_app.py")
    (wt / "tests/test_app.py").write_text("def test(): pass\n")
    git(wt, "update-index", "--skip-worktree", "README.md")  # flagged, content unchanged: still counts
    assert git(wt, "status", "--porcelain") == ""  # git itself is fooled
    assert changed_paths(wt, base) == ["README.md", "docs/guide.md", "tests/test_app.py"]


def test_a_forged_stat_cache_does_not_hide_a_change(tmp_path: Path) -> None:
    """The agent tells git to trust only size and mtime, then rewrites a file keeping both."""
    _, wt, base = repo_with_worktree(tmp_path)
    target = wt / "docs/guide.md"
    git(wt, "config", "core.checkStat", "minimal")
    git(wt, "config", "core.trustctime", "false")
    old = 1_000_000_000
    os.utime(target, (old, old))
    git(wt, "update-index", "--refresh")
    target.write_text("# docs/HACKED!!\n")  # as long as "# docs/guide.md\n"
    os.utime(target, (old, old))
    assert target.stat().st_size == len("# docs/guide.md\n")
    assert git(wt, "status", "--porcelain") == ""  # git itself is fooled
    assert changed_paths(wt, base) == ["docs/guide.md"]


def test_a_file_replaced_by_a_symlink_or_behind_a_symlinked_folder_is_drift(tmp_path: Path) -> None:
    _, wt, base = repo_with_worktree(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "test_app.py").write_text("# tests/test_app.py\n")  # same content, elsewhere
    import shutil

    shutil.rmtree(wt / "tests")
    (wt / "tests").symlink_to(outside)
    (wt / "README.md").unlink()
    (wt / "README.md").symlink_to(outside / "test_app.py")
    found = changed_paths(wt, base)
    assert "README.md" in found and "tests/test_app.py" in found


def test_replace_refs_never_hide_a_commit(tmp_path: Path) -> None:
    from automaton.git.drift import committed_paths

    repo, wt, base = repo_with_worktree(tmp_path)
    (wt / "docs/guide.md").write_text("out of scope\n")
    git(wt, "commit", "-q", "-am", "agent")
    head = git(wt, "rev-parse", "HEAD").strip()
    git(wt, "replace", head, base)  # HEAD now reads as the base commit to a plain git
    git(wt, "checkout", "-q", base, "--", "docs/guide.md")  # and the worktree and index match it
    assert git(wt, "diff", "--name-only", base, "HEAD") == ""  # git itself is fooled
    assert git(wt, "status", "--porcelain") == ""
    assert changed_paths(wt, base) == ["docs/guide.md"]
    assert committed_paths(repo, base, head) == ["docs/guide.md"]


def test_committed_paths_and_the_post_commit_drift_check(tmp_path: Path) -> None:
    from automaton.git.drift import committed_out_of_scope, committed_paths
    from automaton.git.worktree import commit_all

    repo, wt, base = repo_with_worktree(tmp_path)
    (wt / "src/app.py").write_text("in scope\n")
    (wt / "docs/guide.md").write_text("out of scope\n")
    (wt / "uncommitted.txt").write_text("x\n")
    git(wt, "add", "src/app.py", "docs/guide.md")
    git(wt, "commit", "-q", "-m", "agent")
    (wt / "README.md").write_text("left in the worktree\n")
    head = git(wt, "rev-parse", "HEAD").strip()
    assert committed_paths(repo, base, head) == ["docs/guide.md", "src/app.py"]
    assert committed_out_of_scope(repo, base, head, ["src/**"]) == ["docs/guide.md"]
    blob = git(repo, "rev-parse", f"{head}:docs/guide.md").strip()
    assert committed_out_of_scope(repo, base, head, ["src/**"], [f"docs/guide.md@{blob}"]) == []
    assert committed_out_of_scope(repo, base, head, ["src/**"], ["docs/guide.md@" + "0" * 40]) == ["docs/guide.md"]
    done = commit_all(wt, "tick")
    assert done.sha is not None
    assert committed_out_of_scope(repo, base, done.sha, ["src/**"]) == ["README.md", "docs/guide.md",
                                                                        "uncommitted.txt"]
    with pytest.raises(DriftError, match="not a commit"):
        committed_paths(repo, base, "0" * 40)


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


def private_index(tmp_path: Path) -> PrivateIndex:
    """A PrivateIndex in a folder of its own, sealed with a fixed test key."""
    folder = tmp_path / "loop-folder"
    folder.mkdir(exist_ok=True)
    return PrivateIndex(folder / "drift.index", lambda data: hmac.new(b"test key", data, hashlib.sha256).hexdigest())


def test_the_private_index_sees_a_rewrite_that_keeps_size_and_mtime(tmp_path: Path) -> None:
    """The stat data automaton kept from the last check include the ctime, which no rewrite keeps."""
    _, wt, base = repo_with_worktree(tmp_path)
    index = private_index(tmp_path)
    target = wt / "docs/guide.md"
    old = 1_000_000_000
    os.utime(target, (old, old))
    assert changed_paths(wt, base, index=index) == []
    assert index.path.is_file() and index.path.with_name("drift.index.seal").is_file()
    git(wt, "config", "core.checkStat", "minimal")  # the agent's config may not loosen automaton's index
    git(wt, "config", "core.trustctime", "false")
    time.sleep(0.05)
    target.write_text("# docs/HACKED!!\n")  # as long as "# docs/guide.md\n"
    os.utime(target, (old, old))
    assert changed_paths(wt, base, index=index) == ["docs/guide.md"]
    (wt / "src/new.py").write_text("x\n")
    assert changed_paths(wt, base, index=index) == ["docs/guide.md", "src/new.py"]


def test_a_private_index_its_seal_does_not_vouch_for_is_thrown_away(tmp_path: Path) -> None:
    _, wt, base = repo_with_worktree(tmp_path)
    index = private_index(tmp_path)
    assert changed_paths(wt, base, index=index) == []
    (wt / "docs/guide.md").write_text("changed\n")
    forged = bytearray(index.path.read_bytes())
    forged[40] ^= 0xFF  # any byte the seal did not see
    index.path.write_bytes(bytes(forged))
    assert changed_paths(wt, base, index=index) == ["docs/guide.md"]
    seal = index.path.with_name("drift.index.seal").read_text().split()
    assert seal[1] == index.seal(index.path.read_bytes())  # rebuilt and sealed again
    index.path.with_name("drift.index.seal").write_text("0" * 40 + " " + "f" * 64 + "\n")
    assert changed_paths(wt, base, index=index) == ["docs/guide.md"]


def test_the_private_index_follows_new_commits(tmp_path: Path) -> None:
    _, wt, base = repo_with_worktree(tmp_path)
    index = private_index(tmp_path)
    assert changed_paths(wt, base, index=index) == []
    (wt / "src/app.py").write_text("v2\n")
    git(wt, "commit", "-q", "-am", "tick 1")
    assert changed_paths(wt, base, index=index) == ["src/app.py"]
    (wt / "src/app.py").write_text("# src/app.py\n")  # back to the base content, not committed
    assert changed_paths(wt, base, index=index) == ["src/app.py"]
    git(wt, "commit", "-q", "-am", "tick 2")
    assert changed_paths(wt, base, index=index) == []


def test_the_branch_is_checked_in_the_same_git_call(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`branch`: the worktree on another branch or a detached HEAD is drift (DriftError naming
    where it is); a file named HEAD does not make the one rev-parse ambiguous; a base that is
    not a commit is still named."""
    from automaton.git import drift

    _, wt, base = repo_with_worktree(tmp_path)
    (wt / "HEAD").write_text("a file named like the ref\n")
    calls: list[list[str]] = []
    real = drift.run_git
    monkeypatch.setattr(drift, "run_git", lambda repo, args, **kw: calls.append(list(args)) or real(repo, args, **kw))
    assert changed_paths(wt, base, branch="refs/heads/loop/demo") == ["HEAD"]
    assert [c[0] for c in calls] == ["rev-parse"]  # toplevel, tree, base and branch: one process
    with pytest.raises(DriftError, match="is on other, not loop/demo"):
        git(wt, "checkout", "-q", "-b", "other")
        changed_paths(wt, base, branch="refs/heads/loop/demo")
    git(wt, "checkout", "-q", "--detach")
    with pytest.raises(DriftError, match="detached HEAD, not loop/demo"):
        changed_paths(wt, base, branch="refs/heads/loop/demo")
    assert changed_paths(wt, base) == ["HEAD"]  # no branch asked: not checked
    git(wt, "checkout", "-q", "loop/demo")
    with pytest.raises(DriftError, match="base_commit 0123456789abcdef0123456789abcdef01234567 is not a commit"):
        changed_paths(wt, "0123456789abcdef0123456789abcdef01234567", branch="refs/heads/loop/demo")
