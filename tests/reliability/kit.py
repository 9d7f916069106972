"""Shared helpers of the reliability suite: projects with a task and a loop, file checks."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from automaton.commands.tasks import create_task, transition
from automaton.core.chain import verify_text
from automaton.store import loops as store
from automaton.store.key import load_key
from automaton.store.layout import Project
from tests.runner.loopkit import make_loop

PY = sys.executable
LOOP = "lp"
TASK = "t1"
# Brakes that never stop a test on their own: the suite counts writes, not budgets.
WIDE = {"max_iterations": 100_000, "max_budget_usd": 100_000.0, "max_tick_usd": 0.5}  # the upper bounds


def agent_script(record: Path, body: str = "print('done')") -> list[str]:
    """argv of a fake agent that appends one line to `record` whenever it starts."""
    code = f"import pathlib\nwith open({str(record)!r}, 'a') as f: f.write('ran\\n')\n{body}\n"
    return [PY, "-c", code]


def agent_runs(record: Path) -> int:
    try:
        return len(record.read_text().splitlines())
    except FileNotFoundError:
        return 0


def setup_project(root: Path, record: Path, *, bound: bool = True, **over: Any) -> Project:
    """A git project with task t1 at `research` (SPEC.md written) and loop lp (command harness
    running a recording fake agent, verify by summary line), bound to t1 when `bound`."""
    project = Project(root.resolve())
    assert create_task(project, TASK).ok
    assert transition(project, TASK, "research").ok
    (project.tasks_dir / TASK / "SPEC.md").write_text("# spec\n")
    opts: dict[str, Any] = {
        "harness": {"name": "command", "command": agent_script(record), "args": [], "timeout_s": 30},
        "roles": {"implement": {"prompt": "implement.md"},
                  "verify": {"command": [PY, "-c", "print('1 passed')"], "score": "summary"},
                  "orchestrate": {"builtin": True}},
        "brakes": dict(WIDE),
        "task": TASK if bound else None,
        # The fake agent counts its runs in `record`, outside the worktree: these suites test
        # state files and races, not the sandbox (tests/redteam/test_sandbox_attacks.py does).
        "sandbox": "off",
    }
    opts.update(over)
    make_loop(project.root, LOOP, **opts)
    return project


def loop_dir(project: Project) -> Path:
    return project.loop_dir(store.require_tracked(project, LOOP))


def leftovers(root: Path) -> list[Path]:
    """Temp files (`*.tmp`) anywhere under the project's automaton folders."""
    found: list[Path] = []
    for top in (root / "tasks", root / ".automaton"):
        if top.is_dir():
            found += [p for p in top.rglob("*.tmp") if "worktree" not in p.parts]
    return found


def chain_ok(log: Path) -> list[str]:
    """The log's lines after asserting the whole chain verifies."""
    text = log.read_text(encoding="utf-8")
    check = verify_text(text, load_key(create=False))
    assert check.ok, f"{log}: {check.error}"
    return text.splitlines()


def loop_state_file(project: Project) -> dict[str, Any]:
    return dict(json.loads((loop_dir(project) / store.STATE_FILE).read_text()))
