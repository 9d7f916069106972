"""The sealed `hooks.allow_tools` of `.automaton/config.json`: tools the hook cannot read (MCP
tools, SlashCommand) pass only when a human sealed a pattern naming them."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from automaton.core.errors import BadInput
from automaton.store import project_config as pc
from automaton.store.layout import Project
from tests.helpers import Result, run_cli
from tests.hooks.conftest import assert_allowed, assert_denied


def call(project: Path, tool: str, agent_input: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"session_id": "s", "cwd": str(project), "hook_event_name": "PreToolUse", "tool_name": tool,
            "tool_input": agent_input or {"owner": "o", "repo": "r"}}


def seal(project: Path, obj: dict[str, Any]) -> None:
    (project / ".automaton").mkdir(exist_ok=True)
    (project / ".automaton" / "config.json").write_text(json.dumps({"schema_version": 1, **obj}) + "\n")
    done = run_cli("--approve", "--config", "--yes", cwd=project, human=True)
    assert done.code == 0, done.err


@pytest.fixture
def allowed(project: Path) -> Path:
    seal(project, {"hooks": {"allow_tools": ["mcp__github__get_*", "SlashCommand"]}})
    return project


@pytest.mark.parametrize("tool", ["mcp__github__get_issue", "mcp__github__get_file_contents", "SlashCommand"])
def test_a_sealed_pattern_lets_its_tools_through(allowed: Path, hook: Callable[..., Result], tool: str) -> None:
    assert_allowed(hook("claude", call(allowed, tool)))


@pytest.mark.parametrize("tool", ["mcp__github__create_issue", "mcp__gitlab__get_issue", "slashcommand",
                                  "mcp__github__get"])
def test_other_tools_stay_denied(allowed: Path, hook: Callable[..., Result], tool: str) -> None:
    assert_denied(hook("claude", call(allowed, tool)), f"unknown tool {tool!r}")


def test_without_a_list_the_denial_says_how_a_human_allows_it(project: Path, hook: Callable[..., Result]) -> None:
    got = hook("claude", call(project, "mcp__github__get_issue"))
    assert_denied(got, "unknown tool 'mcp__github__get_issue'", '"mcp__github__*"', "allow_tools",
                  "automaton --approve --config")


def test_codex_mcp_tools_use_the_same_list(allowed: Path, hook: Callable[..., Result]) -> None:
    assert_allowed(hook("codex", call(allowed, "mcp__github__get_issue")))
    assert_denied(hook("codex", call(allowed, "mcp__github__push")), "unknown tool")


def test_a_list_the_agent_widened_lets_nothing_through(allowed: Path, hook: Callable[..., Result]) -> None:
    path = allowed / ".automaton" / "config.json"
    path.write_text(json.dumps({"schema_version": 1, "hooks": {"allow_tools": ["mcp__*"]}}) + "\n")
    for tool in ("mcp__github__get_issue", "mcp__fs__write"):
        assert_denied(hook("claude", call(allowed, tool)), "automaton --approve --config")


def test_the_list_never_reaches_the_tools_the_hook_reads(allowed: Path, hook: Callable[..., Result]) -> None:
    seal(allowed, {"hooks": {"allow_tools": ["Write", "Bash", "ScheduleWakeup", "mcp__github__get_*"]}})
    target = str(allowed / ".automaton" / "focus")
    assert_denied(hook("claude", call(allowed, "Write", {"file_path": target, "content": "x"})), ".automaton/")
    assert_denied(hook("claude", call(allowed, "ScheduleWakeup", {"prompt": "x"})), "schedules a prompt")


@pytest.mark.parametrize(("hooks", "says"), [
    ({"allow_tools": ["*"]}, "would allow every tool"),
    ({"allow_tools": ["?*"]}, "would allow every tool"),
    ({"allow_tools": "mcp__x"}, "must be a list"),
    ({"allow_tools": ["mcp x"]}, "a tool name or a pattern"),
    ({"allow_tools": [3]}, "a tool name or a pattern"),
    ({"deny_tools": []}, "unknown key(s) deny_tools"),
    (["mcp__x"], "'hooks' must be an object"),
])
def test_a_bad_list_is_named_and_never_sealed(project: Path, hooks: object, says: str) -> None:
    (project / ".automaton").mkdir()
    (project / ".automaton" / "config.json").write_text(json.dumps({"schema_version": 1, "hooks": hooks}))
    with pytest.raises(BadInput, match=r"config\.json") as err:
        pc.parse((project / ".automaton" / "config.json").read_bytes(), project / ".automaton" / "config.json")
    assert says in err.value.message
    done = run_cli("--approve", "--config", "--yes", cwd=project, human=True)
    assert done.code == 2 and says in done.err and len(done.err.splitlines()) == 1


def test_allow_tools_reads_the_sealed_list(allowed: Path) -> None:
    assert pc.allow_tools(Project(allowed)) == ("mcp__github__get_*", "SlashCommand")
    assert pc.allowed_tool(Project(allowed), "mcp__github__get_me") == "mcp__github__get_*"
    assert pc.allowed_tool(Project(allowed), "Mcp__github__get_me") is None


def _allow_finding(project: Path) -> dict[str, Any]:
    done = run_cli("--doctor", "--project", str(project), "--json")
    [found] = [f for f in done.json["findings"] if f["check"] == "allow-tools"]
    return dict(found)


def test_doctor_shows_the_sealed_list(allowed: Path) -> None:
    found = _allow_finding(allowed)
    assert found["level"] == "note" and "mcp__github__get_*, SlashCommand" in found["message"]


def test_doctor_says_every_unreadable_tool_is_denied_without_a_list(project: Path) -> None:
    assert "are all denied" in _allow_finding(project)["message"]
