"""Runtime files never reach a user's `git add -A`; `.state` and its log stay trackable."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import git, run_cli


def test_task_and_focus_runtime_files_are_excluded(project: Path, approver: str) -> None:
    assert run_cli("--create-task", "fix-login", "--project", str(project)).code == 0
    assert run_cli("--create-task", "second", "--project", str(project)).code == 0
    assert run_cli("--focus", "fix-login", "--project", str(project)).code == 0
    git(project, "add", "-A")
    staged = set(git(project, "diff", "--cached", "--name-only").split())
    assert staged == {"tasks/fix-login/.state", "tasks/fix-login/.state.log",
                      "tasks/second/.state", "tasks/second/.state.log"}
    exclude = (project / ".git" / "info" / "exclude").read_text()
    assert exclude.count("/tasks/.state.lock-*") == 1  # added once, not per task


def test_not_a_git_repo_is_fine(tmp_path: Path) -> None:
    res = run_cli("--create-task", "plain", "--project", str(tmp_path))
    assert res.code == 0 and "exclude" not in res.out
