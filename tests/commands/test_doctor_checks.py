"""The agent hooks' liveness in `--audit` and `--doctor`: a hook removed or switched off is a
violation (audit) and a problem (doctor), in the project's and the user's settings."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from automaton.commands.doctor_checks import hook_findings
from automaton.store.layout import Project
from tests.helpers import run_cli


def install(project: Path, agent: str) -> None:
    result = run_cli("--install-hooks", agent, "--project", str(project))
    assert result.code == 0, result.err


def edit_json(path: Path, change: dict[str, object]) -> None:
    data = json.loads(path.read_text()) if path.exists() else {}
    data.update(change)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


@pytest.mark.parametrize("agent", ["claude", "codex", "gemini"])
def test_a_freshly_installed_hook_is_alive(project: Path, agent: str) -> None:
    install(project, agent)
    assert hook_findings(Project.at(str(project))) == []
    assert run_cli("--audit", "--project", str(project)).code == 0


def test_no_agent_folder_no_finding(project: Path) -> None:
    assert hook_findings(Project.at(str(project))) == []


@pytest.mark.parametrize(("rel", "change", "needle"), [
    (".claude/settings.json", {"disableAllHooks": True}, "disableAllHooks"),
    (".claude/settings.local.json", {"disableAllHooks": True}, "disableAllHooks"),
    ("~/.claude/settings.json", {"disableAllHooks": True}, "disableAllHooks"),
    (".claude/settings.json", {"hooks": {}}, "hook is missing"),
])
def test_claude_kill_switches_and_a_removed_hook(project: Path, rel: str, change: dict[str, object],
                                                 needle: str) -> None:
    install(project, "claude")
    edit_json(Path(os.path.expanduser(rel)) if rel.startswith("~") else project / rel, change)
    found = hook_findings(Project.at(str(project)))
    assert any(needle in line for line in found), found
    audit = run_cli("--audit", "--project", str(project))
    assert audit.code == 1 and "VIOLATION" in audit.out and needle in audit.out
    doctor = run_cli("--doctor", "--project", str(project))
    assert needle in doctor.out and "PROBLEM" in doctor.out


def test_a_narrowed_matcher_or_another_project_is_a_dead_hook(project: Path, tmp_path: Path) -> None:
    install(project, "claude")
    path = project / ".claude/settings.json"
    data = json.loads(path.read_text())
    data["hooks"]["PreToolUse"][-1]["matcher"] = "Read"
    path.write_text(json.dumps(data))
    assert any("missing" in line for line in hook_findings(Project.at(str(project))))
    data["hooks"]["PreToolUse"][-1]["matcher"] = "*"
    handler = data["hooks"]["PreToolUse"][-1]["hooks"][0]
    handler["command"] = handler["command"].replace(str(project), str(tmp_path))
    path.write_text(json.dumps(data))
    assert any("missing" in line for line in hook_findings(Project.at(str(project))))


@pytest.mark.parametrize("change", [
    {"hooksConfig": {"enabled": False}}, {"hooks": {"enabled": False}}, {"tools": {"enableHooks": False}},
    {"hooksConfig": {"disabled": ["automaton"]}},
])
def test_gemini_kill_switches(project: Path, change: dict[str, object]) -> None:
    install(project, "gemini")
    edit_json(project / ".gemini/settings.json", change)
    found = hook_findings(Project.at(str(project)))
    assert any("switches automaton's gemini hook off" in line or "missing" in line for line in found), found


@pytest.mark.parametrize("where", [".codex/config.toml", "~/.codex/config.toml"])
def test_codex_kill_switch(project: Path, where: str) -> None:
    install(project, "codex")
    path = Path(os.path.expanduser(where)) if where.startswith("~") else project / where
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("[features]\nhooks = false\n")
    assert any("[features] hooks = false" in line for line in hook_findings(Project.at(str(project))))


@pytest.mark.timeout(30)
def test_a_fifo_settings_file_is_a_finding_not_a_hang(project: Path) -> None:
    install(project, "claude")
    os.mkfifo(project / ".claude/settings.local.json")
    found = hook_findings(Project.at(str(project)))
    assert any("settings.local.json" in line and "cannot read" in line for line in found), found


@pytest.mark.parametrize("rel", [".claude/settings.json", ".claude/settings.local.json", ".gemini/settings.json",
                                 ".codex/config.toml", ".codex/hooks.json"])
def test_the_hook_denies_writing_its_settings(project: Path, rel: str) -> None:
    payload = json.dumps({"cwd": str(project), "tool_name": "Write",
                          "tool_input": {"file_path": str(project / rel), "content": "{}"}})
    result = run_cli("--hook", "claude", "--project", str(project), stdin=payload)
    assert result.code == 2 and rel in result.err


def test_doctor_warns_when_file_scope_opens_collected_tests_that_are_not_protected(project: Path) -> None:
    from automaton.commands.doctor_checks import collection_check
    from automaton.core.loopconfig import parse_config
    from automaton.store.config import loop_defaults
    from tests.helpers import git
    from tests.runner.loopkit import loop_json

    (project / "tests").mkdir()
    (project / "tests" / "test_a.py").write_text("def test_a():\n    pass\n")
    (project / "src").mkdir()
    (project / "src" / "a.py").write_text("")
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "tests")
    from automaton.core.loopstate import initial_state

    state = initial_state("demo", None, "a" * 64, "2026-12-01T00:00:00Z")  # no base_commit yet
    pytest_verify = {"command": ["python", "-m", "pytest", "-q"], "score": "junit"}

    def finding(**blast: object) -> str | None:
        data = loop_json(roles={"implement": {"prompt": "implement.md"}, "verify": pytest_verify,
                                "orchestrate": {"builtin": True}}, blast_radius=blast)
        found = collection_check(Project.at(str(project)), "demo", parse_config(data, "loop.json", loop_defaults()),
                                 state)
        return None if found is None else found.line()

    assert finding() is None  # the defaults protect what pytest collects
    line = finding(protected=["pytest.ini"])
    assert line is not None and line.startswith("warning demo: file_scope lets the agent change test files")
    assert "tests/test_a.py" in line and "src/a.py" not in line
    assert finding(protected=["pytest.ini"], file_scope=["src/**"]) is None  # the agent cannot reach them
