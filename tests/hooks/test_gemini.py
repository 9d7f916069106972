"""`automaton --hook gemini`: BeforeTool payloads for write_file, replace and run_shell_command."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.hooks.conftest import assert_allowed, assert_denied


def payload(project: Path, tool: str, tool_input: dict[str, Any]) -> dict[str, Any]:
    """A Gemini CLI BeforeTool payload (docs/hooks/reference.md "Base input schema", "BeforeTool")."""
    return {"session_id": "s", "transcript_path": "/tmp/t.json", "cwd": str(project),
            "hook_event_name": "BeforeTool", "timestamp": "2026-01-01T00:00:00Z",
            "tool_name": tool, "tool_input": tool_input}


def test_write_file(project: Path, make_task: Callable[..., Path], hook: Any) -> None:
    make_task("demo", "research")
    spec = {"file_path": str(project / "tasks/demo/SPEC.md"), "content": "# spec"}
    assert_allowed(hook("gemini", payload(project, "write_file", spec)))
    result = hook("gemini", payload(project, "write_file", {"file_path": "src/main.py", "content": "x"}))
    assert_denied(result)
    assert result.err == ("automaton denied this tool call: write_file: src/main.py is outside the scope of"
                          " task demo at phase 'research'\n")


def test_replace(project: Path, make_task: Callable[..., Path], hook: Any) -> None:
    make_task("demo", "implement")
    edit = {"file_path": str(project / "src/main.py"), "old_string": "a", "new_string": "b"}
    assert_allowed(hook("gemini", payload(project, "replace", edit)))
    edit["file_path"] = str(project / "tasks/demo/SPEC.md")
    assert_denied(hook("gemini", payload(project, "replace", edit)), "replace:", "tasks/demo/SPEC.md")


def test_run_shell_command_in_dir_path(project: Path, make_task: Callable[..., Path], hook: Any) -> None:
    make_task("demo", "research")
    (project / "tasks/demo").mkdir(exist_ok=True)
    into_spec = {"command": "echo draft > SPEC.md", "dir_path": "tasks/demo"}
    assert_allowed(hook("gemini", payload(project, "run_shell_command", into_spec)))
    into_src = {"command": "echo x > SPEC.md", "dir_path": "src"}
    assert_denied(hook("gemini", payload(project, "run_shell_command", into_src)), "src/SPEC.md")
    approve = {"command": "npx automaton --approve --task demo"}
    assert_denied(hook("gemini", payload(project, "run_shell_command", approve)), "run_shell_command:")


def test_read_only_and_unknown_tools(project: Path, hook: Any) -> None:
    assert_allowed(hook("gemini", payload(project, "read_file", {"file_path": "tasks/demo/.state"})))
    assert_denied(hook("gemini", payload(project, "write_everything", {})), "unknown tool 'write_everything'")
    assert_denied(hook("gemini", payload(project, "write_file", {"content": "x"})), "no file_path")


def test_save_memory_outside_the_global_scope_writes_the_projects_gemini_md(
        project: Path, make_task: Callable[..., Path], hook: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    make_task("demo", "research")  # GEMINI.md at the root is outside the research scope
    for given in ({"fact": "tabs"}, {"fact": "tabs", "scope": "global"},
                  {"fact": "x", "modified_by_user": True, "modified_content": "y"}):
        assert_allowed(hook("gemini", payload(project, "save_memory", given)))
    for given in ({"fact": "x", "scope": "project"}, {"fact": "x", "scope": "workspace"}, {"fact": "x", "scope": None},
                  {"fact": "x", "scope": ["global"]}, {"fact": "x", "file": "src/a.py"}):
        assert_denied(hook("gemini", payload(project, "save_memory", given)), "save_memory:", "GEMINI.md")
    no_cwd = {k: v for k, v in payload(project, "save_memory", {"fact": "x", "scope": "project"}).items() if k != "cwd"}
    assert_denied(hook("gemini", no_cwd), "no cwd")
    make_task("impl", "implement", focus=False)  # an ordinary project file where edits are in scope
    monkeypatch.setenv("AUTOMATON_TASK", "impl")
    assert_allowed(hook("gemini", payload(project, "save_memory", {"fact": "x", "scope": "project"})))


def test_the_fake_payload_has_the_fields_of_a_recorded_real_one(project: Path) -> None:
    import json

    real = json.loads((Path(__file__).resolve().parents[1] / "e2e" / "recorded" / "gemini-0.61.0"
                       / "beforetool.json").read_text())
    fake = payload(project, "write_file", {"file_path": "src/b.py", "content": "y = 2\n"})
    assert set(fake) == set(real) and set(fake["tool_input"]) == set(real["tool_input"])
