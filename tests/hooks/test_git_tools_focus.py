"""Hole classes, continued: git that runs other code or skips hooks, tools outside the matcher,
and the focus deleted or emptied. Each through the real hook, several spellings each."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import Result
from tests.hooks.conftest import assert_allowed, assert_denied

Hook = Callable[..., Result]


@pytest.fixture
def task(make_task: Callable[..., Path], project: Path) -> Path:
    (project / "src").mkdir()
    return make_task("demo", "implement")


def bash(project: Path, command: str) -> dict[str, Any]:
    return {"cwd": str(project), "tool_name": "Bash", "tool_input": {"command": command}}


# ---- git that runs other code or skips hooks --------------------------------------------------

@pytest.mark.parametrize("command", [
    "GIT_CONFIG_GLOBAL=/tmp/g git commit -m x",
    "env GIT_CONFIG_GLOBAL=/tmp/g git commit -m x",
    "export GIT_CONFIG_GLOBAL=/tmp/g && git commit -m x",
    "GIT_CONFIG_PARAMETERS=\"'core.pager'='sh'\" git log",
    "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=include.path GIT_CONFIG_VALUE_0=/tmp/c git commit -m x",
    "GIT_CONFIG_SYSTEM=/tmp/s git commit -m x",
    "GIT_EXEC_PATH=/tmp/bin git commit -m x",
    "HOME=/tmp/h git commit -m x",
    "export XDG_CONFIG_HOME=/tmp/x; git commit -m x",
    "git -c include.path=/tmp/c commit -m x",
    "git -c includeIf.onbranch:main.path=/tmp/c commit -m x",
    "git -c core.fsmonitor=./x.sh status",
    "git -c core.hooksPath=/tmp/h commit -m x",
    "git -c CORE.HOOKSPATH=/tmp/h commit -m x",
    "git --config-env=core.hooksPath=H commit -m x",
    "git -c alias.ci='!sh x.sh' ci",
    "git -c alias.c='commit -n' c -m x",
    "git -c core.pager='sh x.sh' log",
    "git -c core.editor=./x.sh commit",
    "git --exec-path=/tmp/bin commit -m x",
    "git --git-dir=/tmp/other.git commit -m x",
    "git commit --no-verify -m x",
    "git commit --no-v -m x",
    "git commit -qnm x",
    "git rebase --exec ./x.sh HEAD~2",
    "git submodule foreach 'rm -rf .'",
    "git clone --template=/tmp/t https://example.com/r.git",
])
def test_git_that_runs_code_or_skips_hooks_is_denied(task: Path, project: Path, hook: Hook, command: str) -> None:
    assert_denied(hook("claude", bash(project, command)))


@pytest.mark.parametrize("command", [
    "git -c color.ui=always log --oneline", "git -c user.name=Bot -c user.email=b@x commit -m x",
    "git -c core.pager=cat log", "GIT_PAGER=cat git log -3", "git -c advice.detachedHead=false checkout HEAD~1",
    "git commit -m 'mention no verify in words'", "git diff --output=src/out.diff",
])
def test_git_with_harmless_configuration_passes(task: Path, project: Path, hook: Hook, command: str) -> None:
    assert_allowed(hook("claude", bash(project, command)))


# ---- tools outside the matcher: unknown tools fail closed ------------------------------------

@pytest.mark.parametrize("agent, tool", [
    ("claude", "mcp__filesystem__write_file"), ("claude", "mcp__memory__create_entities"),
    ("claude", "EnterWorktree"), ("claude", "Workflow"), ("claude", "SomeFutureTool"),
    ("codex", "mcp__fs__write"), ("codex", "unknown_tool"),
    ("gemini", "mcp_fs_write_file"), ("gemini", "discovered_tool_x"), ("gemini", "future_tool"),
])
def test_unknown_tools_are_denied(task: Path, project: Path, hook: Hook, agent: str, tool: str) -> None:
    payload = {"cwd": str(project), "tool_name": tool, "tool_input": {"path": "src/x.py"}}
    assert_denied(hook(agent, payload), "unknown tool")


@pytest.mark.parametrize("agent, tool", [
    ("claude", "Read"), ("claude", "Glob"), ("claude", "Grep"), ("claude", "LS"), ("claude", "WebFetch"),
    ("claude", "WebSearch"), ("claude", "TodoWrite"), ("claude", "Task"), ("claude", "TaskCreate"),
    ("claude", "Skill"), ("claude", "ExitPlanMode"), ("codex", "update_plan"), ("codex", "view_image"),
    ("gemini", "read_file"), ("gemini", "glob"), ("gemini", "search_file_content"), ("gemini", "grep_search"),
    ("gemini", "list_directory"), ("gemini", "google_web_search"), ("gemini", "web_fetch"),
])
def test_read_only_tools_pass(task: Path, project: Path, hook: Hook, agent: str, tool: str) -> None:
    assert_allowed(hook(agent, {"cwd": str(project), "tool_name": tool, "tool_input": {}}))


def test_the_monitor_tool_is_read_as_a_shell(task: Path, project: Path, hook: Hook) -> None:
    monitor = {"cwd": str(project), "tool_name": "Monitor"}
    assert_denied(hook("claude", {**monitor, "tool_input": {"command": "tail -f x > .git/x"}}), ".git")
    assert_allowed(hook("claude", {**monitor, "tool_input": {"command": "tail -f build.log"}}))


def test_every_agent_is_installed_for_every_tool() -> None:
    from automaton.hooks import claude, codex, gemini

    assert claude.MATCHER == codex.MATCHER == gemini.MATCHER == "*"


# ---- the focus deleted or emptied -------------------------------------------------------------

@pytest.mark.parametrize("command", [
    "rm .automaton/focus", "rm -f .automaton/focus.log", ": > .automaton/focus", "truncate -s0 .automaton/focus.log",
    "cp /dev/null .automaton/focus", "mv .automaton/focus /tmp/", "find . -path './.automaton/*' -delete",
    "git clean -fdX",
])
def test_deleting_or_emptying_the_focus_is_denied(task: Path, project: Path, hook: Hook, command: str) -> None:
    assert_denied(hook("claude", bash(project, command)))


@pytest.mark.parametrize("tool, tool_input", [
    ("Write", {"file_path": ".automaton/focus", "content": ""}),
    ("Edit", {"file_path": ".automaton/focus.log", "old_string": "x", "new_string": ""}),
    ("MultiEdit", {"file_path": ".automaton/focus", "edits": []}),
])
def test_file_tools_on_the_focus_are_denied(task: Path, project: Path, hook: Hook, tool: str,
                                            tool_input: dict[str, Any]) -> None:
    assert_denied(hook("claude", {"cwd": str(project), "tool_name": tool, "tool_input": tool_input}), ".automaton/")


@pytest.mark.parametrize("remove", [
    ("focus",), ("focus.log",), ("focus", "focus.log"),
])
def test_a_missing_focus_whose_log_shows_it_was_set_fails_closed(task: Path, project: Path, hook: Hook,
                                                                 remove: tuple[str, ...]) -> None:
    """Removed behind the hook's back (the second line's job): every edit is then denied, never
    allowed as if no task were focused."""
    for name in remove:
        (project / ".automaton" / name).unlink()
    write = {"cwd": str(project), "tool_name": "Write", "tool_input": {"file_path": "src/x.py", "content": "x"}}
    assert_denied(hook("claude", write), "focus")


def test_an_emptied_focus_or_log_fails_closed(task: Path, project: Path, hook: Hook) -> None:
    write = {"cwd": str(project), "tool_name": "Write", "tool_input": {"file_path": "src/x.py", "content": "x"}}
    (project / ".automaton/focus").write_text("")
    assert_denied(hook("claude", write), "focus")
    (project / ".automaton/focus").write_text("demo\n")
    (project / ".automaton/focus.log").write_text("")
    assert_denied(hook("claude", write), "focus")


def test_a_project_that_never_had_a_focus_is_still_task_less(project: Path, hook: Hook) -> None:
    write = {"cwd": str(project), "tool_name": "Write", "tool_input": {"file_path": "src/x.py", "content": "x"}}
    assert_allowed(hook("claude", write))
