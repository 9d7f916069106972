"""Build loops for runner tests: a project-local template, scripted or command harness."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from automaton.commands.loops import create_loop
from automaton.store import loops as store
from automaton.store.layout import Project
from tests.helpers import approve_first


def loop_json(**over: Any) -> dict[str, Any]:
    """A valid loop.json (scripted harness, verify by summary line) with `over` merged in."""
    base: dict[str, Any] = {
        "schema_version": 1, "name": "x", "template": "t", "description": "test loop", "task": None,
        "harness": {"name": "scripted", "model": None, "args": ["script.json"], "timeout_s": 60},
        "roles": {"implement": {"prompt": "implement.md"},
                  "verify": {"command": ["python", "verify.py"], "score": "summary"},
                  "orchestrate": {"builtin": True}},
        "brakes": {"max_iterations": 10, "max_budget_usd": 5.0, "max_tick_usd": 1.0,
                   "score_plateau_window": 3, "plateau_epsilon": 0.0, "target_score": 1.0},
        "blast_radius": {"use_worktree": True, "file_scope": ["src/**", "tests/**"], "base_branch": None},
        "schedule": {"interval_seconds": 900},
    }
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            base[key] = {**base[key], **value}
        else:
            base[key] = value
    return base


def make_loop(root: Path, name: str = "demo", *, script: dict[str, Any] | None = None,
              extra_files: dict[str, str] | None = None, template_files: dict[str, str] | None = None,
              approve: bool = True, **over: Any) -> Project:
    """Create loop `name` in the project at `root` through commands.loops.create_loop; with
    `approve` a human gives it its first approval (else it stays halted first_approval)."""
    project = Project(root.resolve())
    tpl = project.dot / "templates" / "loops" / f"tpl-{name}"
    tpl.mkdir(parents=True, exist_ok=True)
    (tpl / "loop.json").write_text(json.dumps(loop_json(**over)))
    (tpl / "implement.md").write_text("Make the tests pass.\n")
    for rel, text in (template_files or {}).items():
        (tpl / rel).write_text(text)
    out = create_loop(project, name, f"tpl-{name}")
    assert out.ok, out.lines
    if approve:  # a project template's loop waits for a human's first approval
        approve_first(root, name)
    loop_dir = project.loop_dir(store.require_tracked(project, name))
    (loop_dir / "script.json").write_text(json.dumps(script or {"implement": []}))
    for rel, text in (extra_files or {}).items():
        (loop_dir / rel).write_text(text)
    return project
