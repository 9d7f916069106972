"""commit_all with real git: the identity it commits as, stale index.lock handling, CommitResult."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from automaton.git import locks
from automaton.git.commit import CommitResult, commit_all
from automaton.git.worktree import ensure_worktree
from tests.helpers import GIT_ENV, git


@pytest.fixture
def wt(project: Path, tmp_path: Path) -> Path:
    """The loop's worktree of `project` on loop/demo."""
    return ensure_worktree(project, tmp_path / "loop", "demo").path


def author(repo: Path) -> str:
    return git(repo, "log", "-1", "--format=%an <%ae> / %cn <%ce>").strip()


@pytest.fixture
def no_identity_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in GIT_ENV:
        if key.endswith(("_NAME", "_EMAIL")):
            monkeypatch.delenv(key)


def test_identity_from_the_environment(wt: Path) -> None:
    (wt / "a.txt").write_text("a\n")
    assert commit_all(wt, "m").error is None
    assert author(wt) == "Test Author <author@example.com> / Test Author <author@example.com>"


@pytest.mark.usefixtures("no_identity_env")
def test_without_any_identity_automaton_commits_as_itself(wt: Path) -> None:
    (wt / "a.txt").write_text("a\n")
    done = commit_all(wt, "m")
    assert done.error is None and done.sha is not None
    assert author(wt) == "automaton <automaton@localhost> / automaton <automaton@localhost>"


@pytest.mark.usefixtures("no_identity_env")
def test_half_an_identity_is_never_mixed_with_automatons(wt: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    git(wt, "config", "user.name", "Only Name")
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Env Name")
    (wt / "a.txt").write_text("a\n")
    assert commit_all(wt, "m").error is None
    assert author(wt) == "automaton <automaton@localhost> / automaton <automaton@localhost>"


@pytest.mark.usefixtures("no_identity_env")
def test_the_repository_identity_is_used_when_complete(wt: Path) -> None:
    git(wt, "config", "user.name", "Repo User")
    git(wt, "config", "user.email", "repo@example.com")
    (wt / "a.txt").write_text("a\n")
    assert commit_all(wt, "m").error is None
    assert author(wt) == "Repo User <repo@example.com> / Repo User <repo@example.com>"


@pytest.mark.usefixtures("no_identity_env")
def test_the_users_global_identity_is_read_though_git_runs_without_global_config(
        wt: Path, forbid_real_home: Path) -> None:
    (forbid_real_home / ".gitconfig").write_text("[user]\n\tname = Global User\n\temail = global@example.com\n")
    (wt / "a.txt").write_text("a\n")
    assert commit_all(wt, "m").error is None
    assert author(wt) == "Global User <global@example.com> / Global User <global@example.com>"


def lock_of(wt: Path) -> Path:
    return Path(git(wt, "rev-parse", "--path-format=absolute", "--git-dir").strip()) / "index.lock"


def age(path: Path, seconds: float) -> None:
    old = time.time() - seconds
    os.utime(path, (old, old))


def test_a_stale_lock_is_cleared(wt: Path) -> None:
    lock = lock_of(wt)
    lock.write_text("")
    age(lock, 60)
    (wt / "a.txt").write_text("a\n")
    done = commit_all(wt, "m")
    assert done.error is None and done.sha is not None and done.cleared_lock == str(lock)
    assert not lock.exists()


def test_a_fresh_lock_fails_with_gits_message_and_the_fix(wt: Path) -> None:
    lock = lock_of(wt)
    lock.write_text("")
    (wt / "a.txt").write_text("a\n")
    done = commit_all(wt, "m")
    assert done.sha is None and done.error is not None
    assert "index.lock" in done.error and "File exists" in done.error
    assert done.fix is not None and done.fix.startswith(f"remove {lock} after checking that no git runs")
    assert "old: a git may be writing it" in done.fix
    assert lock.exists()


@pytest.fixture
def running_git(wt: Path) -> Iterator[subprocess.Popen[bytes]]:
    """A git process working in the worktree (waiting on its stdin) for the test's duration."""
    child = subprocess.Popen(["git", "cat-file", "--batch"], cwd=wt, stdin=subprocess.PIPE,
                             stdout=subprocess.DEVNULL)
    time.sleep(0.2)
    yield child
    assert child.stdin is not None
    child.stdin.close()
    child.wait(timeout=10)


@pytest.mark.skipif(not Path("/proc/self/comm").exists(), reason="needs Linux /proc")
@pytest.mark.usefixtures("running_git")
def test_an_old_lock_is_kept_while_a_git_runs_in_the_worktree(wt: Path) -> None:
    lock = lock_of(wt)
    lock.write_text("")
    age(lock, 60)
    (wt / "a.txt").write_text("a\n")
    done = commit_all(wt, "m")
    assert done.sha is None and lock.exists()
    assert done.fix is not None and "a git process is running in the repository" in done.fix


@pytest.mark.skipif(not Path("/proc/self/comm").exists(), reason="needs Linux /proc")
def test_a_git_running_elsewhere_does_not_keep_the_lock(wt: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    git(elsewhere, "init", "-q")
    child = subprocess.Popen(["git", "cat-file", "--batch"], cwd=elsewhere, stdin=subprocess.PIPE,
                             stdout=subprocess.DEVNULL)
    try:
        time.sleep(0.2)
        assert locks.git_running_in([wt]) is False
        assert locks.git_running_in([elsewhere]) is True
    finally:
        assert child.stdin is not None
        child.stdin.close()
        child.wait(timeout=10)


def test_an_unreadable_process_list_keeps_the_lock(wt: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(locks, "PROC", tmp_path / "no-proc")
    lock = lock_of(wt)
    lock.write_text("")
    age(lock, 60)
    (wt / "a.txt").write_text("a\n")
    done = commit_all(wt, "m")
    assert done.sha is None and lock.exists()
    assert done.fix is not None and "/proc" in done.fix


def test_nothing_to_commit_and_not_a_repository(wt: Path, tmp_path: Path) -> None:
    assert commit_all(wt, "m") == CommitResult(None, None, None, head=git(wt, "rev-parse", "HEAD").strip())
    plain = tmp_path / "plain"
    plain.mkdir()
    done = commit_all(plain, "m")
    assert done.sha is None and done.error is not None and done.fix is not None


def committed(repo: Path) -> list[str]:
    return sorted(git(repo, "show", "--name-only", "--format=", "HEAD").split())


def test_build_and_test_artefacts_are_left_out_of_the_commit(wt: Path) -> None:
    from automaton.git.ignore import DEFAULT_EXCLUDES

    assert {"__pycache__/", "*.pyc", ".pytest_cache/", "node_modules/", "build/", "dist/"} <= set(DEFAULT_EXCLUDES)
    for rel in ("src/app.py", "src/__pycache__/app.cpython-311.pyc", "lib/mod.pyc", ".pytest_cache/v/x",
                "web/node_modules/left-pad/index.js", "build/lib/app.py", "dist/app.whl", ".coverage",
                ".mypy_cache/3.11/x.json", "htmlcov/index.html"):
        (wt / rel).parent.mkdir(parents=True, exist_ok=True)
        (wt / rel).write_text("x\n")
    done = commit_all(wt, "m")
    assert done.error is None and done.sha
    assert committed(wt) == ["src/app.py"]
    assert "?? src/__pycache__/" in git(wt, "status", "--porcelain")  # left in the worktree, uncommitted


def test_the_projects_own_rules_rank_above_the_defaults(wt: Path) -> None:
    (wt / ".gitignore").write_text("!dist/\n")  # this project tracks dist/
    (wt / "dist").mkdir()
    (wt / "dist" / "bundle.js").write_text("x\n")
    git(wt, "config", "core.excludesFile", "my-excludes")  # and its own excludes file still applies
    (wt / "my-excludes").write_text("*.secret\n")
    (wt / "a.secret").write_text("x\n")
    assert commit_all(wt, "m").error is None
    assert committed(wt) == [".gitignore", "dist/bundle.js", "my-excludes"]


def test_a_tracked_file_under_an_excluded_name_is_committed(wt: Path) -> None:
    (wt / "build").mkdir()
    (wt / "build" / "make.py").write_text("v1\n")
    git(wt, "add", "-f", "build/make.py")
    git(wt, "commit", "-q", "-m", "tracked build script")
    (wt / "build" / "make.py").write_text("v2\n")
    assert commit_all(wt, "m").error is None
    assert committed(wt) == ["build/make.py"]


def test_the_tip_is_read_in_the_call_that_finds_the_folders(wt: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The tick takes HEAD from the commit's own first git call when it commits nothing: one
    # `rev-parse` fewer per steady tick.
    from automaton.git import commit as commit_mod

    calls: list[list[str]] = []
    real = commit_mod.run_git

    def counting(cwd: Path, args: list[str], **kw: object) -> object:
        calls.append(args)
        return real(cwd, args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(commit_mod, "run_git", counting)
    tip = git(wt, "rev-parse", "HEAD").strip()
    done = commit_all(wt, "m")
    assert done.head == tip and done.sha is None
    assert [a for a in calls if "rev-parse" in a] == [["rev-parse", "--path-format=absolute", "--git-dir",
                                                      "--git-common-dir", "--show-toplevel", "HEAD^{commit}"]]
    (wt / "new.txt").write_text("x\n")
    made = commit_all(wt, "m")
    assert made.head == tip and made.sha == git(wt, "rev-parse", "HEAD").strip() != tip


def test_an_unborn_head_still_commits(tmp_path: Path) -> None:
    repo = tmp_path / "fresh"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "a.txt").write_text("a\n")
    done = commit_all(repo, "first")
    assert done.error is None and done.head is None and done.sha == git(repo, "rev-parse", "HEAD").strip()


@pytest.mark.usefixtures("no_identity_env")
def test_the_repository_identity_wins_over_the_global_one_as_git_reads_them(
        wt: Path, forbid_real_home: Path) -> None:
    """Both keys come from one `git config --get-regexp` (later values win, as `git config --get`
    answers): the repository's over the user's global ones, a key set twice by its last value."""
    (forbid_real_home / ".gitconfig").write_text("[user]\n\tname = Global User\n\temail = global@example.com\n")
    git(wt, "config", "user.email", "repo@example.com")
    git(wt, "config", "--add", "user.email", "last@example.com")
    (wt / "a.txt").write_text("a\n")
    assert commit_all(wt, "m").error is None
    assert author(wt) == "Global User <last@example.com> / Global User <last@example.com>"
