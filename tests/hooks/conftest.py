"""Fixtures for hook tests: tasks at a given phase (created through the real CLI) and hook calls."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import Result, bring_task, run_cli


# The CLI steps that take a fresh task to each phase (artifacts written where a transition needs one).
def _ok(result: Result) -> Result:
    assert result.code == 0, result.err
    return result


@pytest.fixture
def make_task(project: Path, approver: str) -> Callable[..., Path]:
    """make_task(name, phase, focus=True): create a task via the CLI, bring it to `phase`."""

    def make(name: str = "demo", phase: str = "research", focus: bool = True) -> Path:
        return bring_task(project, name, phase, focus)

    return make


@pytest.fixture
def task(make_task: Callable[..., Path], project: Path) -> Path:
    """Task `demo` at implement, focused, in a project with `src/app.py`."""
    (project / "src").mkdir()
    (project / "src/app.py").write_text("x = 1\n")
    return make_task("demo", "implement")


@pytest.fixture
def hook(project: Path) -> Callable[..., Result]:
    """hook(agent, payload, project=None): run `automaton --hook AGENT` in-process with `payload`."""

    def call(agent: str, payload: dict[str, Any] | str, root: Path | None = None) -> Result:
        text = payload if isinstance(payload, str) else json.dumps(payload)
        return run_cli("--hook", agent, "--project", str(root or project), stdin=text)

    return call


def assert_allowed(result: Result) -> None:
    assert (result.code, result.out, result.err) == (0, "", ""), result.err


def assert_denied(result: Result, *needles: str) -> None:
    assert result.code == 2, (result.code, result.err)
    assert result.out == ""
    lines = result.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("automaton denied this tool call: "), result.err
    for needle in needles:
        assert needle in result.err, (needle, result.err)
