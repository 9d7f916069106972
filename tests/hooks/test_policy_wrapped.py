"""`hooks.policy.wrapped_reason`: a shell line denied for what it runs, not what it names.

An `automaton --sandbox --task T` wrapper must name the task the session is judged under (an
agent may not choose its own scope), and inline interpreter code that may write anything is
allowed only where the scope lets the call write the whole project."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from automaton.hooks import policy
from automaton.store.layout import Project
from tests.helpers import seed_task

INLINE = ["python3 -c 'open(\"x\", \"w\")'"]


def test_a_sandbox_wrapper_must_name_the_sessions_task(project: Path, make_task: Callable[..., Path],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    proj = Project(project.resolve())
    make_task("demo", "implement", focus=False)
    make_task("other", "implement", focus=False)
    monkeypatch.setenv("AUTOMATON_TASK", "demo")
    assert policy.wrapped_reason(proj, project, ["demo"], []) is None
    assert policy.wrapped_reason(proj, project, [], []) is None
    assert policy.wrapped_reason(proj, project, ["other"], []) == (
        "automaton --sandbox --task other would run in the scope of a task other than this session's (demo):"
        " an agent may not choose its own scope")
    assert policy.wrapped_reason(proj, project, ["demo", "other"], []) is not None  # every wrapper counts


def test_a_sandbox_wrapper_without_a_task_in_force_is_denied(project: Path, make_task: Callable[..., Path]) -> None:
    proj = Project(project.resolve())
    make_task("demo", "implement", focus=False)
    why = policy.wrapped_reason(proj, project, ["demo"], [])
    assert why is not None and "than this session's (no task)" in why


def test_inline_code_is_allowed_only_where_the_whole_project_is_in_scope(
        project: Path, make_task: Callable[..., Path], monkeypatch: pytest.MonkeyPatch) -> None:
    proj = Project(project.resolve())
    make_task("demo", "implement", focus=False)
    make_task("early", "research", focus=False)
    monkeypatch.setenv("AUTOMATON_TASK", "demo")
    assert policy.wrapped_reason(proj, project, [], INLINE) is None  # implement: anything outside tasks/
    monkeypatch.setenv("AUTOMATON_TASK", "early")
    assert policy.wrapped_reason(proj, project, [], INLINE) == (
        f"{INLINE[0]} can write any file, and this scope does not allow writing the whole project:"
        " write files with the edit tools, or have a human run the agent as"
        " `automaton --sandbox -- <agent>`, where the kernel holds the scope")
    assert policy.wrapped_reason(proj, project, [], [*INLINE, "node -e 'x'"]) is not None


def test_inline_code_probes_the_project_root_not_the_cwd(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """At doc_review only docs/ and *.md are in scope: run from docs/, inline code would still
    write outside it, so the probes stand at the project root, not at the cwd."""
    proj = Project(project.resolve())
    seed_task(project, "rev", "doc_review")
    monkeypatch.setenv("AUTOMATON_TASK", "rev")
    (project / "docs").mkdir(exist_ok=True)
    assert policy.check(proj, project / "docs", ["automaton-inline-code-probe"]).allowed  # docs/ is in scope
    assert policy.wrapped_reason(proj, project / "docs", [], INLINE) is not None
