"""Code known only at run time, read as a kind through the real hook: `eval` and its spellings, a
shell reading its program from standard input (a pipe, a here-string, a heredoc, a file), busybox
applets, and git subcommands that rewrite every tracked file (`stash`, `reset --hard`).

Task `demo` is at phase `new` (nothing may be edited) unless a test says otherwise; `echo x >
src/app.py` is denied there, so each spelling below must be denied too."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import Result
from tests.hooks.conftest import assert_allowed, assert_denied

Hook = Callable[..., Result]


@pytest.fixture
def new(make_task: Callable[..., Path], project: Path) -> Path:
    (project / "src").mkdir()
    (project / "src/app.py").write_text("x = 1\n")
    (project / "script.txt").write_text("echo x > src/app.py\n")
    return make_task("demo", "new")


@pytest.fixture
def implement(make_task: Callable[..., Path], project: Path) -> Path:
    (project / "src").mkdir()
    (project / "src/app.py").write_text("x = 1\n")
    return make_task("demo", "implement")


def bash(project: Path, command: str, cwd: str = "") -> dict[str, Any]:
    return {"cwd": str(project / cwd), "tool_name": "Bash", "tool_input": {"command": command}}


def test_the_plain_write_is_denied_at_new(new: Path, project: Path, hook: Hook) -> None:
    assert_denied(hook("claude", bash(project, "echo x > src/app.py")))
    assert_denied(hook("claude", bash(project, "sh -c 'echo x > src/app.py'")))


# ---- eval: the string it gets is code -------------------------------------------------------------

@pytest.mark.parametrize("command", [
    'eval "echo x > src/app.py"',
    "eval 'echo x > src/app.py'",
    'command eval "echo x > src/app.py"',
    'builtin eval "echo x > src/app.py"',
    "eval echo x '>' src/app.py",  # eval joins its words with spaces
    'eval "$(cat script.txt)"',  # not a literal: unknown code
    'X=src; eval "echo x > $X/app.py"',
    "eval 'eval \"echo x > src/app.py\"'",
    "sh -c 'eval \"echo x > src/app.py\"'",
])
def test_eval_is_read_or_denied(new: Path, project: Path, hook: Hook, command: str) -> None:
    assert_denied(hook("claude", bash(project, command)))


# ---- a shell reading its program from standard input ----------------------------------------------

@pytest.mark.parametrize("command", [
    'echo "echo x > src/app.py" | sh',
    "printf 'echo x > src/app.py' | bash -s",
    'sh <<<"echo x > src/app.py"',
    "bash <<'EOF'\necho x > src/app.py\nEOF",
    "bash -s < script.txt",
    "cat script.txt | sh",
    "sh < script.txt",
    "bash -",
    "echo 'echo x > src/app.py' | bash -x",
    "echo 'echo x > src/app.py' | source /dev/stdin",
    "echo 'echo x > src/app.py' | bash /dev/stdin",
    "bash <(cat script.txt)",
    "cat <<'EOF' | sh\necho x > src/app.py\nEOF",
    "printf 'echo x > src/app.py' | sh -s -- arg",
])
def test_a_shell_reading_stdin_is_read_or_denied(new: Path, project: Path, hook: Hook, command: str) -> None:
    assert_denied(hook("claude", bash(project, command)))


# ---- busybox APPLET ARGS is APPLET ARGS ----------------------------------------------------------

@pytest.mark.parametrize("command", [
    "busybox sh -c 'echo x > src/app.py'",
    "busybox cp script.txt src/app.py",
    "echo x | busybox tee src/app.py",
    "busybox rm src/app.py",
    "busybox sed -i s/1/2/ src/app.py",
    "/bin/busybox ash -c 'echo x > src/app.py'",
    "echo 'echo x > src/app.py' | busybox sh",
    "busybox env sh -c 'echo x > src/app.py'",
    "toybox cp script.txt src/app.py",
])
def test_busybox_applets_are_judged_as_themselves(new: Path, project: Path, hook: Hook, command: str) -> None:
    assert_denied(hook("claude", bash(project, command)))


# ---- git that rewrites every tracked file -------------------------------------------------------

@pytest.mark.parametrize("command", [
    "git stash",
    "git stash push",
    "git stash -u",
    "git stash pop",
    "git stash apply",
    "git stash apply stash@{0}",
    "git reset --hard",
    "git reset --hard HEAD~1",
    "git reset --merge",
    "git reset --keep HEAD",
    "git -C src stash",
    "git switch main",
    "git checkout -b other HEAD~1",
    "git merge feature",
    "sh -c 'git stash'",
])
def test_git_rewriting_the_worktree_is_denied(new: Path, project: Path, hook: Hook, command: str) -> None:
    assert_denied(hook("claude", bash(project, command)))


# ---- what honest agents run passes ---------------------------------------------------------------

@pytest.mark.parametrize("command", [
    "git stash list",
    "git stash show -p",
    "git reset --soft HEAD~1",
    "git reset",
    "git reset HEAD src/app.py",
    "echo hi | sh -c 'cat'",
    "busybox --help",
    "busybox",
    "busybox ls src",
    "busybox cat src/app.py",
    'eval "echo hi"',
    "eval 'ls -la'",
    'echo "ls src" | sh',
    'sh <<<"git status"',
    "bash --version",
    "sh -c 'ls' </dev/null",
    "sh </dev/null",
    "git checkout -b feature",
    "git switch -c feature",
])
def test_honest_uses_pass(new: Path, project: Path, hook: Hook, command: str) -> None:
    assert_allowed(hook("claude", bash(project, command)))


@pytest.mark.parametrize("command", [
    "git stash",
    "git stash pop",
    "git reset --hard",
    'eval "$(ssh-agent -s)"',
    "cat script.txt | sh",
    'echo "echo x > src/app.py" | sh',
    "busybox cp script.txt src/app.py",
])
def test_a_whole_project_scope_allows_them(implement: Path, project: Path, hook: Hook, command: str) -> None:
    (project / "script.txt").write_text("echo x > src/app.py\n")
    assert_allowed(hook("claude", bash(project, command)))


def test_a_directory_change_inside_eval_leaves_the_line_somewhere_unknown(implement: Path, project: Path,
                                                                          hook: Hook) -> None:
    assert_denied(hook("claude", bash(project, 'eval "cd /tmp"; echo x > notes.txt')), "unknown place")
    assert_allowed(hook("claude", bash(project, 'eval "ls src"; echo x > src/app.py')))
