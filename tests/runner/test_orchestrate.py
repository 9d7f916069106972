"""Step 7 with an orchestrate prompt: its JSON decision, and a task transition it asks for,
applied through the same enforced task API a human uses."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from automaton.commands import tasks
from automaton.runner.tick import tick
from automaton.store.layout import Project
from tests.runner.loopkit import make_loop

PY = sys.executable


def _task_at_implement(root: Path) -> Project:
    project = Project(root.resolve())
    tasks.create_task(project, "fix-login")
    tasks.transition(project, "fix-login", "research")
    (project.tasks_dir / "fix-login" / "SPEC.md").write_text("# spec\n")
    tasks.transition(project, "fix-login", "research:awaiting_approval")
    tasks.approve(project, "fix-login")
    tasks.transition(project, "fix-login", "implement")
    return project


def _loop(root: Path, decision: str) -> Project:
    step = {"text": f'Looks done.\n```json\n{decision}\n```', "cost_usd": 0.01}
    return make_loop(
        root, task="fix-login",
        script={"implement": [{"actions": [{"write": "src/a.py", "content": "a = 1\n"}], "cost_usd": 0.1}],
                "orchestrate": [step]},
        template_files={"orchestrate.md": "Decide.\n"},
        roles={"implement": {"prompt": "implement.md"},
               "verify": {"command": [PY, "-c", "print('1 failed, 1 passed')"], "score": "summary"},
               "orchestrate": {"builtin": False, "prompt": "orchestrate.md"}})


def _phase(project: Project) -> str:
    return (project.tasks_dir / "fix-login" / ".state").read_text().strip()


def test_orchestrator_transition_goes_through_the_task_rules(project: Path, approver: str) -> None:
    proj = _task_at_implement(project)
    _loop(project, '{"decision": "continue", "transition": "bug_find"}')
    out = tick(proj, "demo")
    assert out.code == 0 and out.data is not None
    # IMPLEMENTATION.md is missing in the task folder: the rule refuses, the loop goes on
    assert out.data["transition"]["result"].startswith("refused:")
    assert "IMPLEMENTATION.md" in out.data["transition"]["result"]
    assert _phase(proj) == "implement"


@pytest.mark.parametrize("decision, expect_phase, refused", [
    ('{"decision": "continue", "transition": "bug_find"}', "bug_find", False),
    ('{"decision": "continue", "transition": "complete"}', "implement", True),  # no such edge
])
def test_orchestrator_transition_applied_or_refused(project: Path, approver: str, decision: str,
                                                     expect_phase: str, refused: bool) -> None:
    proj = _task_at_implement(project)
    (proj.tasks_dir / "fix-login" / "IMPLEMENTATION.md").write_text("# done\n")
    _loop(project, decision)
    out = tick(proj, "demo")
    assert out.code == 0 and out.data is not None
    assert out.data["transition"]["result"].startswith("refused:") is refused
    assert _phase(proj) == expect_phase
    assert out.data["status"] == "running"  # decision continue


def test_orchestrator_decision_complete_completes_the_loop(project: Path, approver: str, tmp_path: Any) -> None:
    proj = _task_at_implement(project)
    _loop(project, '{"decision": "complete"}')
    out = tick(proj, "demo")
    assert out.data is not None and out.data["status"] == "complete" and out.data["transition"] is None
