"""Fixtures for the adversarial suite: a task at a phase, a loop with a live worktree, hook calls.

Every attempt drives the REAL entry points: `automaton --hook AGENT` with the agents' payload
shapes on stdin (in-process through `tests.helpers.run_cli`, a few as real subprocesses), the
CLI verbs, and the loop runner with a fake agent that attacks from inside its worktree.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from automaton.runner.tick import tick
from automaton.store import loops as store
from automaton.store.layout import Project
from tests.helpers import Result, bring_task, run_cli
from tests.runner.loopkit import make_loop

# CLI steps that take a fresh task to a phase (artifacts written where a transition needs one).
Looped = Callable[..., tuple[Project, Path]]


def ok(result: Result) -> Result:
    assert result.code == 0, (result.code, result.out, result.err)
    return result


@pytest.fixture
def make_task(project: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[..., Path]:
    """make_task(name, phase, focus=True): a task brought to `phase` by a human (AUTOMATON_APPROVER
    is set only while the human steps run, so the attacks themselves run without it)."""

    def make(name: str = "demo", phase: str = "implement", focus: bool = True) -> Path:
        with monkeypatch.context() as human:
            human.setenv("AUTOMATON_APPROVER", "alice")
            return bring_task(project, name, phase, focus)

    return make


def claude(cwd: Path, tool: str, tool_input: dict[str, Any]) -> dict[str, Any]:
    """A Claude Code PreToolUse payload (hooks.md "PreToolUse input")."""
    return {"session_id": "s1", "transcript_path": "/tmp/t.jsonl", "cwd": str(cwd), "permission_mode": "default",
            "hook_event_name": "PreToolUse", "tool_name": tool, "tool_input": tool_input, "tool_use_id": "toolu_1"}


def bash(cwd: Path, command: str) -> dict[str, Any]:
    return claude(cwd, "Bash", {"command": command, "description": "run it"})


def write(cwd: Path, path: str | Path) -> dict[str, Any]:
    return claude(cwd, "Write", {"file_path": str(path), "content": "pwned\n"})


@pytest.fixture
def hook(project: Path) -> Callable[..., Result]:
    """hook(payload, agent="claude"): `automaton --hook AGENT --project P` in-process, payload on stdin."""

    def call(payload: dict[str, Any] | str, agent: str = "claude") -> Result:
        text = payload if isinstance(payload, str) else json.dumps(payload)
        return run_cli("--hook", agent, "--project", str(project), stdin=text)

    return call


def denied(result: Result, *needles: str) -> None:
    """The hook blocked the call: exit 2, nothing on stdout, one reason line on stderr."""
    assert result.code == 2, (result.code, result.out, result.err)
    assert result.out == ""
    lines = result.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("automaton denied this tool call: "), result.err
    for needle in needles:
        assert needle in result.err, (needle, result.err)


def allowed(result: Result) -> None:
    assert (result.code, result.out, result.err) == (0, "", ""), result.err


@pytest.fixture
def looped(project: Path) -> Looped:
    """looped(**loop_json_overrides): a loop `demo` after one harmless tick, so its worktree exists.

    Returns (project, worktree path). The default harness is `scripted` with an empty script.
    """

    def make(**over: Any) -> tuple[Project, Path]:
        over.setdefault("roles", {"implement": {"prompt": "implement.md"},
                                  "verify": {"command": [sys.executable, "-c", "print('1 passed, 1 failed')"],
                                             "score": "summary"},
                                  "orchestrate": {"builtin": True}})
        proj = make_loop(project, **over)
        out = tick(proj, "demo")
        assert out.code == 0 and out.data is not None and out.data["ran"], out.lines
        return proj, Path(store.read_state(proj, "demo").worktree_path)

    return make


def loop_dir(proj: Project, name: str = "demo") -> Path:
    return proj.loops_dir / name


def gate(proj: Project, name: str = "demo") -> Result:
    """`automaton --check-gate NAME --json` through the CLI."""
    return run_cli("--check-gate", name, "--project", str(proj.root), "--json")


def log_events(proj: Project, name: str = "demo") -> list[str]:
    return [line.split(" ")[1] for line in (loop_dir(proj, name) / ".state.log").read_text().splitlines()]
