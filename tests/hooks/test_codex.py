"""`automaton --hook codex`: apply_patch paths from the patch text, shell commands."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from automaton.hooks.codexpatch import patch_paths
from tests.hooks.conftest import assert_allowed, assert_denied


def payload(project: Path, tool: str, command: str) -> dict[str, Any]:
    """A Codex PreToolUse payload (apply_patch: raw patch in tool_input.command, PR #18391)."""
    return {"session_id": "s", "turn_id": "t", "transcript_path": None, "cwd": str(project),
            "hook_event_name": "PreToolUse", "model": "gpt-5-codex", "permission_mode": "default",
            "tool_name": tool, "tool_use_id": "call_1", "tool_input": {"command": command}}


def patch(*sections: str) -> str:
    return "*** Begin Patch\n" + "".join(sections) + "*** End Patch\n"


ADD_SPEC = "*** Add File: tasks/demo/SPEC.md\n+# Spec\n"
UPDATE_SRC = "*** Update File: src/app.py\n@@ def main():\n-    pass\n+    return 1\n"
DELETE_SRC = "*** Delete File: src/old.py\n"
MOVE = "*** Update File: src/a.py\n*** Move to: src/b.py\n@@\n-x\n+y\n"


def test_patch_paths_reads_every_header() -> None:
    text = patch(ADD_SPEC, UPDATE_SRC, DELETE_SRC, MOVE)
    assert patch_paths(text) == ["tasks/demo/SPEC.md", "src/app.py", "src/old.py", "src/a.py", "src/b.py"]


def test_add_in_scope_allowed(project: Path, make_task: Callable[..., Path], hook: Any) -> None:
    make_task("demo", "research")
    assert_allowed(hook("codex", payload(project, "apply_patch", patch(ADD_SPEC))))


@pytest.mark.parametrize("section, needle", [
    (UPDATE_SRC, "src/app.py"),
    (DELETE_SRC, "src/old.py"),
    ("*** Add File: tasks/demo/DESIGN.md\n+x\n", "tasks/demo/DESIGN.md"),
])
def test_out_of_scope_denied(project: Path, make_task: Callable[..., Path], hook: Any, section: str,
                             needle: str) -> None:
    make_task("demo", "research")
    result = hook("codex", payload(project, "apply_patch", patch(ADD_SPEC, section)))
    assert_denied(result, "apply_patch:", needle, "outside the scope of task demo at phase 'research'")


def test_move_checks_source_and_destination(project: Path, make_task: Callable[..., Path], hook: Any) -> None:
    make_task("demo", "implement")
    assert_allowed(hook("codex", payload(project, "apply_patch", patch(MOVE))))
    into_task = "*** Update File: src/a.py\n*** Move to: tasks/demo/.state\n@@\n-x\n+y\n"
    assert_denied(hook("codex", payload(project, "apply_patch", patch(into_task))), "tasks/demo/.state")
    out_of_task = "*** Update File: tasks/demo/SPEC.md\n*** Move to: src/spec.md\n@@\n-x\n+y\n"
    assert_denied(hook("codex", payload(project, "apply_patch", patch(out_of_task))), "tasks/demo/SPEC.md")


def test_absolute_and_dotdot_paths(project: Path, make_task: Callable[..., Path], hook: Any) -> None:
    make_task("demo", "implement")
    absolute = f"*** Add File: {project}/src/new.py\n+x\n"
    assert_allowed(hook("codex", payload(project, "apply_patch", patch(absolute))))
    escape = "*** Add File: src/../../evil.py\n+x\n"
    assert_denied(hook("codex", payload(project, "apply_patch", patch(escape))), "outside the project")


def test_patch_without_files_is_denied(project: Path, hook: Any) -> None:
    assert_denied(hook("codex", payload(project, "apply_patch", "*** Begin Patch\n*** End Patch\n")),
                  "names no file")


def test_shell_commands(project: Path, make_task: Callable[..., Path], hook: Any) -> None:
    make_task("demo", "research")
    assert_allowed(hook("codex", payload(project, "Bash", "automaton --phase --task demo")))
    assert_denied(hook("codex", payload(project, "Bash", "automaton --approve --task demo")), "Bash:", "human acts")
    assert_denied(hook("codex", payload(project, "Bash", "touch src/x.py")), "src/x.py")
    heredoc_patch = "apply_patch <<'EOF'\n" + patch(UPDATE_SRC) + "EOF\n"
    assert_denied(hook("codex", payload(project, "Bash", heredoc_patch)), "src/app.py")


def test_shell_argv_list_is_accepted(project: Path, make_task: Callable[..., Path], hook: Any) -> None:
    make_task("demo", "research")
    data = payload(project, "Bash", "")
    data["tool_input"] = {"command": ["bash", "-lc", "ls"]}
    assert_allowed(hook("codex", data))


def test_unknown_tool_denied(project: Path, hook: Any) -> None:
    assert_denied(hook("codex", payload(project, "mcp__srv__write", "x")), "unknown tool")


def test_the_fake_payload_has_the_fields_of_a_recorded_real_one(project: Path) -> None:
    import json

    real = json.loads((Path(__file__).resolve().parents[1] / "e2e" / "recorded" / "codex-0.171.0"
                       / "pretooluse.json").read_text())
    fake = payload(project, "Bash", "echo hi")
    assert set(fake) == set(real) and set(fake["tool_input"]) == set(real["tool_input"])
    assert real["tool_name"] == "Bash"  # codex 0.171.0's exec_command reaches the hook as Bash
