"""Run a packaged loop template end to end: a small real project in git, the scripted harness as
the agent, the template's own verifier (ruff, mypy, pytest, pytest-cov of this Python)."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

from automaton.commands.loops import create_loop
from automaton.core.loopstate import LoopState, Verdict
from automaton.runner.tick import tick
from automaton.store import loops as store
from automaton.store.layout import Project, framework_home
from tests.helpers import approve_first, git

PY = sys.executable
PYPROJECT = '[tool.pytest.ini_options]\npythonpath = ["src"]\n\n[tool.ruff.lint]\nselect = ["F", "E"]\n'


def make_project(root: Path, files: dict[str, str]) -> Path:
    """A git repository at `root` (branch main) holding `files` and a pyproject.toml (src on
    the pytest path, ruff rules F and E), all in one commit."""
    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    for rel, text in {"pyproject.toml": PYPROJECT, **files}.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "sample project")
    return root


def steps(*ticks: list[dict[str, Any]]) -> dict[str, Any]:
    """A scripted-harness script: one implement step per tick, each with these actions."""
    return {"implement": [{"actions": acts, "text": "done", "cost_usd": 0.01} for acts in ticks]}


def loop_from(root: Path, template: str, script: dict[str, Any], variables: list[str] | None = None,
              name: str = "tpl", window: int = 2, protected: list[str] | None = None) -> Project:
    """Loop `name` made from the packaged `template` as shipped (verify command, file scope,
    protected paths, prompts), but with the scripted harness playing the agent and a plateau
    window of `window` scores, so that a hack the score sees halts within a few ticks (a
    project copy of the template: it waits for a first approval, which a human gives here).
    `protected`: replaces the template's `blast_radius.protected` (to reach a later layer)."""
    project = Project(root.resolve())
    copy = project.dot / "templates" / "loops" / template
    shutil.copytree(framework_home() / "templates" / "loops" / template, copy)
    doc = json.loads((copy / "loop.json").read_text())
    doc["harness"] = {"name": "scripted", "model": None, "args": ["script.json"], "timeout_s": 300}
    doc["brakes"]["score_plateau_window"] = window
    if protected is not None:
        doc["blast_radius"]["protected"] = protected
    (copy / "loop.json").write_text(json.dumps(doc))
    out = create_loop(project, name, template, variables=[f"python={PY}", *(variables or [])])
    assert out.ok, out.lines
    approve_first(root, name)
    loop_dir = project.loop_dir(store.require_tracked(project, name))
    (loop_dir / "script.json").write_text(json.dumps(script))
    return project


def run_ticks(project: Project, n: int, name: str = "tpl") -> LoopState:
    """Up to `n` ticks, stopping when the loop is no longer running; its state after."""
    for _ in range(n):
        out = tick(project, name)
        assert out.code in (0, 1), out.lines
        state = store.read_state(project, name)
        if state.status != "running":
            return state
    return store.read_state(project, name)


def verdict(state: LoopState) -> dict[str, Any]:
    """The state's last verdict as `.state.loop` holds it (score, passed, done, summary, source)."""
    found = state.last_verdict
    assert isinstance(found, Verdict), state
    return found.to_dict()
