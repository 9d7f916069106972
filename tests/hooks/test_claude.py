"""`automaton --hook claude`: real PreToolUse payload shapes, exact exit codes and output."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.shapes import fixture, shape
from tests.helpers import run_exe
from tests.hooks.conftest import assert_allowed, assert_denied


def payload(project: Path, tool: str, tool_input: dict[str, Any], cwd: Path | None = None) -> dict[str, Any]:
    """A PreToolUse payload as Claude Code sends it (hooks.md "PreToolUse input"; the fields of
    the real one recorded from Claude Code in tests/e2e/fixtures/claude-pretooluse.json)."""
    return {
        "session_id": "abc123", "transcript_path": "/tmp/t.jsonl", "cwd": str(cwd or project),
        "prompt_id": "5f0c1d2e-0000-4000-8000-000000000001", "permission_mode": "default",
        "effort": {"level": "medium"}, "hook_event_name": "PreToolUse", "tool_name": tool,
        "tool_input": tool_input, "tool_use_id": "toolu_01",
    }


def test_the_fake_payload_has_the_recorded_real_payloads_fields() -> None:
    """The fake above against a PreToolUse payload recorded from the real CLI (`make e2e` with
    AUTOMATON_E2E_RECORD=1 records it): same fields, same value shapes; a subagent's call adds
    `agent_id` and `agent_type`, and the tool inputs of Edit and Bash have the real fields."""
    real = fixture("claude-pretooluse.json")
    edit = {"file_path": "/p/src/a.py", "old_string": "a", "new_string": "b", "replace_all": False}
    assert shape(payload(Path("/p"), "Edit", edit)) == shape({**real["main"], "permission_mode": "default"})
    bash = {"command": "ls", "description": "list"}
    assert shape(payload(Path("/p"), "Bash", bash)) == shape(real["bash"])
    assert set(real["subagent"]) - set(real["main"]) == {"agent_id", "agent_type"}


def test_write_in_scope_is_allowed_silently(project: Path, make_task: Callable[..., Path], hook: Any) -> None:
    make_task("demo", "research")
    spec = project / "tasks/demo/SPEC.md"
    assert_allowed(hook("claude", payload(project, "Write", {"file_path": str(spec), "content": "x"})))


def test_write_out_of_scope_is_denied_with_reason(project: Path, make_task: Callable[..., Path], hook: Any) -> None:
    make_task("demo", "research")
    result = hook("claude", payload(project, "Write", {"file_path": str(project / "src/app.py"), "content": "x"}))
    assert_denied(result)
    assert result.err == (
        "automaton denied this tool call: Write: src/app.py is outside the scope of task demo"
        " at phase 'research'\n"
    )


def test_edit_relative_path_resolves_against_payload_cwd(project: Path, make_task: Callable[..., Path],
                                                          hook: Any) -> None:
    make_task("demo", "research")
    sub = project / "tasks" / "demo"
    edit = {"file_path": "SPEC.md", "old_string": "a", "new_string": "b", "replace_all": False}
    assert_allowed(hook("claude", payload(project, "Edit", edit, cwd=sub)))
    edit["file_path"] = "DESIGN.md"
    assert_denied(hook("claude", payload(project, "Edit", edit, cwd=sub)), "tasks/demo/DESIGN.md")


def test_multiedit_and_notebookedit(project: Path, make_task: Callable[..., Path], hook: Any) -> None:
    make_task("demo", "implement")
    multi = {"file_path": str(project / "src/a.py"), "edits": [{"old_string": "a", "new_string": "b"}]}
    assert_allowed(hook("claude", payload(project, "MultiEdit", multi)))
    notebook = {"notebook_path": str(project / "nb/analysis.ipynb"), "cell_id": "c1", "new_source": "x",
                "cell_type": "code", "edit_mode": "replace"}
    assert_allowed(hook("claude", payload(project, "NotebookEdit", notebook)))
    notebook["notebook_path"] = str(project / "tasks/demo/x.ipynb")
    assert_denied(hook("claude", payload(project, "NotebookEdit", notebook)), "NotebookEdit:", "tasks/demo/x.ipynb")


def test_dotdot_and_outside_project(project: Path, make_task: Callable[..., Path], hook: Any) -> None:
    make_task("demo", "research")
    ok = {"file_path": str(project / "src/../tasks/demo/SPEC.md"), "content": "x"}
    assert_allowed(hook("claude", payload(project, "Write", ok)))
    escape = {"file_path": "tasks/demo/../../../outside.txt", "content": "x"}
    assert_denied(hook("claude", payload(project, "Write", escape)), "outside the project")


def test_symlink_to_state_file_is_denied(project: Path, make_task: Callable[..., Path], hook: Any) -> None:
    folder = make_task("demo", "implement")
    (project / "src").mkdir()
    (project / "src" / "innocent.txt").symlink_to(folder / ".state")
    result = hook("claude", payload(project, "Write", {"file_path": str(project / "src/innocent.txt"), "content": "x"}))
    assert_denied(result, "tasks/demo/.state", ".state files are written only by the automaton CLI")
    (project / "link").symlink_to(folder)  # a symlinked folder resolves to the task folder
    assert_allowed(hook("claude", payload(project, "Write", {"file_path": str(project / "link/IMPLEMENTATION.md"),
                                                             "content": "x"})))


def test_automaton_dir_and_hook_config_always_denied(project: Path, make_task: Callable[..., Path],
                                                     hook: Any) -> None:
    make_task("demo", "implement")
    assert_denied(hook("claude", payload(project, "Write", {"file_path": str(project / ".automaton/focus"),
                                                            "content": "other"})), ".automaton/")
    assert_denied(hook("claude", payload(project, "Edit", {"file_path": str(project / ".claude/settings.json"),
                                                           "old_string": "a", "new_string": ""})),
                  "hook configuration")


def test_no_focus_only_always_denied_paths_apply(project: Path, make_task: Callable[..., Path], hook: Any) -> None:
    make_task("demo", "research", focus=False)
    assert_allowed(hook("claude", payload(project, "Write", {"file_path": str(project / "src/app.py"), "content": ""})))
    assert_denied(hook("claude", payload(project, "Write", {"file_path": str(project / "tasks/demo/.state"),
                                                            "content": "complete\n"})))


def test_automaton_task_env_overrides_focus(project: Path, make_task: Callable[..., Path], hook: Any,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    make_task("demo", "research")
    make_task("other", "implement", focus=False)
    write = payload(project, "Write", {"file_path": str(project / "src/app.py"), "content": ""})
    assert_denied(hook("claude", write))
    monkeypatch.setenv("AUTOMATON_TASK", "other")
    assert_allowed(hook("claude", write))


def test_read_only_tools_pass_and_unknown_tools_are_denied(project: Path, hook: Any) -> None:
    assert_allowed(hook("claude", payload(project, "Read", {"file_path": str(project / "tasks/x/.state")})))
    assert_allowed(hook("claude", payload(project, "Grep", {"pattern": "x"})))
    assert_denied(hook("claude", payload(project, "mcp__fs__write", {"path": "a"})), "unknown tool 'mcp__fs__write'")


@pytest.mark.parametrize("text, needle", [
    ("not json", "not JSON"),
    ("[1, 2]", "not a JSON object"),
    (json.dumps({"tool_input": {}}), "no tool_name"),
    (json.dumps({"tool_name": "Write", "tool_input": {"content": "x"}, "cwd": "/"}), "no file_path"),
    (json.dumps({"tool_name": "Write", "tool_input": {"file_path": "a"}, "cwd": "relative"}), "not an absolute"),
])
def test_invalid_payloads_are_denied(hook: Any, text: str, needle: str) -> None:
    assert_denied(hook("claude", text), needle)


@pytest.mark.parametrize("command", [
    "automaton --approve --task demo",
    "AUTOMATON_APPROVER=me python -m automaton --approve --task demo",
    "env X=1 /usr/local/bin/automaton --appr --loop nightly",
    "python ~/.automaton/scripts/status.py --focus demo",
    "echo done > tasks/demo/.state",
    "cp /tmp/x .automaton/loops/nightly/loop.json",
    "sed -i s/research/complete/ tasks/demo/.state",
    "echo hi > src/app.py",
    "cat > notes.txt <<'EOF'\nhello\nEOF",
    "ls | tee tasks/demo/DESIGN.md",
    'echo "unclosed',
])
def test_bash_denied(project: Path, make_task: Callable[..., Path], hook: Any, command: str) -> None:
    make_task("demo", "research")
    assert_denied(hook("claude", payload(project, "Bash", {"command": command, "description": "d"})), "Bash:")


@pytest.mark.parametrize("command", [
    "automaton --phase --task demo",
    "automaton --transition research:awaiting_approval --task demo",
    "cat tasks/demo/.state && git status",
    "pytest -q 2>/dev/null",
    "echo draft > tasks/demo/SPEC.md",
    "cat > tasks/demo/SPEC.md <<'EOF'\n# Spec \"quoted\n'unbalanced\nEOF",
])
def test_bash_allowed(project: Path, make_task: Callable[..., Path], hook: Any, command: str) -> None:
    make_task("demo", "research")
    assert_allowed(hook("claude", payload(project, "Bash", {"command": command, "description": "d"})))


def test_corrupt_state_blocks(project: Path, make_task: Callable[..., Path], hook: Any) -> None:
    folder = make_task("demo", "implement")
    (folder / ".state").write_text("garbage")
    result = hook("claude", payload(project, "Write", {"file_path": str(project / "src/a.py"), "content": ""}))
    assert_denied(result, ".state", "not a valid phase")


def test_unimportable_module_blocks(project: Path, make_task: Callable[..., Path], hook: Any,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    make_task("demo", "implement")
    import automaton.hooks

    monkeypatch.setitem(sys.modules, "automaton.hooks.policy", None)  # import raises ImportError
    monkeypatch.delattr(automaton.hooks, "policy", raising=False)
    result = hook("claude", payload(project, "Write", {"file_path": str(project / "src/a.py"), "content": ""}))
    assert_denied(result, "the hook failed (ModuleNotFoundError", "automaton.hooks.policy")


def test_real_subprocess_denies_and_allows(project: Path, make_task: Callable[..., Path]) -> None:
    make_task("demo", "research")
    env = {**os.environ}
    deny = payload(project, "Edit", {"file_path": str(project / "README.md"), "old_string": "s", "new_string": "t"})
    done = run_exe("automaton", "--hook", "claude", "--project", str(project), stdin=json.dumps(deny), env=env)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == ("automaton denied this tool call: Edit: README.md is outside the scope of task demo"
                           " at phase 'research'\n")
    allow = payload(project, "Write", {"file_path": str(project / "tasks/demo/SPEC.md"), "content": "x"})
    done = run_exe("automaton", "--hook", "claude", "--project", str(project), stdin=json.dumps(allow), env=env)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def test_real_subprocess_broken_state_still_blocks(project: Path, make_task: Callable[..., Path]) -> None:
    folder = make_task("demo", "implement")
    (folder / ".state").write_bytes(b"\xff\xfe")
    write = payload(project, "Write", {"file_path": str(project / "src/a.py"), "content": ""})
    done = run_exe("automaton", "--hook", "claude", "--project", str(project), stdin=json.dumps(write))
    assert done.returncode == 2 and done.stdout == "" and "not a valid phase" in done.stderr


def test_hook_path_imports_stay_light(project: Path, make_task: Callable[..., Path]) -> None:
    """The hook runs before every edit: no rich, no loop runner, no harnesses on its import path."""
    make_task("demo", "research")
    write = json.dumps(payload(project, "Write", {"file_path": str(project / "src/a.py"), "content": ""}))
    code = (
        "import io, sys; sys.stdin = io.StringIO(sys.argv[1]);"
        "from automaton.cli.main import main; rc = main(['--hook', 'claude', '--project', sys.argv[2]]);"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] == 'rich' or m.startswith("
        "('automaton.runner', 'automaton.harnesses', 'automaton.schedulers')));"
        "print(rc, heavy)"
    )
    import subprocess

    done = subprocess.run([sys.executable, "-c", code, write, str(project)], capture_output=True, text=True,
                          check=False)
    assert done.stdout.strip() == "2 []", done.stdout + done.stderr


@pytest.mark.parametrize("tool_input", [
    {"tool_name": "Read", "tool_input": {"file_path": "~/.config/automaton/key"}},
    {"tool_name": "Grep", "tool_input": {"pattern": "x", "path": "/root/.config/automaton"}},
    {"tool_name": "Bash", "tool_input": {"command": "cat $HOME/.config/automaton/key"}},
])
def test_the_key_folder_is_denied_even_to_read_tools(tmp_path: Path, tool_input: dict[str, Any]) -> None:
    from automaton.hooks import run

    payload = {"cwd": str(tmp_path), "hook_event_name": "PreToolUse", **tool_input}
    text = json.dumps(payload)
    escaped = run("claude", text.replace("/", "\\/"), str(tmp_path))  # JSON may escape every slash
    answer = run("claude", text, str(tmp_path))
    assert escaped.code == answer.code == 2 and "record key" in answer.message


@pytest.mark.parametrize("tool, tool_input", [
    ("ScheduleWakeup", {"delaySeconds": 60, "reason": "poll", "prompt": "<<autonomous-loop-dynamic>>"}),
    ("CronCreate", {"cron": "*/5 * * * *", "prompt": "keep going"}),
])
def test_tools_that_schedule_later_work_are_denied(project: Path, make_task: Callable[..., Path], hook: Any,
                                                   tool: str, tool_input: dict[str, Any]) -> None:
    """Claude Code 2.1.x offers ScheduleWakeup (a /loop wake-up) and CronCreate: a prompt the
    session runs later by itself, outside any tick. Both were allowed as read-only before."""
    make_task("demo", "implement")
    assert_denied(hook("claude", payload(project, tool, tool_input)), f"{tool} schedules a prompt",
                  "outside automaton's ticks")


@pytest.mark.parametrize("tool, tool_input", [
    ("Agent", {"description": "d", "prompt": "p", "subagent_type": "general-purpose"}),
    ("Skill", {"skill": "review"}), ("ToolSearch", {"query": "select:Read"}),
])
def test_subagents_skills_and_tool_search_pass(project: Path, make_task: Callable[..., Path], hook: Any,
                                               tool: str, tool_input: dict[str, Any]) -> None:
    make_task("demo", "implement")
    assert_allowed(hook("claude", payload(project, tool, tool_input)))
