"""`automaton --sandbox … -- CMD` read as a wrapper, and the widening commands as human acts."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from automaton.hooks.shellparse import Unsafe, program
from tests.helpers import Result
from tests.hooks.conftest import assert_allowed, assert_denied

Hook = Callable[..., Result]


def bash(project: Path, command: str) -> dict[str, Any]:
    return {"cwd": str(project), "tool_name": "Bash", "tool_input": {"command": command}}


def test_the_sandbox_wrapper_is_read_through() -> None:
    prog = program(["automaton", "--sandbox", "--task", "t", "--", "env", "-C", "src", "rm", "x"])
    assert prog is not None
    assert (prog.name, prog.args, prog.chdir, prog.sandbox_tasks) == ("rm", ["x"], ["src"], ["t"])
    assert "automaton --sandbox" in prog.via
    inner = program(["python3", "-m", "automaton", "--sandbox", "--", "touch", "y"])
    assert inner is not None and (inner.name, inner.sandbox_tasks) == ("touch", [""])


@pytest.mark.parametrize("agent", ["claude", "codex", "gemini", "automaton", "/usr/bin/claude"])
def test_the_sandbox_wrapper_may_not_start_an_agent_session(agent: str) -> None:
    with pytest.raises(Unsafe, match="agent session"):
        program(["automaton", "--sandbox", "--", agent, "-p", "x"])


@pytest.mark.parametrize("command", [
    "automaton --sandbox -- sh -c 'echo x > .git/hooks/pre-commit'",
    "automaton --sandbox --task demo -- cp /tmp/x .claude/settings.json",
    "python3 -m automaton --sandbox -- tee .git/config",
])
def test_what_the_sandbox_runs_is_judged(task: Path, project: Path, hook: Hook, command: str) -> None:
    assert_denied(hook("claude", bash(project, command)))


def test_the_sandbox_in_another_task_is_denied(task: Path, project: Path, hook: Hook,
                                               make_task: Callable[..., Path]) -> None:
    make_task("other", "implement", focus=False)
    assert_denied(hook("claude", bash(project, "automaton --sandbox --task other -- make")), "--task other",
                  "(demo)")
    assert_allowed(hook("claude", bash(project, "automaton --sandbox --task demo -- make")))
    assert_denied(hook("claude", bash(project, "automaton --sandbox -- claude")), "agent session")


@pytest.mark.parametrize("command", [
    "automaton --create-loop l --from-template ci-triage",
    "automaton --install-schedule l",
    "automaton --rearm-loop l",
    "automaton --remove-loop l",
    "automaton --upgrade-loops --yes",
    "automaton --gc-worktrees --yes",
    "automaton --publish-caps --state-remote origin",
    ".venv/bin/automaton --project . --install-schedule l --interval 60",
    "python3 -m automaton --create-loop l --from-template t",
])
def test_widening_commands_are_human_acts(task: Path, project: Path, hook: Hook, command: str) -> None:
    assert_denied(hook("claude", bash(project, command)), "human act")
