"""`--install-prompts`: where each agent finds them, idempotence, users' files kept."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from automaton.commands.prompts import PROMPTS, sealed_by_us
from tests.helpers import run_cli


def install(project: Path, agent: str) -> dict[str, list[str]]:
    result = run_cli("--install-prompts", agent, "--project", str(project), "--json")
    assert result.code == 0, result.err
    data: dict[str, list[str]] = result.json
    return data


def test_claude_commands(project: Path) -> None:
    data = install(project, "claude")
    assert len(data["written"]) == len(PROMPTS)
    text = (project / ".claude/commands/automaton-research.md").read_text()
    assert text.startswith("---\ndescription: ")
    assert "Read `tasks/$ARGUMENTS/.state`" in text and "{task}" not in text
    assert sealed_by_us(text)
    assert (project / ".claude/commands/automaton-adversarial-bug-find.md").is_file()


def test_codex_skills(project: Path) -> None:
    install(project, "codex")
    text = (project / ".agents/skills/automaton-implement/SKILL.md").read_text()
    assert text.startswith("---\nname: automaton-implement\ndescription: ")
    assert "If the phase is not `implement`, STOP" in text


def test_gemini_commands_are_valid_toml(project: Path) -> None:
    install(project, "gemini")
    for name in PROMPTS:
        data = tomllib.loads((project / f".gemini/commands/automaton/{name}.toml").read_text())
        assert set(data) == {"description", "prompt"}
        assert "{task}" not in data["prompt"]
    doc = tomllib.loads((project / ".gemini/commands/automaton/design.toml").read_text())
    assert "tasks/{{args}}/.state" in doc["prompt"]


@pytest.mark.parametrize("agent", ["claude", "codex", "gemini"])
def test_twice_is_once(project: Path, agent: str) -> None:
    install(project, agent)
    again = install(project, agent)
    assert again["written"] == [] and len(again["unchanged"]) == len(PROMPTS)


def test_users_changes_are_kept_and_reported(project: Path) -> None:
    install(project, "claude")
    mine = project / ".claude/commands/automaton-design.md"
    mine.write_text("my own design command\n")
    result = run_cli("--install-prompts", "claude", "--project", str(project), "--json")
    assert result.code == 0
    assert result.json["skipped"] == [".claude/commands/automaton-design.md"]
    assert "automaton-design.md differs from the shipped prompt" in result.err
    assert mine.read_text() == "my own design command\n"


def test_stale_copy_written_by_automaton_is_updated(project: Path) -> None:
    install(project, "claude")
    path = project / ".claude/commands/automaton-referee.md"
    fresh = path.read_text()
    import hashlib

    old_body = "---\ndescription: old\n---\nold text\n"
    seal = hashlib.sha256(old_body.encode()).hexdigest()
    path.write_text(old_body + f"\n<!-- automaton-prompt sha256={seal} -->\n")
    data = install(project, "claude")
    assert data["written"] == [".claude/commands/automaton-referee.md"]
    assert path.read_text() == fresh


def test_unknown_agent(project: Path) -> None:
    result = run_cli("--install-prompts", "cursor", "--project", str(project))
    assert result.code == 2 and "claude, codex or gemini" in result.err
